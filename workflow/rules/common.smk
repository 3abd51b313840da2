"""Config, cohort and regions: read and checked here, once, before any job is planned."""

import atexit
import hashlib
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.settings.types import DeploymentMethod
from snakemake.utils import min_version, validate

from genomon_smk.plan import job_tier_use, panel_power, run_lock
from genomon_smk.plan.config_check import config_problems
from genomon_smk.plan.path_limits import path_problems
from genomon_smk.plan.reference import reference_files, reference_problems
from genomon_smk.plan.regions import make_regions
from genomon_smk.plan.rules import PRIORITIES
from genomon_smk.plan.samplesheet import (
    InputError,
    Lane,
    imported_name_warnings,
    load_cohort,
    load_schema,
)
from genomon_smk.plan.stage_plan import CohortShape, stage_table, stagger_delays
from genomon_smk.plan.storage_plan import (
    conversion_uses,
    file_bytes,
    over_capacity,
    parse_size,
    peaks,
    plan_table,
    sample_uses,
)
from genomon_smk.plan.tier_monitor import TierMonitor, leftover_report, write_leftovers
from genomon_smk.steps.fastq_split import chunk_name
from genomon_smk.steps.stage_reference import main as stage_main

min_version("9.0")

SCHEMAS = Path(workflow.basedir) / "schemas"

# The project's Python steps run with the interpreter that runs Snakemake (the .venv), whatever
# the shell's PATH holds; with --sdm conda, with the rule env's python and this checkout's package.
if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method:
    PYTHON = f"env PYTHONPATH={shlex.quote(str(Path(workflow.basedir).parent / 'src'))} python"
else:
    PYTHON = shlex.quote(sys.executable)

if not workflow.overwrite_configfiles:
    raise WorkflowError(
        "no config file given: run with --configfile FILE (config/config.yaml is a documented example)"
    )
CONFIG_FILE = Path(workflow.overwrite_configfiles[-1]).resolve()
CONFIG_DIR = CONFIG_FILE.parent

# Our own messages first (file, line, key, the key meant); Snakemake's validate then sets defaults.
CONFIG_PROBLEMS = config_problems(
    config,
    load_schema(str(SCHEMAS), "config"),
    [str(Path(path).resolve()) for path in workflow.overwrite_configfiles],
)
if CONFIG_PROBLEMS:
    raise WorkflowError("invalid config:\n" + "\n".join(CONFIG_PROBLEMS))
validate(config, SCHEMAS / "config.schema.yaml", set_default=True)
config["priorities"] = {**PRIORITIES, **config["priorities"]}


def config_path(value):
    """A path from the config: $VARs and ~ expanded, relative ones resolved against the config file's directory."""
    return str((CONFIG_DIR / os.path.expanduser(os.path.expandvars(value))).resolve())


REFERENCE = config_path(config["reference"])
OUTPUT_DIR = config_path(config["output_dir"])
LOG_DIR = f"{OUTPUT_DIR}/logs"
# What the reference pre-staging wrote: the files, sizes and checksums that jobs verify.
STAGED_MANIFEST = f"{OUTPUT_DIR}/reference/staged.json"
BENCH_DIR = f"{OUTPUT_DIR}/benchmarks"
# Paths a tool cannot take are refused here, before anything reads or writes them.
PATH_PROBLEMS = path_problems("output_dir", OUTPUT_DIR) + path_problems(
    "reference", REFERENCE
)
if PATH_PROBLEMS:
    raise WorkflowError("\n".join(PATH_PROBLEMS))

try:
    problems = reference_problems(REFERENCE)
    if problems:
        raise InputError("\n".join(problems))
    COHORT = load_cohort(
        str(SCHEMAS),
        samples=config_path(config["samples"]) if "samples" in config else None,
        pairs=config_path(config["pairs"]) if "pairs" in config else None,
        control_panels=config["control_panels"],
        panel_base=str(CONFIG_DIR),
        reference_fai=f"{REFERENCE}.fai",
        genomon_sample_sheet=(
            config_path(config["genomon_sample_sheet"])
            if "genomon_sample_sheet" in config
            else None
        ),
    )
    REGIONS = make_regions(
        f"{REFERENCE}.fai",
        config_path(config["regions"]["file"]) if config["regions"]["file"] else None,
        config["regions"]["max_length"],
        config["regions"]["pack_bp"],
    )
