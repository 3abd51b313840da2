"""The config, the cohort and the regions: read and checked here, once, before any job is
planned (parse-time work: this file and plans.smk)."""

import functools
import os
import shlex
import sys
from pathlib import Path

import yaml

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version, validate

from genomon_smk.plan import snakemake_adapter
from genomon_smk.plan.config_check import (
    ConfigRefused,
    cluster_fragment,
    config_problems,
    key_problem,
    leaf_paths,
    merge_option_mappings,
    quoted_options,
    refusal_text,
    typed_command_line,
    underlay,
    value_at,
)
from genomon_smk.plan import genomon_config
from genomon_smk.plan.hotspot import hotspot_db_problems
from genomon_smk.plan.path_limits import path_problems
from genomon_smk.plan import annotation as annotation_plan
from genomon_smk.plan import pmsignature as pmsignature_plan
from genomon_smk.plan.reference import BWA_INDEX_SUFFIXES, reference_problems
from genomon_smk.plan.regions import (
    interval_list_regions,
    min_mutation_regions,
    mutation_contigs,
    mutation_regions,
    only_contigs,
    regions_of,
)
from genomon_smk.plan.tool_options import CHECKED as CHECKED_OPTIONS
from genomon_smk.plan.tool_options import tool_option_problems
from genomon_smk.plan.setup_build import (
    plan_reference,
    plan_simple_repeat,
    reference_contigs,
    setup_outputs,
    simple_repeat_problems,
    simple_repeat_table_problems,
)
from genomon_smk.plan.rules import AUTO, FACTS, PRIORITIES, RULES
from genomon_smk.plan.samplesheet import (
    InputError,
    load_cohort,
    load_schema,
    schema_as_json,
)
from genomon_smk.steps.fastq_split import chunk_name
from genomon_smk.steps.post_analysis import case_of

# The oldest Snakemake the workflow runs on (callable rule priorities came in 9.17; tested in
# tests/test_other_snakemake.py): pyproject.toml declares the same range.
min_version("9.17")

SCHEMAS = WORKFLOW_DIR / "schemas"

# The project's Python steps run with the interpreter that runs Snakemake (the .venv), whatever
# the shell's PATH holds; with --sdm conda, with the rule env's python and this checkout's package.
CONDA = snakemake_adapter.uses_conda(workflow)
if CONDA:
    PYTHON = f"env PYTHONPATH={shlex.quote(str(WORKFLOW_DIR.parent / 'src'))} python"
else:
    PYTHON = shlex.quote(sys.executable)

# The main process plans and checks; a job's own Snakemake (a cluster job's re-parse, a local
# job's subprocess) only finds its job: no cohort-wide checks or plans there.
MAIN_PROCESS = snakemake_adapter.is_main_process(workflow)
if not snakemake_adapter.config_files(workflow):
    raise WorkflowError(
        "no config file given: run with --configfile FILE (config/config.yaml is a documented example)"
    )
CONFIG_FILES = [
    str(Path(path).resolve()) for path in snakemake_adapter.config_files(workflow)
]
CONFIG_FILE = Path(CONFIG_FILES[-1])
CONFIG_DIR = CONFIG_FILE.parent

# A cluster profile names its cluster (profiles/pjm: `config: {cluster: pjm}`): its storage
# fragment then lies under the user's config, so `--profile profiles/pjm` alone gives the LLIO
# tiers and the config files may still override any of their keys.
CLUSTER_FRAGMENT = cluster_fragment(
    config.get("cluster"), str(WORKFLOW_DIR.parent / "profiles")
)
if CLUSTER_FRAGMENT:
    config.update(underlay(yaml.safe_load(Path(CLUSTER_FRAGMENT).read_text()), config))
# --config values inside braces arrive as text: typed as a config file would type them.
COMMAND_LINE_CONFIG = snakemake_adapter.command_line_config(workflow)
typed_command_line(config, COMMAND_LINE_CONFIG)
COMMAND_LINE_KEYS = frozenset(leaf_paths(COMMAND_LINE_CONFIG))


