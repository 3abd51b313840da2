"""Paths and targets: logs, benchmarks, a sample's lanes and final BAM, the pair's BAMs and
results, the mutation tools' command lines, wildcard constraints, the timeline's slots, the
post-analysis tables (SV detection's: rules/sv_paths.smk) and every final file of a run.
"""

import functools
import shutil

from genomon_smk.plan.input_identity import fingerprint
from genomon_smk.plan.name_pattern import one_of
from genomon_smk.plan.samplesheet import Lane, name_problem


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


def sample_fingerprint(sample):
    """What a sample's own input files hold (its FASTQs, [bam_tofastq] BAMs or [bam_import]
    BAM), for the params of split_fastq and import_bam (whose outputs outlive the run, so
    Snakemake keeps their params). A file replaced under its name by one with an older date
    (cp -p, rsync -a) reruns the sample; a [bam_tofastq] sample's split reruns bam_to_fastq.
    """
    if sample in COHORT.imported:
        return fingerprint([IMPORTED_BAMS[sample]])
    if sample in COHORT.bam_sources:
        return fingerprint(COHORT.bam_sources[sample])
    return fingerprint(
        path for lane in COHORT.lanes.get(sample, []) for path in (lane.fq1, lane.fq2)
    )


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
REFUSALS.extend(SELF_IMPORTS)
refuse_if_any()


def mutation_result(tumor, suffix):
    return f"{OUTPUT_DIR}/mutation/{tumor}/{tumor}.genomon_mutation.result{suffix}"