except (InputError, ValueError) as error:
    raise WorkflowError(f"invalid input ({CONFIG_FILE}):\n{error}") from None

SAMPLES = COHORT.samples
# Mapped by this run (from FASTQ, or from the reads of a [bam_tofastq] BAM); the others are
# [bam_import] samples, whose final BAM exists.
MAPPED_SAMPLES = COHORT.mapped_samples
IMPORTED_BAMS = COHORT.imported
# Genomon's [qc] section selects the samples whose QC runs (default: all); the checks made from
# the split's counts and the markdup metrics exist for mapped samples only.
QC_SAMPLES = COHORT.qc_samples if COHORT.qc_samples is not None else SAMPLES
MAPPED_QC_SAMPLES = [sample for sample in QC_SAMPLES if sample in MAPPED_SAMPLES]
PAIRS = {pair.tumor: pair for pair in COHORT.pairs}
if COHORT.sv_pairs and workflow.is_main_process:
    print(
        f"[sv_detection]: {len(COHORT.sv_pairs)} pair(s) read and checked; this version of "
        "genomon-smk has no SV stage yet, so they get no SV results (mutation calling follows "
        "[mutation_call] as usual)",
        file=sys.stderr,
    )
REGION_NAMES = [region.name for region in REGIONS]
# Reads without a position carry no mutations: the mutation stage skips the unmapped region.
MUTATION_REGIONS = {region.name: region for region in REGIONS if not region.is_unmapped}
CHUNKS = [chunk_name(i) for i in range(config["split"]["chunks"])]


# Storage tiers. Files that pass between jobs live on a tier with a path known when the
# workflow is planned (shared_tmp, cache, global); node_local exists only inside one job, so
# its path is handed to the job's shell and expanded there ($TMPDIR, $PJM_LOCALTMP, ...).
# A configured node_local or cache place with $VARIABLES is expanded by each job's shell.
EXPANDED_BY_JOB = {
    tier
    for tier in ("node_local", "cache")
    if "$" in (config["storage"]["paths"][tier] or "")
}


def tier_paths():
    paths = config["storage"]["paths"]
    under_run = f"{OUTPUT_DIR}/.tiers"
    return {
        "global": OUTPUT_DIR,
        "shared_tmp": (
            config_path(paths["shared_tmp"])
            if paths["shared_tmp"]
            else f"{under_run}/shared_tmp"
        ),
        "cache": paths["cache"] or f"{under_run}/cache",
        "node_local": paths["node_local"] or f"{under_run}/node_local",
    }


TIER_PATHS = tier_paths()
# Each tier's place as one word of a job's shell: double-quoted as given where the job's shell
# expands it, quoted literally everywhere else (spaces, quotes, `$` in a directory name).
TIER_WORDS = {
    tier: f'"{place}"' if tier in EXPANDED_BY_JOB else shlex.quote(place)
    for tier, place in TIER_PATHS.items()
}
TIER_PATH_PROBLEMS = [
    problem
    for tier in ("shared_tmp", "cache", "node_local")
    for problem in path_problems(
        f"storage.paths.{tier}", TIER_PATHS[tier], tier in EXPANDED_BY_JOB
    )
]
if TIER_PATH_PROBLEMS:
    raise WorkflowError("\n".join(TIER_PATH_PROBLEMS))
RULE_TIERS = config["storage"]["rules"]
for rule_name, roles in RULE_TIERS.items():
    if roles["output"] == "node_local":
        raise WorkflowError(
            f"config storage.rules.{rule_name}.output: node_local cannot hold files that another job reads "
            "(it exists on one node for one job); use shared_tmp, cache or global"
        )


