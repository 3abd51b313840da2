"""What the run will do, printed when the workflow is parsed (a dry run runs no hooks): the
storage plan (refused where a tier's capacity is exceeded), the stage plan, and warnings about
the panels, imported BAMs, PJM storage and the SV annotation's contig names."""

from genomon_smk.plan import panel_power
from genomon_smk.plan.config_check import merged_options
from genomon_smk.plan.input_identity import (
    changed_inputs,
    held_inputs,
    read_record,
)
from genomon_smk.plan.reference import sv_annotation_naming_problem
from genomon_smk.runtime.console import PlanWarning
from genomon_smk.plan.samplesheet import imported_name_warnings, panel_normal_warnings
from genomon_smk.plan.stage_plan import (
    CohortShape,
    node_hours_table,
    stage_table,
    stagger_delays,
)
from genomon_smk.plan.storage_plan import (
    BAM_PER_FASTQ,
    FASTQ_PER_GZ,
    conversion_uses,
    file_bytes,
    over_capacity,
    parse_size,
    peaks,
    plan_table,
    sample_uses,
    setup_uses,
    sv_uses,
)
from genomon_smk.plan.setup_build import estimated_build_bytes

# What the reference set-up writes, by rule, whether or not it is still to be built.
REFERENCE_BUILD_BYTES = estimated_build_bytes(CONTIGS)


def setup_sizes():
    """Bytes of what the set-up rules still have to build for this run, by rule (none when all is
    there); the simple-repeat database, about the size of the (gzipped) UCSC table, only for the
    mutation calls that read it."""
    estimates = dict(REFERENCE_BUILD_BYTES)
    if SIMPLE_REPEAT and PAIRS:
        estimates["simple_repeat_db"] = file_bytes([SIMPLE_REPEAT.source])
    # pmsignature's background: three tables of at most 3,072 rows of ~20 bytes.
    estimates["pmsignature_background"] = 200_000
    return {
        rule_name: estimates[rule_name]
        for rule_name in SETUP_PENDING
        if rule_name in estimates
    }


SETUP_SIZES = setup_sizes()


# Staggered start of pairs: seconds each sample's split waits (samples that do not wait left out).
STAGGER = {
    sample: delay
    for sample, delay in stagger_delays(
        [(pair.tumor, pair.normal) for pair in COHORT.pairs], config["stagger_minutes"]
    ).items()
    if sample in MAPPED_SAMPLES
}

# The cohort's shape: the rule table counts each rule's jobs from it (the stage and storage plans).
COHORT_SHAPE = CohortShape(
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
    to_build=frozenset(SETUP_SIZES),
    sv_samples=len(SV_PARSED),
    sv_panels=len(SV_PANELS),
    sv_pairs=len(SV_PAIRS),
    pmsignature_ind=PMSIGNATURE.jobs("ind"),
    pmsignature_full=PMSIGNATURE.jobs("full"),
    annotated=ANNOTATION.enabled,
)


def job_threads(rule_name):
    return FACTS[rule_name].job_threads(config, COHORT_SHAPE, LOCAL_CORES)


# One pair's map jobs before the next pair's (the pairs table's order; a panel's members with the
# first pair that names the panel, samples of no pair last): a pair's markdups run beside the next
# pair's map jobs instead of every markdup waiting for the cohort's last map job, and within a
# pair the samples' map jobs interleave, so its tumor's and normal's markdups overlap each other
# and the last map jobs (one sample after another left the last sample's markdup alone at the
# end, a core idle: the bench's BAMs 85.4 s against 88.7-90.9 s). A fraction below the
# configured priority, which leaves every other rule's order as it is.
def map_ranks():
    ranks = {}
    for rank, pair in enumerate(COHORT.pairs):
        panel = COHORT.panels[pair.panel] if pair.panel else []
        for sample in (pair.tumor, pair.normal, *panel):
            if sample in MAPPED_SAMPLES:
                ranks.setdefault(sample, rank)
    return {sample: ranks.get(sample, len(COHORT.pairs)) for sample in MAPPED_SAMPLES}


MAP_ORDER = {
    sample: rank / (len(COHORT.pairs) + 1) for sample, rank in map_ranks().items()
}


def in_pair_order(priority):
    return lambda wildcards: priority - MAP_ORDER[wildcards.sample]


def sample_reads(sample):
    """A mapped sample's read files: its FASTQ lanes, or a [bam_tofastq] sample's BAMs (its
    FASTQ do not exist yet; the BAMs are about their size)."""
    return COHORT.bam_sources.get(sample) or [
        path for lane in COHORT.lanes[sample] for path in (lane.fq1, lane.fq2)
    ]