# Every problem of the config and its inputs found in this parse (one pass: collected, then
# refused together with the plan's warnings, each with its fix; refuse_if_any).
REFUSALS = []


def refuse_if_any(warnings=()):
    """Refuse the run when a problem was found: every one printed as a list, without a traceback
    (config_check.ConfigRefused; the process exits with status 1)."""
    if REFUSALS:
        refused = ConfigRefused(REFUSALS, [str(w) for w in warnings])
        print(refusal_text(refused.problems), file=sys.stderr)
        raise refused


CONFIG_SCHEMA = load_schema(str(SCHEMAS), "config")
# The same schema as JSON for Snakemake's validate below (made before anything reads the dict).
CONFIG_SCHEMA_JSON = schema_as_json(
    CONFIG_SCHEMA,
    str(SCHEMAS / "config.schema.yaml"),
    os.path.abspath(".snakemake/genomon-smk"),
)
# A Genomon site's dna_genomon.cfg (config genomon_config): its keys under the YAML config's,
# which override it key by key; what it holds without a counterpart here is listed in the plan.
GENOMON = None
if isinstance(config.get("genomon_config"), str):
    try:
        GENOMON = genomon_config.read_genomon_config(
            str(
                (
                    CONFIG_DIR
                    / os.path.expanduser(os.path.expandvars(config["genomon_config"]))
                ).resolve()
            )
        )
    except (OSError, ValueError) as error:
        REFUSALS.append(
            key_problem(("genomon_config",), f"cannot be read: {error}", CONFIG_FILES)
        )
if GENOMON:
    REFUSALS.extend(GENOMON.problems)
    config.update(
        underlay(genomon_config.within_schema(GENOMON, CONFIG_SCHEMA), config)
    )
GENOMON_ORIGINS = GENOMON.origins if GENOMON else {}


def config_key_problem(path, message):
    """A problem of a config key, where the run's config says it (key_problem)."""
    return key_problem(
        path,
        message,
        CONFIG_FILES,
        command_line=COMMAND_LINE_KEYS,
        origins=GENOMON_ORIGINS,
    )


# An options key given as a mapping of single options: merged into the string it changes.
REFUSALS.extend(
    config_key_problem(path, message)
    for path, message in merge_option_mappings(
        config, CONFIG_SCHEMA, GENOMON.config if GENOMON else {}
    )
)
# Our own messages first (file, line, key, the key meant); Snakemake's validate then sets defaults.
REFUSALS.extend(
    config_problems(
        config, CONFIG_SCHEMA, CONFIG_FILES, COMMAND_LINE_KEYS, GENOMON_ORIGINS
    )
)
refuse_if_any()
validate(config, CONFIG_SCHEMA_JSON, set_default=True)
# The mutation tools' options by their own parsers: in the process that plans, not in each job.
if MAIN_PROCESS and config["mutation_tools"] == "builtin":
    REFUSALS.extend(
        config_key_problem(path, message)
        for path, message in tool_option_problems(
            {path: value_at(config, path) for path in CHECKED_OPTIONS}
        )
    )
if MAIN_PROCESS and GENOMON:
    print("\n".join(genomon_config.unused_summary(GENOMON)), file=sys.stderr)
config["priorities"] = {**PRIORITIES, **config["priorities"]}
# Where the jobs run (the profiles set config `cluster`).
CLUSTER = snakemake_adapter.cluster_kind(config["cluster"], workflow)
# The cores a local run shares among its jobs (none on a cluster): the threads of the rules whose
# config says `threads: auto` (rules.Threads), the same in every process of the run (not the
# mutation stage's pieces: those are the genome's, regions.min_mutation_regions).
LOCAL_CORES = snakemake_adapter.local_cores(workflow) if CLUSTER == "local" else None