def storage_plan():
    """Print the storage plan (main process only) and refuse one that exceeds a tier's capacity."""
    capacity = {
        tier: (parse_size(limit) if limit is not None else None)
        for tier, limit in config["storage"]["capacity"].items()
    }
    uses = []
    for sample in MAPPED_SAMPLES:
        # A [bam_tofastq] sample's FASTQ do not exist yet: its BAMs are about their size.
        reads = COHORT.bam_sources.get(sample) or [
            path for lane in COHORT.lanes[sample] for path in (lane.fq1, lane.fq2)
        ]
        uses += sample_uses(
            file_bytes(reads), len(CHUNKS), len(REGION_NAMES), RULE_TIERS
        )
        if sample in COHORT.bam_sources:
            uses += conversion_uses(file_bytes(reads), RULE_TIERS)
    peak = peaks(uses, file_bytes(reference_files(REFERENCE)))
    if workflow.is_main_process:
        print(plan_table(uses, peak, capacity, TIER_PATHS), file=sys.stderr)
    problems = over_capacity(peak, capacity)
    if problems:
        raise WorkflowError("\n".join(problems))


def tier_dir(rule_name, role="output"):
    """Where a rule's files of a role (output or temp) go, by the tier the config assigns."""
    return TIER_PATHS[RULE_TIERS[rule_name][role]]


def tier_file(rule_name, path):
    """A rule's output file on its output tier."""
    return os.path.join(tier_dir(rule_name), path)


try:
    storage_plan()
except ValueError as error:
    raise WorkflowError(f"config storage.capacity: {error}") from None

# Staggered start of pairs: seconds each sample's split waits (samples that do not wait left out).
STAGGER = {
    sample: delay
    for sample, delay in stagger_delays(
        [(pair.tumor, pair.normal) for pair in COHORT.pairs], config["stagger_minutes"]
    ).items()
    if sample in MAPPED_SAMPLES
}

# Genomon's stages and their job counts for the whole run (a dry run runs no hooks: printed here).
if workflow.is_main_process:
    print(
        stage_table(
            CohortShape(
                len(MAPPED_SAMPLES),
                len(PAIRS),
                len(CHUNKS),
                len(REGION_NAMES),
                len(MUTATION_REGIONS),
                len(STAGGER),
                imported=len(IMPORTED_BAMS),
                converted=sum(map(len, COHORT.bam_sources.values())),
                qc_samples=len(QC_SAMPLES),
                mapped_qc_samples=len(MAPPED_QC_SAMPLES),
            ),
            RULE_TIERS,
            config["priorities"],
        ),
        file=sys.stderr,
    )


def sample_depth(member, genome_length):
    """A panel member's or sample's estimated depth (a BAM path, or a sample of the cohort)."""
    if member.endswith(".bam"):
        return panel_power.bam_bases(member) / genome_length
    if member in IMPORTED_BAMS:
        return panel_power.bam_bases(IMPORTED_BAMS[member]) / genome_length
    if member in COHORT.bam_sources:
        bams = COHORT.bam_sources[member]
        return sum(panel_power.bam_bases(bam) for bam in bams) / genome_length
    lanes = COHORT.lanes[member]
    return (
        panel_power.fastq_bases([p for lane in lanes for p in (lane.fq1, lane.fq2)])
        / genome_length
    )


def panel_warnings():
    """Warnings about each pair's panel, printed with the plan (see genomon_smk.plan.panel_power)."""
    genome_length = sum(i.end - i.start for r in REGIONS for i in r.intervals) or 1
    messages = []
    for pair in COHORT.pairs:
        if not pair.panel:
            continue
        members = COHORT.panels[pair.panel]
        own = panel_power.own_sample_warning(
            pair.tumor, pair.normal, pair.panel, members
        )
        messages += [own] if own else []
        key = "pair_params" if pair.normal else "single_params"
        threshold = panel_power.eb_threshold(config["mutation_util"][key])
        if threshold <= 0:
            continue
        try:
            depths = [sample_depth(member, genome_length) for member in members]
            tumor_depth = sample_depth(pair.tumor, genome_length)
        except (OSError, ValueError, ZeroDivisionError):
            continue  # an estimate is not worth a refusal; the inputs were checked above
        panel_depth = min(depths)
        check = panel_power.PanelCheck(
            pair.tumor,
            pair.panel,
            len(members),
            panel_depth,
            tumor_depth,
            panel_power.best_clean_site_score(len(members), panel_depth, tumor_depth),
            threshold,
        )
        message = panel_power.warning(check, f"config mutation_util.{key}")
        messages += [message] if message else []
    return messages