def mutation_tools():
    """The mutation tools' commands: ours, run by this interpreter, or upstream's from PATH
    (hotspotCall only with a hotspot database)."""
    modules = {
        "fisher": "fisher",
        "mutfilter": "mutfilter",
        "EBFilter": "ebfilter",
        "mutil": "mutil",
        **({"hotspotCall": "hotspot"} if HOTSPOT_DB else {}),
    }
    if config["mutation_tools"] == "builtin":
        return {
            # genomon_python: the job shell's function (job-shell.sh), not a path in a param.
            name: f"genomon_python -m genomon_smk.tools.{module}"
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


def tool_versions(wildcards):
    """The meta line's tool versions (each tool's --version line) as merge_mutation's option:
    genomon-smk's own tools by name (known without starting them), upstream's as commands.
    """
    names = [
        name
        for name in ("fisher", "mutfilter", "EBFilter", "mutil")
        if name != "EBFilter" or PAIRS[wildcards.tumor].panel
    ]
    if config["mutation_tools"] == "builtin":
        return "--builtin-version-of " + " ".join(names)
    return "--version-of " + " ".join(shlex.quote(TOOLS[name]) for name in names)


def pair_bams(tumor):
    """BAM inputs of a pair's mutation jobs: tumor, normal (if any) and panel members."""
    pair = PAIRS[tumor]
    bams = {"tumor": final_bam(tumor)}
    if pair.normal:
        bams["normal"] = final_bam(pair.normal)
    for index, member in enumerate(COHORT.panels.get(pair.panel, [])):
        bams[f"panel{index}"] = member if member.endswith(".bam") else final_bam(member)
    return bams


def hotspot_db_input(wildcards):
    """The hotspot database, for a pair with a matched normal (Genomon calls hotspots only there)."""
    return [HOTSPOT_DB] if HOTSPOT_DB and PAIRS[wildcards.tumor].normal else []


def with_indexes(bams):
    return list(bams.values()) + [
        f"{bam}.bai" for bam in bams.values() if bam.startswith(OUTPUT_DIR)
    ]


wildcard_constraints:
    sample=one_of(SAMPLES),
    chunk=r"\d{4}",
    # The markdup regions and the mutation stage's (the same, or pieces of them).
    region=one_of(dict.fromkeys([*REGION_NAMES, *MUTATION_REGIONS])),
    tumor=one_of(PAIRS),


# The utilisation timeline (rules/timeline.smk): its slots and every rule's threads.
def timeline_slots():
    """The chart's slots: config timeline.slots, else the cores Snakemake runs with; empty when
    they are unbounded (a cluster executor), so the chart takes the fewest that held the jobs.
    """
    if config["timeline"]["slots"]:
        return config["timeline"]["slots"]
    return snakemake_adapter.total_cores(workflow) or ""


def rule_threads():
    """RULE=N for every rule with a fixed thread count other than one (a job holds that many
    slots; 0: none, a timer such as stagger_start)."""
    return " ".join(
        f"{name}={count}"
        for name, count in sorted(snakemake_adapter.fixed_threads(workflow).items())
        if isinstance(count, int) and count != 1
    )


# Gene annotation (rules/annotation.smk): the job's command.
def annotation_command(wildcards, input, output):
    """The job's command: the clean-room annotator on the genes, or ANNOVAR's table_annovar.pl
    with Genomon's options (its directory and humandb as configured)."""
    if ANNOTATION.tool == "annovar":
        settings = config["annotation"]
        return (
            "genomon_python -m genomon_smk.steps.annovar"
            f" --annovar-dir {shlex.quote(config_path(settings['annovar_dir']))}"
            f" --humandb {shlex.quote(config_path(settings['annovar_database']))}"
            f" --buildver {shlex.quote(settings['annovar_buildver'])}"
            f" --params {shlex.quote(settings['table_annovar_params'])}"
            f' --work "$work" {shlex.quote(input.calls)} {shlex.quote(output.result)}'
        )
    return (
        f"genomon_python -m genomon_smk.tools.annotate --genes {shlex.quote(input.genes[0])}"
        f" --reference {shlex.quote(input.reference)}"
        f" {shlex.quote(input.calls)} {shlex.quote(output.result)}"
    )


# Post-analysis and paplot (rules/post_analysis.smk, rules/paplot.smk): the cohort's name, its
# tables and the report's inputs. The cohort's name: a Genomon sheet's file name without its
# extension (as Genomon names it), else config `cohort`, else the samples table's file name
# without its extension.
from genomon_smk.steps.post_analysis import (
    CASES,
    case_of,
    merged_name,
)


def cohort_name():
    """The cohort's name; one taken from a file name is checked as the `cohort` key is (it names
    directories and a wildcard-free part of every post-analysis path), naming the key and file.
    """
    name, key = derived_cohort_name()
    problem = name_problem(name) if key else None
    if problem:
        REFUSALS.append(
            config_key_problem(
                (key,),
                f"the file name {os.path.basename(config[key])!r} names the cohort "
                f"(without its extension, as in Genomon), and {problem}; rename the file"
                + ("" if key == "genomon_sample_sheet" else ", or set config `cohort`"),
            )
        )
        refuse_if_any()
    return name


def derived_cohort_name():
    """(the cohort's name, the config key whose file name gave it, or None for `cohort`)."""
    if "genomon_sample_sheet" in config:
        if config["cohort"] is not None:
            REFUSALS.append(
                config_key_problem(
                    ("cohort",),
                    "with genomon_sample_sheet, the sheet's file name names the cohort, "
                    "as in Genomon; leave this key out",
                )
            )
            refuse_if_any()
        name = os.path.basename(config["genomon_sample_sheet"])
        return os.path.splitext(name)[0], "genomon_sample_sheet"
    if config["cohort"] is not None:
        return config["cohort"], None
    return os.path.splitext(os.path.basename(config["samples"]))[0], "samples"


COHORT_NAME = cohort_name()
POST_ANALYSIS_DIR = f"{OUTPUT_DIR}/post_analysis/{COHORT_NAME}"


def post_analysis_cases(pairs):
    """(tumor, Genomon's case) of pairs, in sample-sheet order."""
    return [(tumor, case_of(pair.normal, pair.panel)) for tumor, pair in pairs.items()]


def post_analysis_tables(mode, pairs):
    """The tables a mode's merge writes for pairs: {key: path}, keys `all`, `filt_all`,
    `{case}`, `filt_{case}` for the cases with a tumor (none without pairs)."""
    cases = {case for _, case in post_analysis_cases(pairs)}
    if not cases:
        return {}
    return {
        ("filt_" if filtered else "")
        + (case or "all"): (f"{POST_ANALYSIS_DIR}/{merged_name(mode, filtered, case)}")
        for filtered in (False, True)
        for case in (None, *(name for name, _, _ in CASES if name in cases))
    }


def post_analysis_samples(pairs, result):
    """The merge's arguments: --sample ID CASE RESULT FILTERED per tumor, in sample-sheet order."""
    return [
        field
        for tumor, case in post_analysis_cases(pairs)
        for field in (
            "--sample",
            tumor,
            case,
            result(tumor, ".txt"),
            result(tumor, ".filt.txt"),
        )
    ]


MUTATION_TABLES = post_analysis_tables("mutation", PAIRS)
SV_TABLES = post_analysis_tables("sv", SV_PAIRS)
MERGE_QC = f"{POST_ANALYSIS_DIR}/merge_qc.txt"


PAPLOT_DIR = f"{OUTPUT_DIR}/paplot/{COHORT_NAME}"
# Genomon's paplot command: the venv's (bin/install), or the conda env's.
# $genomon_bin: the interpreter's directory, set by the shell prefix (tiers.smk): not in params.
PAPLOT = "paplot" if CONDA else '"$genomon_bin"/paplot'


def paplot_tables(tables):
    """The filtered tables the report draws (and pmsignature reads), as Genomon picks them: pair +
    control panel always, pair with paplot.include_unpanel, tumor + panel with include_unpair,
    tumor alone with both.
    """
    wanted = pmsignature_plan.drawn_cases(config["paplot"])
    return [
        tables[f"filt_{case}"]
        for case, _, _ in CASES
        if case in wanted and f"filt_{case}" in tables
    ]


# pmsignature's results (rules/pmsignature.smk), one JSON per mode and K.
PMSIGNATURE_DIR = f"{OUTPUT_DIR}/pmsignature/{COHORT_NAME}"


def pmsignature_result(mode, signum):
    return f"{PMSIGNATURE_DIR}/pmsignature.{mode}.result.{signum}.json"


PAPLOT_INPUTS = {
    "qc": [MERGE_QC] if QC_SAMPLES else [],
    "sv": paplot_tables(SV_TABLES),
    "mutation": paplot_tables(MUTATION_TABLES),
    **{
        f"pmsignature_{mode}": [pmsignature_result(mode, k) for k in signums]
        for mode, signums in PMSIGNATURE.ks.items()
    },
}
# paplot's subcommand, title and overview per report (Genomon's).
PAPLOT_REPORTS = {
    "qc": ("qc", "QC graphs", "Quality Control of bam."),
    "sv": ("ca", "SV graphs", "Structural Variation."),
    "mutation": ("mutation", "Mutation matrix", "Gene-sample mutational profiles."),
}
# The signature reports, one per JSON (K), by pmsignature mode (Genomon's; the mode names the
# page: graph_{mode}{signatures}.html).
PAPLOT_SIGNATURE_REPORTS = {
    "ind": ("pmsignature", "pmsignature", "Pmsignature type=ind."),
    "full": ("signature", "Mutational Signature", "Pmsignature type=full."),
}


def paplot_commands(wildcards, input):
    """One paplot command per report that has tables (the mutation report reads the table the
    config step writes in the work directory)."""
    title = shlex.quote(config["paplot"]["title"])
    commands = []
    for kind, (command, heading, overview) in PAPLOT_REPORTS.items():
        if not PAPLOT_INPUTS[kind]:
            continue
        tables = (
            '"$work/mutation.txt"'
            if kind == "mutation"
            else shlex.quote(",".join(input[kind]))
        )
        commands.append(
            f'{PAPLOT} {command} {tables} "$out_dir" {title} '
            f'--config_file "$work/paplot.cfg" --title {shlex.quote(heading)} '
            f"--overview {shlex.quote(overview)} --ellipsis {kind}"
        )
    for mode, (command, heading, overview) in PAPLOT_SIGNATURE_REPORTS.items():
        for result in input.get(f"pmsignature_{mode}", []):
            commands.append(
                f'{PAPLOT} {command} {shlex.quote(result)} "$out_dir" {title} '
                f'--config_file "$work/paplot.cfg" --title {shlex.quote(heading)} '
                f"--overview {shlex.quote(overview)} --ellipsis {mode}"
            )
    return "\n".join(commands)


# Every final file of a run, defined once: `rule all` asks for them, and the utilisation
# timeline waits for all of them (so it is drawn last); the *_TARGETS come from the rule files.
# Listed when Snakemake plans those two jobs (input functions), not at every parse: a job's own
# Snakemake lists no cohort.
def final_targets(wildcards):
    return every_final_file()


@functools.cache
def every_final_file():
    return [
        *expand(
            final_bam("{sample}", "{suffix}"),
            sample=SAMPLES,
            suffix=["", ".bai", ".md5"],
        ),
        *expand(
            mutation_result("{tumor}", "{suffix}"),
            tumor=PAIRS,
            suffix=[
                ".txt",
                ".filt.txt",
                ".filt.vcf.gz",
                ".filt.vcf.gz.tbi",
                ".vcf.gz",
                ".vcf.gz.tbi",
            ],
        ),
        *QC_TARGETS,
        *MUTATION_SUMMARY_TARGETS,
        *SV_TARGETS,
        *POST_ANALYSIS_TARGETS,
        *PMSIGNATURE_TARGETS,
        *PAPLOT_TARGETS,
    ]
