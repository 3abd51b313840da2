"""The workflow's rules and the facts about each, written once: its Genomon stage, what it has one
job per, its default Snakemake priority, the storage tiers it writes and what one job asks a
cluster for. The stage plan, the
utilisation timeline, the cohort planner and the config's defaults read them from here; a test
checks that every rule of the workflow is in the table and nothing else is."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    name: str
    stage: str  # Genomon's stage, as the stage plan and the timeline name it
    per: str  # what the rule has one job per (see stage_plan.CohortShape.per)
    # The default of the config's priorities.<rule>; None: not configurable (Snakemake's 0).
    priority: int | None = None
    # The config's storage.rules key of the rule's files and the roles it has there (`output`,
    # `temp`); no key: it writes to output_dir (global). stage_reference writes the cache tier.
    tier_key: str | None = None
    tier_roles: tuple[str, ...] = ()
    # What one job asks a cluster for, from Genomon's qsub options (None: the profile's default):
    # memory in MB, run time in minutes (Slurm --time, PJM elapse).
    mem_mb: int | None = None
    runtime: int | None = None

    @property
    def resources(self) -> dict[str, int]:
        return {key: value for key, value in (("mem_mb", self.mem_mb), ("runtime", self.runtime)) if value}


# In pipeline order. Map jobs have the lowest priority, so a pair's later stages overtake the
# next pair's map jobs and the map jobs fill the gaps (the Fugaku paper's low-priority queue).
RULES: tuple[Rule, ...] = (
    # Set-up into resources_dir (rules/reference.smk): jobs only while something is to be built.
    Rule("reference_fasta", "reference set-up", "reference to build", runtime=60),
    Rule("reference_fai", "reference set-up", "reference .fai to build", runtime=30),
    # bwa index of a human genome: about an hour and 5 GB (bwtsw).
    Rule("reference_bwa_index", "reference set-up", "bwa index to build", mem_mb=8000, runtime=240),
    Rule("simple_repeat_db", "reference set-up", "repeat table to build", mem_mb=4000, runtime=30),
    # pmsignature's background: 1e7 random positions, about half a minute on GRCh37 (docs/pmsignature.md).
    Rule("pmsignature_background", "reference set-up", "background to build", mem_mb=4000,
         runtime=30),
    Rule("bam_to_fastq", "bam tofastq", "bam_tofastq BAM", 10, "bam_to_fastq", ("output", "temp")),
    Rule("import_bam", "bam import", "imported sample"),
    Rule("stagger_start", "split files", "staggered sample"),
    Rule("split_fastq", "split files", "sample", 10, "split_fastq", ("output",)),
    # Only map jobs read the region table; map and mutation jobs read the staged reference: a
    # cohort of imported BAMs has neither job.
    Rule("region_table", "map", "run with map jobs"),
    Rule("stage_reference", "map", "run reading reference"),
    Rule("map_reads", "map", "sample x chunk", 0, "map", ("output", "temp"), mem_mb=10600, runtime=120),
    Rule("gather_map", "map", "sample", 10, "map", ("output",)),
    Rule("markdup", "markdup", "sample x region", 10, "markdup", ("output", "temp"), mem_mb=10600, runtime=360),
    Rule("merge_bam", "merge bam", "sample", 30, "merge_bam", ("output", "temp"), mem_mb=4000, runtime=240),
    Rule("identify_mutations", "identify mutations", "pair x mutation region", 20, "identify_mutations",
         ("output", "temp"), mem_mb=5300, runtime=180),
    Rule("merge_mutation", "merge mutation", "pair", 30, "merge_mutation", ("output", "temp")),
    # mutil filter and the VCFs, apart from the merge: retuning the filter reruns only this.
    Rule("filter_mutation", "merge mutation", "pair", 30),
    Rule("mutation_summary", "merge mutation", "pair"),
    # GenomonSV parse reads a whole BAM in one process (hours on a 100 GB WGS BAM).
    Rule("sv_parse", "sv detection", "sv sample", 20, "sv_parse", ("output", "temp"), runtime=720),
    Rule("sv_merge_control", "sv detection", "sv panel"),
    Rule("sv_filt", "sv detection", "sv pair", 30, "sv_filt", ("output", "temp"), runtime=240),
    Rule("sv_utils_filter", "sv detection", "sv pair"),
    Rule("sv_vcf", "sv detection", "sv pair"),
    Rule("sv_summary", "sv detection", "sv pair"),
    Rule("bam_stats", "qc", "qc sample"),
    Rule("read_pair_integrity", "qc", "mapped qc sample"),
    Rule("coverage", "qc", "qc sample"),
    Rule("duplication_metrics", "qc", "mapped qc sample"),
    Rule("sv_multiqc_tables", "qc", "sv qc run"),
    Rule("multiqc", "qc", "qc run"),
    # Genomon's post-analysis (one job per mode, over the whole cohort) and its paplot report.
    Rule("post_analysis_mutation", "post analysis", "mutation run"),
    Rule("post_analysis_sv", "post analysis", "sv run"),
    Rule("post_analysis_qc", "post analysis", "qc run"),
    # Genomon's pmsignature: the cohort's mutation positions, then one job per K and mode. A fit of
    # the paper-scale cohort (1,000 tumors x 5,000 SNVs) takes up to 43 CPU minutes at K = 6.
    Rule("pre_pmsignature", "pmsignature", "pmsignature run"),
    Rule("pmsignature_ind", "pmsignature", "ind K", mem_mb=4000, runtime=120),
    Rule("pmsignature_full", "pmsignature", "full K", mem_mb=4000, runtime=120),
    Rule("paplot", "paplot", "post-analysis run"),
    Rule("utilisation_timeline", "qc", "run"),
)

# The rule that only names the run's final files; Snakemake counts it as one job.
TARGET_RULE = "all"
# The rule that names only what the set-up rules build (`snakemake ... setup`).
SETUP_TARGET = "setup"
SETUP_STAGE = "reference set-up"
SETUP_RULES = frozenset(rule.name for rule in RULES if rule.stage == SETUP_STAGE)

FACTS = {rule.name: rule for rule in RULES}
# Genomon's stages in pipeline order.
STAGES: tuple[str, ...] = tuple(dict.fromkeys(rule.stage for rule in RULES))
# The configurable priorities (the config's `priorities` keys) and their defaults.
PRIORITIES: dict[str, int] = {rule.name: rule.priority for rule in RULES if rule.priority is not None}
# The config's storage.rules keys.
TIER_KEYS: tuple[str, ...] = tuple(dict.fromkeys(rule.tier_key for rule in RULES if rule.tier_key))