if workflow.is_main_process:
    for message in panel_warnings() + imported_name_warnings(COHORT):
        print(message, file=sys.stderr)


TIER_MONITOR = TierMonitor(dict(TIER_PATHS))
# Names the job work directories of this output directory apart from other runs on a tier.
RUN_KEY = hashlib.md5(OUTPUT_DIR.encode()).hexdigest()[:8]


# One run per output directory (run_lock.py): Snakemake's own lock is in the working directory.
RUN_LOCK = os.path.join(OUTPUT_DIR, run_lock.LOCK_NAME)
THIS_RUN = run_lock.this_process(os.getcwd())
# Every start, a dry run too, says who holds the output directory.
if workflow.is_main_process:
    held = run_lock.held_note(RUN_LOCK, THIS_RUN.host)
    if held:
        print(held, file=sys.stderr)


def take_run_lock():
    """From onstart, so only in the main process of a real run (dry runs and cluster jobs run no
    hooks): lock the output directory, or refuse while another run holds it."""
    if not workflow.is_main_process:
        return
    os.makedirs(OUTPUT_DIR, exist_ok=True)
    taken, message = run_lock.acquire(RUN_LOCK, THIS_RUN)
    if not taken:
        raise WorkflowError(message)
    if message:
        print(message, file=sys.stderr)
    # However Snakemake ends: an exception in its scheduler runs neither onsuccess nor onerror.
    atexit.register(release_run_lock)


def release_run_lock():
    run_lock.release(RUN_LOCK, THIS_RUN)


def unlock_output_dir_too(snakemake_unlock):
    """`snakemake --unlock` reads the workflow, then calls workflow.unlock() (Snakemake 9 has no
    setting the workflow could read at parse time for it): clear the output directory's lock
    too."""

    def unlock():
        snakemake_unlock()
        print(
            run_lock.clear(RUN_LOCK) or f"genomon-smk: {RUN_LOCK} was not there",
            file=sys.stderr,
        )

    return unlock


if workflow.is_main_process:
    workflow.unlock = unlock_output_dir_too(workflow.unlock)


WORK_DIR_SCRIPT = f"{workflow.basedir}/scripts/job-work-dir.sh"


def work_dir_setup(rule_name, tier=None):
    """For a rule, the command each of its jobs runs first (`{params.work_dir_setup} {log:q}`):
    it makes the job's own empty work directory, $work, on the rule's temp tier (storage.rules;
    `tier` for a rule without one) with job-work-dir.sh, which removes it when the job's shell
    exits. The directory is the same on every attempt: a job killed with SIGKILL (which skips
    the shell's EXIT trap) leaves it behind, and the rerun clears it. Its path is a word for the
    job's shell, which expands $TMPDIR or $PJM_LOCALTMP on its node: never a path in the
    Snakemake process (nor anything to put in quotes).
    """
    tier = tier or RULE_TIERS[rule_name]["temp"]

    def setup(wildcards):
        name = ".".join(
            [rule_name, RUN_KEY, *(value for _, value in sorted(wildcards.items()))]
        )
        place = f"{TIER_WORDS[tier]}/{shlex.quote(name)}"
        return f"source {shlex.quote(WORK_DIR_SCRIPT)} {place} {tier}"

    return setup


def job_work_dir(rule_name):
    """TRANSITIONAL, for identify_mutations and merge_mutation until they use work_dir_setup
    (`source {params.work_dir} {log:q}`): the same command without its `source`. Remove with
    its last use."""
    setup = work_dir_setup(rule_name)
    return lambda wildcards: setup(wildcards).removeprefix("source ")