def sv_bam_bytes(member):
    """The size of a BAM GenomonSV parse reads: a panel's BAM path or an imported BAM as it is,
    a mapped sample's as its reads estimate it."""
    if member.endswith(".bam"):
        return file_bytes([member])
    if member in IMPORTED_BAMS:
        return file_bytes([IMPORTED_BAMS[member]])
    return file_bytes(sample_reads(member)) * FASTQ_PER_GZ * BAM_PER_FASTQ


def storage_plan():
    """Print the storage plan (main process only) and refuse one that exceeds a tier's capacity;
    the planned peak bytes of each tier (a failed job names a full tier with it)."""
    capacity = {
        tier: (parse_size(limit) if limit is not None else None)
        for tier, limit in config["storage"]["capacity"].items()
    }
    # Mapped samples whose final BAM is complete (merge_bam writes its .md5 last): a rerun that
    # adds pairs or retunes a later stage makes none of their BAM stage's temporaries again.
    mapped_before = {
        sample for sample in MAPPED_SAMPLES if os.path.exists(final_bam(sample, ".md5"))
    }
    uses = setup_uses(SETUP_SIZES)
    for sample in MAPPED_SAMPLES:
        reads = sample_reads(sample)
        made = sample in mapped_before
        uses += sample_uses(file_bytes(reads), COHORT_SHAPE, RULE_TIERS, made)
        if sample in COHORT.bam_sources and not made:
            uses += conversion_uses(file_bytes(reads), RULE_TIERS)
    uses += sv_uses(
        [sv_bam_bytes(SV_PARSED[name]) for name in SV_PARSED], COHORT_SHAPE, RULE_TIERS
    )
    # The reference's copy on the cache tier: what it will be once built, or its files.
    if REFERENCE_BUILD_BYTES.keys() & SETUP_SIZES.keys():
        reference_bytes = sum(REFERENCE_BUILD_BYTES.values())
    else:
        reference_bytes = file_bytes(reference_files(REFERENCE))
    peak = peaks(uses, reference_bytes)
    if MAIN_PROCESS:
        print(plan_table(uses, peak, capacity, TIER_PATHS), file=sys.stderr)
        if mapped_before:
            print(
                f"  ({len(mapped_before)} of {len(MAPPED_SAMPLES)} mapped sample(s) have their final BAM: "
                "counted with it only)",
                file=sys.stderr,
            )
    REFUSALS.extend(over_capacity(peak, capacity))
    return peak


try:
    PLANNED_PEAKS = storage_plan()
except ValueError as error:
    raise WorkflowError(f"config storage.capacity: {error}") from None
shell.prefix(job_shell_prefix(PLANNED_PEAKS))

# Genomon's stages and their job counts for the whole run (a dry run runs no hooks: printed here).
if MAIN_PROCESS:
    print(
        stage_table(
            COHORT_SHAPE,
            RULE_TIERS,
            config["priorities"],
            {rule.name: job_threads(rule.name) for rule in RULES if rule.threads},
            LOCAL_CORES,
        ),
        file=sys.stderr,
    )
    # On PJM whole nodes are charged: the node-hours of the stages with and without packing.
    if CLUSTER in ("pjm", "pjm-allocation"):
        print(node_hours_table(COHORT_SHAPE), file=sys.stderr)
    # A small genome's regions cut for the mutation stage: the same cut on every run of this
    # reference and config (regions.min_mutation_regions), whatever its --cores or profile.
    if PAIRS and len(MUTATION_REGIONS) > sum(
        not region.is_unmapped for region in REGIONS
    ):
        print(
            f"  mutation stage: the genome's regions cut into {len(MUTATION_REGIONS)} pieces "
            "(regions.min_mutation_regions; the same on any --cores or profile)",
            file=sys.stderr,
        )