@functools.cache
def config_options(*key):
    """A free-text options key (map.bwa_params, sv_filt.params, ...) as quoted shell words: the
    one way every job gets them (each was split once already, by the config check); made once
    per key (a cohort's mutation jobs ask for theirs 74,000 times)."""
    return quoted_options(value_at(config, key))


def config_path(value):
    """A path from the config: $VARs and ~ expanded, relative ones resolved against the config file's directory."""
    return str((CONFIG_DIR / os.path.expanduser(os.path.expandvars(value))).resolve())


# The prepared reference files (rules/reference.smk): resources/ in the working directory, as
# catalog workflows keep them, or one shared directory that several projects name.
RESOURCES_DIR = (
    config_path(config["resources_dir"])
    if config["resources_dir"]
    else os.path.abspath("resources")
)
REFERENCE_SOURCES = [
    config_path(path)
    for path in (
        config["reference"]
        if isinstance(config["reference"], list)
        else [config["reference"]]
    )
]
# The reference jobs read: the configured one when it is indexed, else what the set-up rules build.
# A build that is not complete yet is read through the project's links in output_dir, the
# set-up jobs' outputs (genomon_smk.plan.setup_build: other projects may share resources_dir).
REFERENCE_PLAN = plan_reference(
    REFERENCE_SOURCES, RESOURCES_DIR, config_path(config["output_dir"])
)
REFERENCE = REFERENCE_PLAN.fasta
SIMPLE_REPEAT = (
    plan_simple_repeat(
        config_path(config["simple_repeat_db"]),
        RESOURCES_DIR,
        config_path(config["output_dir"]),
    )
    if config["simple_repeat_db"]
    else None
)
# Genomon's hotspot database: hotspotCall for every pair with a matched normal, and `mutil filter`
# keeps the rows it names (rules/identify_mutations.smk, rules/merge_mutation.smk).
HOTSPOT_DB = config_path(config["hotspot_db"]) if config["hotspot_db"] else None
# What the set-up rules build, by rule (rules/reference.smk; counted by the plans).
SETUP_OUTPUTS = setup_outputs(REFERENCE_PLAN, SIMPLE_REPEAT)
# The set-up rules with work left: some output missing (the rest an earlier run built).
SETUP_PENDING = {
    rule_name: files
    for rule_name, files in SETUP_OUTPUTS.items()
    if not all(map(os.path.exists, files))
}
OUTPUT_DIR = config_path(config["output_dir"])
LOG_DIR = f"{OUTPUT_DIR}/logs"
# What the reference pre-staging wrote: the files, sizes and checksums that jobs verify.
STAGED_MANIFEST = f"{OUTPUT_DIR}/reference/staged.json"
BENCH_DIR = f"{OUTPUT_DIR}/benchmarks"


# A sample's final BAM (rules/paths.smk has the rest of the layout; the storage plan reads this
# one before it).
def final_bam(sample, suffix=""):
    return f"{OUTPUT_DIR}/bam/{sample}/{sample}.markdup.bam{suffix}"


# Paths a tool cannot take are refused here, before anything reads or writes them.
PATH_PROBLEMS = [
    problem
    for key, path in (
        ("output_dir", OUTPUT_DIR),
        ("resources_dir", RESOURCES_DIR),
        *(("reference", source) for source in REFERENCE_SOURCES),
    )
    for problem in path_problems(key, path)
]
REFUSALS.extend(PATH_PROBLEMS)