def transfer_reference_at_start():
    """With llio_transfer staging and Snakemake inside a PJM job (profiles/pjm-allocation): one
    llio_transfer of the reference for the whole run, before any job; the jobs of this PJM job
    then skip theirs. Outside PJM (per-rule jobs, submitted from a login node) it does nothing.
    """
    if config["storage"]["reference_staging"] != "llio_transfer":
        return
    try:
        stage_main(
            ["start", "--manifest", STAGED_MANIFEST, *reference_files(REFERENCE)]
        )
    except OSError as error:
        raise WorkflowError(f"stage: llio_transfer of the reference failed: {error}")


def purge_staged_reference():
    """With llio_transfer staging, purge the reference from the LLIO cache at the end of a run.
    Only possible inside a PJM job (Snakemake run inside one allocation); per-rule PJM jobs'
    LLIO caches ended with the jobs, and stage.py's purge then just says so."""
    if config["storage"]["reference_staging"] != "llio_transfer" or not os.path.exists(
        STAGED_MANIFEST
    ):
        return
    try:
        stage_main(
            ["purge", "--method", "llio_transfer", "--manifest", STAGED_MANIFEST]
        )
    except OSError as error:
        print(f"stage: purging the reference failed: {error}", file=sys.stderr)


def report_tier_usage():
    """At the end of a successful run: the measured tier use (log and TSV), and any leftovers."""
    table, _ = TIER_MONITOR.finish(f"{OUTPUT_DIR}/storage/tier_usage.tsv")
    print(table, file=sys.stderr)
    job_uses = job_tier_use.collect(LOG_DIR)
    job_tier_use.write_tsv(job_uses, f"{OUTPUT_DIR}/storage/job_tier_use.tsv")
    print(job_tier_use.table(job_uses), file=sys.stderr)
    report_scratch_leftovers("after a successful run")


def report_scratch_leftovers(when):
    """What lies on node_local/shared_tmp (the places visible from here) to the log and
    storage/scratch_leftovers.tsv: after a run, and at the start of one (a killed run reports
    nothing itself): genomon_smk.plan.tier_monitor tells how the rerun copes."""
    tsv = f"{OUTPUT_DIR}/storage/scratch_leftovers.tsv"
    leftovers = TIER_MONITOR.leftovers(RUN_KEY)
    write_leftovers(leftovers, tsv, when)
    if leftovers:
        print(leftover_report(leftovers, when, tsv), file=sys.stderr)


def log_path(rule_name, pattern):
    return f"{LOG_DIR}/{rule_name}/{pattern}.log"


def bench_path(rule_name, pattern):
    return f"{BENCH_DIR}/{rule_name}/{pattern}.tsv"


def sample_lanes(sample):
    """A sample's lanes; a [bam_tofastq] sample's lanes are the FASTQ pairs that bam_to_fastq
    makes of its BAMs, one per BAM."""
    if sample in COHORT.bam_sources:
        group = COHORT.read_group(sample)
        lanes = []
        for part in converted_parts(sample):
            fq1, fq2 = (converted_fastq(sample, part, mate) for mate in (1, 2))
            lanes.append(Lane(sample, fq1, fq2, group["PL"], group["LB"], None))
        return lanes
    return COHORT.lanes[sample]


def converted_parts(sample):
    """The names of a [bam_tofastq] sample's BAMs in file paths and wildcards: bam1, bam2, ..."""
    return [f"bam{number}" for number in range(1, len(COHORT.bam_sources[sample]) + 1)]


def converted_bam(sample, part):
    """The BAM of a [bam_tofastq] sample that `part` (bam1, bam2, ...) names."""
    return COHORT.bam_sources[sample][int(part.removeprefix("bam")) - 1]


def converted_fastq(sample, part, mate):
    """Where bam_to_fastq writes the reads of a [bam_tofastq] sample's BAM."""
    return tier_file("bam_to_fastq", f"bam_to_fastq/{sample}/{part}_R{mate}.fastq.gz")


def read_group(wildcards):
    """bwa's -R argument; tabs written as \\t for bwa to expand."""
    fields = COHORT.read_group(wildcards.sample)
    return "@RG\\t" + "\\t".join(f"{key}:{value}" for key, value in fields.items())


def final_bam(sample, suffix=""):
    return f"{OUTPUT_DIR}/bam/{sample}/{sample}.markdup.bam{suffix}"