# The input files this run's samples are mapped from, recorded when a run starts (rules/hooks.smk):
# the next plan names each one that changed since, and whether its reads are the same.
INPUTS_RECORD = f"{LOG_DIR}/inputs_held.json"
INPUTS_HELD = (
    held_inputs(
        dict.fromkeys(
            path for sample in MAPPED_SAMPLES for path in sample_reads(sample)
        )
    )
    if MAIN_PROCESS
    else {}
)
if MAIN_PROCESS:
    CHANGED_INPUTS = changed_inputs(read_record(INPUTS_RECORD), INPUTS_HELD)
    if CHANGED_INPUTS:
        print(
            "Input files changed since the last run (their samples are mapped again):\n"
            + "\n".join(CHANGED_INPUTS),
            file=sys.stderr,
        )
    # The genes: what the annotation stage (and pmsignature) read, or why there is none.
    if PAIRS:
        print(f"  gene annotation: {ANNOTATION.note}", file=sys.stderr)
        if (
            not PMSIGNATURE_OWN_GENES
            and ANNOTATION.genes.name is None
            and any(
                config[f"pmsignature_{mode}"]["enable"]
                for mode in pmsignature_plan.MODES
            )
        ):
            print(
                "  pmsignature: left out (it needs genes: gene_annotation or pmsignature.annotation)",
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


# Snakemake's own directory of the working directory: each clean site's score computed once.
PANEL_SCORE_CACHE = ".snakemake/genomon-smk/panel-scores.json"


def eb_pval_fix(key, best_score):
    """The line that sets the largest --eb_pval a panel passes: one option of the string (config
    README, 'Single options'), or the whole string where a config file writes it out."""
    value = panel_power.reachable_eb_pval(best_score)
    if value is None:
        return None
    if any(
        isinstance(
            value_at(
                yaml.safe_load(Path(name).read_text()) or {}, ("mutation_util", key)
            ),
            str,
        )
        for name in CONFIG_FILES
    ):
        merged = merged_options(config["mutation_util"][key], {"--eb_pval": value})
        return f'write mutation_util: {{{key}: "{merged}"}} in {CONFIG_FILE}'
    return f"add `mutation_util: {{{key}: {{--eb_pval: {value:g}}}}}` to {CONFIG_FILE}"


def panel_warnings():
    """Warnings about each pair's panel, printed with the plan (see genomon_smk.plan.panel_power),
    as PlanWarnings about the pair's tumor."""
    genome_length = sum(i.end - i.start for r in REGIONS for i in r.intervals) or 1
    messages = []
    for pair in COHORT.pairs:
        if not pair.panel:
            continue
        members = COHORT.panels[pair.panel]
        own = panel_power.own_sample_warning(
            pair.tumor, pair.normal, pair.panel, members
        )
        messages += [PlanWarning(own, frozenset([pair.tumor]))] if own else []
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
            panel_power.best_clean_site_score(
                len(members), panel_depth, tumor_depth, cache=PANEL_SCORE_CACHE
            ),
            threshold,
        )
        message = panel_power.warning(
            check, f"config mutation_util.{key}", eb_pval_fix(key, check.best_score)
        )
        messages += [PlanWarning(message, frozenset([pair.tumor]))] if message else []
    return messages


def pjm_storage_warnings():
    """profiles/pjm submits every job with pjsub: its `cluster: pjm` puts profiles/pjm/storage.yaml
    under the config; without those tiers (a --config replacing the profile's, or a config that
    overrides them) node-local temporaries would sit on the global file system and every job
    would read the reference from it, without LLIO."""
    # The profile says where jobs run (config `cluster`; a profile's pjm_rscgrp resource when a
    # --config replaced the profile's config entry: snakemake_adapter.cluster_kind).
    if CLUSTER != "pjm":
        return []
    places = config["storage"]
    gaps = []
    if places["reference_staging"] != "llio_transfer":
        gaps.append("storage.reference_staging is not llio_transfer")
    if "PJM_LOCALTMP" not in (places["paths"]["node_local"] or ""):
        gaps.append("storage.paths.node_local is not $PJM_LOCALTMP")
    if not gaps:
        return []
    if config["cluster"] == "pjm":
        hint = "your config overrides profiles/pjm/storage.yaml: drop those keys to use LLIO"
    else:
        hint = (
            "config cluster is not pjm (a --config on the command line replaces the profile's "
            "`config: {cluster: pjm}`): add cluster=pjm to your --config"
        )
    return [
        f"WARNING: PJM jobs, but {' and '.join(gaps)}: node-local temporaries and the reference stay "
        f"on the global file system. {hint}"
    ]


def sv_annotation_warnings():
    """sv_filt.grc against the reference's contig names, when SVs are detected."""
    problem = SV_PAIRS and sv_annotation_naming_problem(
        [name for name, _ in CONTIGS], config["sv_filt"]["grc"]
    )
    if not problem:
        return []
    return [f"warning: {config_key_problem(('sv_filt', 'grc'), problem)}"]


def pmsignature_warnings():
    warning = pmsignature_plan.skipped_warning(config, PMSIGNATURE_CASES)
    fitted = sum(
        case in pmsignature_plan.drawn_cases(config["paplot"])
        for case in PMSIGNATURE_CASES
    )
    return ([warning] if warning else []) + [
        f"warning: {config_key_problem(key, message)}"
        for key, message in pmsignature_plan.signum_warnings(PMSIGNATURE, fitted)
    ]


# Printed now and repeated at the end of the run (rules/console.smk), where they are not scrolled away.
PLAN_WARNINGS = (
    panel_warnings()
    + [
        PlanWarning(message)
        for message in imported_name_warnings(COHORT)
        + panel_normal_warnings(COHORT)
        + pjm_storage_warnings()
        + sv_annotation_warnings()
        + pmsignature_warnings()
    ]
    if MAIN_PROCESS
    else []
)
for warning in PLAN_WARNINGS:
    print(warning.text, file=sys.stderr)
# Every problem of this pass refused together, the warnings above with them.
refuse_if_any([warning.text for warning in PLAN_WARNINGS])