try:
    problems = (
        simple_repeat_problems(SIMPLE_REPEAT.source)
        if SIMPLE_REPEAT and SIMPLE_REPEAT.built
        else []
    )
    problems += [] if REFERENCE_PLAN.built else reference_problems(REFERENCE)
    if problems:
        raise InputError("\n".join(problems))
    CONTIGS = reference_contigs(REFERENCE_PLAN)
    # A table still to be built is read whole once: a bad row or another build's contig names
    # would fail its set-up job or leave every simple-repeat column empty.
    if "simple_repeat_db" in SETUP_PENDING:
        REFUSALS.extend(simple_repeat_table_problems(SIMPLE_REPEAT.source, CONTIGS))
    # Read whole once: a malformed row, or a contig the reference lacks (another build's names),
    # would fail or silently empty every hotspot job.
    if HOTSPOT_DB:
        REFUSALS.extend(
            hotspot_db_problems(HOTSPOT_DB, CONTIGS)
            if os.path.isfile(HOTSPOT_DB)
            else [config_key_problem(("hotspot_db",), f"file not found: {HOTSPOT_DB}")]
        )
    COHORT = load_cohort(
        str(SCHEMAS),
        samples=config_path(config["samples"]) if "samples" in config else None,
        pairs=config_path(config["pairs"]) if "pairs" in config else None,
        control_panels=config["control_panels"],
        panel_base=str(CONFIG_DIR),
        reference_fai=REFERENCE_PLAN.fai,
        reference_contigs=CONTIGS,
        genomon_sample_sheet=(
            config_path(config["genomon_sample_sheet"])
            if "genomon_sample_sheet" in config
            else None
        ),
        # The files were checked by the main process before any job was submitted.
        check_files=MAIN_PROCESS,
    )
    REGION_FILE = (
        config_path(config["regions"]["file"]) if config["regions"]["file"] else None
    )
    # A missing interval list: refused with the rest (the whole genome's regions meanwhile).
    if REGION_FILE and not os.path.isfile(REGION_FILE):
        REFUSALS.append(
            config_key_problem(("regions", "file"), f"file not found: {REGION_FILE}")
        )
        REGION_FILE = None
    REGIONS = regions_of(
        CONTIGS,
        REGION_FILE,
        config["regions"]["max_length"],
        config["regions"]["pack_bp"],
    )
    # Where mutations are called: a Genomon interval list's lines as listed; else the regions
    # (on a GRCh37/hg19 reference with decoys its chromosomes only: regions.mutation_contigs).
    LISTED_REGIONS = (
        interval_list_regions(REGION_FILE, CONTIGS) if REGION_FILE else None
    )
except InputError as error:
    # One problem a line, each naming its file and line: counted one by one.
    REFUSALS.extend(str(error).splitlines())
    refuse_if_any()
except ValueError as error:
    INDENTED = str(error).replace("\n", "\n    ")
    REFUSALS.append(f"invalid input ({CONFIG_FILE}):\n    {INDENTED}")
    refuse_if_any()

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


def sv_pairs():
    """The pairs whose SVs are detected: a Genomon sheet's [sv_detection] rows (none without the
    section, as in Genomon); else the pairs table's, all or config sv_detection.tumors.
    """
    chosen = config["sv_detection"]["tumors"]
    problem = None
    if "genomon_sample_sheet" in config:
        if chosen is not None:
            problem = (
                "with genomon_sample_sheet, its [sv_detection] section selects the pairs; "
                "leave this key out"
            )
    else:
        unknown = [tumor for tumor in chosen or [] if tumor not in PAIRS]
        if unknown:
            problem = (
                f"{', '.join(map(repr, unknown))}: not a tumor of the pairs table "
                f"(its tumors: {', '.join(PAIRS) or 'none'})"
            )
    if problem:
        REFUSALS.append(config_key_problem(("sv_detection", "tumors"), problem))
    if "genomon_sample_sheet" in config:
        return {pair.tumor: pair for pair in COHORT.sv_pairs}
    return {
        tumor: pair
        for tumor, pair in PAIRS.items()
        if chosen is None or tumor in chosen
    }


SV_PAIRS = sv_pairs()


def sv_name(member):
    """The name a sample or a panel's BAM path is parsed under in sv/ (a BAM: its file name
    without .bam)."""
    return (
        os.path.basename(member).removesuffix(".bam")
        if member.endswith(".bam")
        else member
    )