def self_imports():
    """Imported BAMs that are the very path import_bam links (a run's own result imported
    into the same output directory): the link would replace the BAM."""
    return [
        f"{COHORT.bam_where[sample]}: field 'bam': {bam} is this run's own final BAM of "
        f"sample '{sample}', which import_bam replaces with a link to the imported BAM; "
        "import a copy, or use another output_dir"
        for sample, bam in IMPORTED_BAMS.items()
        if os.path.realpath(bam)
        == os.path.join(
            os.path.realpath(os.path.dirname(final_bam(sample))),
            os.path.basename(final_bam(sample)),
        )
    ]


SELF_IMPORTS = self_imports()
if SELF_IMPORTS:
    raise WorkflowError(f"invalid input ({CONFIG_FILE}):\n" + "\n".join(SELF_IMPORTS))


def mutation_result(tumor, suffix):
    return f"{OUTPUT_DIR}/mutation/{tumor}/{tumor}.genomon_mutation.result{suffix}"


def mutation_tools():
    """The mutation tools' commands: ours, run by this interpreter, or upstream's from PATH."""
    modules = {
        "fisher": "fisher",
        "mutfilter": "mutfilter",
        "EBFilter": "ebfilter",
        "mutil": "mutil",
    }
    if config["mutation_tools"] == "builtin":
        return {
            name: f"{PYTHON} -m genomon_smk.tools.{module}"
            for name, module in modules.items()
        }
    ours = os.path.dirname(sys.executable)
    found = {name: shutil.which(name) for name in modules}
    missing = [
        name
        for name, path in found.items()
        if path is None or os.path.dirname(path) == ours
    ]
    if missing:
        raise WorkflowError(
            f"config mutation_tools: upstream, but upstream's {', '.join(missing)} not on PATH "
            f"(genomon-smk's own in {ours} do not count)"
        )
    return {name: shlex.quote(path) for name, path in found.items()}


TOOLS = mutation_tools()


def pair_bams(tumor):
    """BAM inputs of a pair's mutation jobs: tumor, normal (if any) and panel members."""
    pair = PAIRS[tumor]
    bams = {"tumor": final_bam(tumor)}
    if pair.normal:
        bams["normal"] = final_bam(pair.normal)
    for index, member in enumerate(COHORT.panels.get(pair.panel, [])):
        bams[f"panel{index}"] = member if member.endswith(".bam") else final_bam(member)
    return bams


def with_indexes(bams):
    return list(bams.values()) + [
        f"{bam}.bai" for bam in bams.values() if bam.startswith(OUTPUT_DIR)
    ]


def one_of(names):
    """A wildcard constraint matching exactly these names (and nothing when there are none)."""
    return "|".join(map(re.escape, names)) or "(?!)"


wildcard_constraints:
    sample=one_of(SAMPLES),
    chunk=r"\d{4}",
    region="|".join(map(re.escape, REGION_NAMES)),
    tumor="|".join(map(re.escape, PAIRS)) or "(?!)",


# The utilisation timeline (rules/timeline.smk): its slots and every rule's threads.
def timeline_slots():
    """The chart's slots: config timeline.slots, else the cores Snakemake runs with; empty when
    they are unbounded (a cluster executor), so the chart takes the fewest that held the jobs.
    """
    if config["timeline"]["slots"]:
        return config["timeline"]["slots"]
    try:
        cores = workflow.cores
    except WorkflowError:
        return ""
    return "" if cores is None or cores >= sys.maxsize else cores


def rule_threads():
    """RULE=N for every rule with a fixed thread count other than one (a job holds that many
    slots; 0: none, a timer such as stagger_start)."""
    counts = {
        defined.name: fixed_value(defined.resources.get("_cores"))
        for defined in workflow.rules
    }
    return " ".join(
        f"{name}={count}"
        for name, count in sorted(counts.items())
        if isinstance(count, int) and count != 1
    )


def fixed_value(resource):
    """A Snakemake 9 Resource's value (or a plain value); None for a callable, known only per job."""
    if hasattr(resource, "is_evaluable"):
        return None if resource.is_evaluable() else resource.value
    return resource