def sv_parsed():
    """What GenomonSV parse reads, once each however many pairs use it: name -> the cohort's
    sample of that name, or a panel's BAM path. Tumors and panel members: filt reads a matched
    normal's BAM itself (Genomon parses every normal too, and never reads that parse).
    """
    parsed = {}
    for pair in SV_PAIRS.values():
        parsed[pair.tumor] = pair.tumor
        for member in COHORT.panels.get(pair.panel, []):
            name = sv_name(member)
            if parsed.setdefault(name, member) != member or (
                name != member and name in SAMPLES
            ):
                REFUSALS.append(
                    f"SV detection: panel BAM {member} would share the name '{name}' with another "
                    "sample or panel BAM in sv/; rename one of them"
                )
    return parsed


SV_PARSED = sv_parsed()
# The panels of the SV pairs, each a list of the names its members are parsed under.
SV_PANELS = {
    pair.panel: [sv_name(member) for member in COHORT.panels[pair.panel]]
    for pair in SV_PAIRS.values()
    if pair.panel
}
REGION_NAMES = [region.name for region in REGIONS]
# Reads without a position carry no mutations: the mutation stage skips the unmapped region
# (and cuts the regions of a small genome finer, regions.min_mutation_regions).
CALLED_REGIONS = LISTED_REGIONS or only_contigs(
    REGIONS, mutation_contigs(CONTIGS, config["regions"]["mutation_contigs"])
)
MUTATION_REGIONS = {
    region.name: region
    for region in mutation_regions(
        CALLED_REGIONS,
        min_mutation_regions(
            config["regions"]["min_mutation_regions"],
            sum(i.end - i.start for region in CALLED_REGIONS for i in region.intervals),
        ),
    )
}
CHUNKS = [chunk_name(i) for i in range(config["split"]["chunks"])]


# The genes (config gene_annotation) and Genomon's annotation stage (rules/annotation.smk).
ANNOTATION = annotation_plan.plan_annotation(config, CONTIGS, config_path)
ANNOTATION_PROBLEMS = [
    config_key_problem(key, problem)
    for key, problem in annotation_plan.problems(
        config, ANNOTATION, CONTIGS, config_path
    )
]
if ANNOTATION_PROBLEMS:
    # pmsignature below reads these genes: refused here with everything found so far.
    REFUSALS.extend(ANNOTATION_PROBLEMS)
    refuse_if_any()
# pmsignature reads gene_annotation's genes unless its own key names some; with none known it
# is left out, as the plan says.
PMSIGNATURE_OWN_GENES = config["pmsignature"]["annotation"] is not None
if not PMSIGNATURE_OWN_GENES:
    config["pmsignature"]["annotation"] = ANNOTATION.genes.name

# Genomon's pmsignature stages (rules/pmsignature.smk): K per mode, annotation, and the
# background, a set-up build (resources_dir/pmsignature/).
PMSIGNATURE_CASES = [case_of(pair.normal, pair.panel) for pair in PAIRS.values()]
PMSIGNATURE = (
    pmsignature_plan.plan_pmsignature(
        config,
        PMSIGNATURE_CASES,
        REFERENCE_PLAN,
        RESOURCES_DIR,
        config_path,
    )
    if config["pmsignature"]["annotation"] is not None
    else pmsignature_plan.Plan()
)
REFUSALS.extend(
    config_key_problem(key, problem)
    for key, problem in pmsignature_plan.problems(config, PMSIGNATURE, CONTIGS)
    # gene_annotation's genes were checked as that key.
    if PMSIGNATURE_OWN_GENES or key != ("pmsignature", "annotation")
)
if PMSIGNATURE.background:
    SETUP_OUTPUTS["pmsignature_background"] = PMSIGNATURE.background.files
    if not all(map(os.path.exists, PMSIGNATURE.background.files)):
        SETUP_PENDING["pmsignature_background"] = PMSIGNATURE.background.files
