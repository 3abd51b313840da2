"""The workflow's rules and the facts about each, written once: its Genomon stage, how many jobs it
has for a cohort, its default Snakemake priority, the storage tiers it writes and what one job
asks a cluster for. The stage plan, the storage plan, the utilisation timeline, the cohort
planner and the config's defaults read them from here; tests check that every rule of the
workflow is in the table and nothing else is, and that every rule's job count is the count of
Snakemake's own DAG in every .test scenario (tests/test_stage_plan.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class CohortShape:
    """The numbers that fix the DAG's size: mapped samples, pairs, chunks per sample, regions
    (markdup, the unmapped region included), mutation regions (identify mutations: without it),
    the samples whose split waits for a staggered start, Genomon's [bam_import] samples, the
    BAMs of its [bam_tofastq] samples (those samples are counted in `samples`: they are mapped),
    the samples whose QC runs (None: all; mapped ones: those with read-pair and duplicate
    checks), the set-up rules that still have to build their files into resources_dir (one job
    each; none when the reference is used in place or was built by an earlier run), what the
    SV stage parses, merges and filters, and pmsignature's fits."""

    samples: int
    pairs: int
    chunks: int
    regions: int
    mutation_regions: int
    staggered: int = 0
    imported: int = 0
    converted: int = 0
    qc_samples: int | None = None
    mapped_qc_samples: int | None = None
    to_build: frozenset[str] = frozenset()
    # SV detection: the samples and panel BAMs GenomonSV parses, the panels it merges, the pairs.
    sv_samples: int = 0
    sv_panels: int = 0
    sv_pairs: int = 0
    # pmsignature: the K values of its ind and full modes that run (none without a drawn table).
    pmsignature_ind: int = 0
    pmsignature_full: int = 0
    # Gene annotation: whether each pair's results are annotated (rules/annotation.smk).
    annotated: bool = False

    @property
    def qc(self) -> int:
        """Samples whose QC runs (every sample, imported ones included, unless a [qc] section names them)."""
        return self.samples + self.imported if self.qc_samples is None else self.qc_samples

    @property
    def mapped_qc(self) -> int:
        return self.samples if self.mapped_qc_samples is None else self.mapped_qc_samples


@dataclass(frozen=True)
class Per:
    """What a rule has one job per: the stage plan's words for it and the count in a cohort (a
    function of the cohort's shape and the rule's name)."""

    label: str
    count: Callable[[CohortShape, str], int]


RUN = Per("run", lambda c, _: 1)
RUN_WITH_MAP_JOBS = Per("run with map jobs", lambda c, _: int(c.samples > 0))  # only map jobs read the region table
RUN_READING_REFERENCE = Per("run reading reference", lambda c, _: int(c.samples + c.pairs > 0))
TO_BUILD = Per("file to build", lambda c, rule: int(rule in c.to_build))
STAGGERED_SAMPLE = Per("staggered sample", lambda c, _: c.staggered)
CONVERTED_BAM = Per("bam_tofastq BAM", lambda c, _: c.converted)
IMPORTED_SAMPLE = Per("imported sample", lambda c, _: c.imported)
SAMPLE = Per("sample", lambda c, _: c.samples)
SAMPLE_CHUNK = Per("sample x chunk", lambda c, _: c.samples * c.chunks)
SAMPLE_REGION = Per("sample x region", lambda c, _: c.samples * c.regions)
PAIR = Per("pair", lambda c, _: c.pairs)
ANNOTATED_PAIR = Per("annotated pair", lambda c, _: c.pairs if c.annotated else 0)
PAIR_REGION = Per("pair x mutation region", lambda c, _: c.pairs * c.mutation_regions)
SV_SAMPLE = Per("sv sample", lambda c, _: c.sv_samples)
SV_PANEL = Per("sv panel", lambda c, _: c.sv_panels)
SV_PAIR = Per("sv pair", lambda c, _: c.sv_pairs)
QC_SAMPLE = Per("qc sample", lambda c, _: c.qc)
MAPPED_QC_SAMPLE = Per("mapped qc sample", lambda c, _: c.mapped_qc)
QC_RUN = Per("qc run", lambda c, _: int(c.qc > 0))  # the report of every QC sample, if any
SV_QC_RUN = Per("sv qc run", lambda c, _: int(c.qc > 0 and c.sv_pairs > 0))  # the report's SV tables
# Post-analysis: one merge job per mode that has something to merge; the report when any has.
MUTATION_RUN = Per("mutation run", lambda c, _: int(c.pairs > 0))
SV_RUN = Per("sv run", lambda c, _: int(c.sv_pairs > 0))
POST_ANALYSIS_RUN = Per("post-analysis run", lambda c, _: int(c.pairs > 0 or c.sv_pairs > 0 or c.qc > 0))
PMSIGNATURE_RUN = Per("pmsignature run", lambda c, _: int(c.pmsignature_ind + c.pmsignature_full > 0))
IND_K = Per("ind K", lambda c, _: c.pmsignature_ind)
FULL_K = Per("full K", lambda c, _: c.pmsignature_full)


# A config value that lets the run choose (`<key>.threads`, `regions.min_mutation_regions`).
AUTO = "auto"


def auto_count(configured: int | str, cores: int | None, share: int, most: int, without_cores: int) -> int:
    """A config count: the configured number, or for AUTO a local run's cores shared among
    `share` jobs, at least 1, at most `most`; `without_cores` where the cores are unknown (None:
    a cluster)."""
    if configured != AUTO:
        return int(configured)
    if not cores:
        return without_cores
    return max(1, min(most, cores // max(1, share)))


@dataclass(frozen=True)
class Threads:
    """A rule whose jobs' threads the config sets (`<config_key>.threads`: a number, the same for
    every job everywhere; or "auto"). With "auto", on a cluster (one job per submission, and a
    cluster job's own Snakemake must arrive at its submission's count) a job has `cluster`
    threads; on a local run the run's cores are shared among the rule's jobs that can run side by
    side (its job count for the cohort), at least 1, at most `most`; or, with `all_local_cores`,
    a job takes the run's cores, at most `most` (on 2 cores the jobs run one after another)."""

    config_key: str
    cluster: int
    most: int
    all_local_cores: bool = False

    def choose(self, configured: int | str, jobs: int, cores: int | None) -> int:
        """A job's threads: the configured number, or for "auto" by the cores of a local run
        (None: a cluster, or cores unknown)."""
        share = 1 if self.all_local_cores else jobs
        return auto_count(configured, cores, share=share, most=self.most, without_cores=self.cluster)


@dataclass(frozen=True)
class Node:
    """A whole compute node as PJM allocates it and Fugaku charges it (node-hours)."""

    cores: int
    cmgs: int  # core memory groups: a CMG's cores share its memory
    mem_mb: int  # what jobs can use

    @property
    def cmg_cores(self) -> int:
        return self.cores // self.cmgs


# A64FX: 48 compute cores in 4 CMGs of 12, 32 GiB HBM2 (8 GiB per CMG), about 28 GiB usable.
FUGAKU_NODE = Node(cores=48, cmgs=4, mem_mb=28 * 1024)


@dataclass(frozen=True)
class NodeShare:
    """What one job of a rule takes of a whole PJM node when profiles/pjm packs the rule's jobs
    onto nodes (a Snakemake job group of `per_node` jobs is one PJM job): its cores (profiles/pjm
    sets them with set-threads where they differ from the rule's own) and memory. Jobs per node:
    as many as both fit."""

    threads: int
    mem_mb: int

    def per_node(self, node: Node = FUGAKU_NODE) -> int:
        return max(1, min(node.cores // self.threads, node.mem_mb // self.mem_mb))


# The Fugaku paper's layout: map and markdup jobs one per CMG (12 cores, a CMG's 7 GB: bwa mem's
# GRCh37 index is about 5.5 GB), four to a node.
ONE_PER_CMG = NodeShare(threads=FUGAKU_NODE.cmg_cores, mem_mb=7000)
# Short one-thread jobs (tables, filters, summaries, QC): 14 to a node by memory.
SHORT_JOB = NodeShare(threads=1, mem_mb=2000)


@dataclass(frozen=True)
class Rule:
    name: str
    stage: str  # Genomon's stage, as the stage plan, the timeline and the planner name it
    per: Per  # what the rule has one job per: its jobs in a cohort (`jobs`)
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
    # Threads the config chooses (`<key>.threads`, "auto" by default); None: the rule's own.
    threads: Threads | None = None
    # On PJM, the rule's jobs packed onto whole nodes (profiles/pjm's job groups); None: a job
    # holds its node alone (long jobs, local rules, jobs with no cluster job).
    node_share: NodeShare | None = None

    def __post_init__(self):
        if not isinstance(self.per, Per):
            raise TypeError(f"rule {self.name}: `per` is a Per (rules.SAMPLE, rules.PAIR, ...), not {self.per!r}")

    def jobs(self, shape: CohortShape) -> int:
        """The rule's jobs in a full run of a cohort of this shape (0: none)."""
        return self.per.count(shape, self.name)

    def job_threads(self, config: dict, shape: CohortShape, cores: int | None) -> int:
        """One job's threads from the config's `<key>.threads` (Threads.choose): cores are a
        local run's (None on a cluster)."""
        if self.threads is None:
            raise ValueError(f"rule {self.name}: its threads are its own, not the config's")
        return self.threads.choose(config[self.threads.config_key]["threads"], self.jobs(shape), cores)

    @property
    def resources(self) -> dict[str, int]:
        return {key: value for key, value in (("mem_mb", self.mem_mb), ("runtime", self.runtime)) if value}


# In pipeline order. Map jobs have the lowest priority, so a pair's later stages overtake the
# next pair's map jobs and the map jobs fill the gaps (the Fugaku paper's low-priority queue).
RULES: tuple[Rule, ...] = (
    # Set-up into resources_dir (rules/reference.smk): jobs only while something is to be built.
    Rule("reference_fasta", "reference set-up", TO_BUILD, runtime=60),
    Rule("reference_fai", "reference set-up", TO_BUILD, runtime=30),
    # bwa index of a human genome: about an hour and 5 GB (bwtsw).
    Rule("reference_bwa_index", "reference set-up", TO_BUILD, mem_mb=8000, runtime=240),
    Rule("simple_repeat_db", "reference set-up", TO_BUILD, mem_mb=4000, runtime=30),
    # pmsignature's background: 1e7 random positions, about half a minute on GRCh37 (docs/pmsignature.md).
    Rule("pmsignature_background", "reference set-up", TO_BUILD, mem_mb=4000, runtime=30),
    Rule("bam_to_fastq", "bam tofastq", CONVERTED_BAM, 10, "bam_to_fastq", ("output", "temp")),
    Rule("import_bam", "bam import", IMPORTED_SAMPLE),
    Rule("stagger_start", "split files", STAGGERED_SAMPLE),
    Rule("split_fastq", "split files", SAMPLE, 10, "split_fastq", ("output",), node_share=SHORT_JOB),
    # Only map jobs read the region table; map and mutation jobs read the staged reference: a
    # cohort of imported BAMs has neither job.
    Rule("region_table", "map", RUN_WITH_MAP_JOBS),
    Rule("stage_reference", "map", RUN_READING_REFERENCE),
    # bwa scales with threads (and the scatter's bamsort sorts on them), and one bwa on all of a
    # machine's cores holds one copy of the index where side-by-side jobs hold one each: on 2
    # cores, one 2-thread bwa spent 10-40 % less CPU than two 1-thread ones on the same reads
    # (docs/benchmarks.md). markdup's first pass is one thread beside bammerge, the rest only
    # recompress: its jobs share the cores, so a sample's markdup jobs run side by side.
    Rule("map_reads", "map", SAMPLE_CHUNK, 0, "map", ("output", "temp"), mem_mb=10600, runtime=120,
         threads=Threads("map", cluster=2, most=8, all_local_cores=True), node_share=ONE_PER_CMG),
    Rule("gather_map", "map", SAMPLE, 10, "map", ("output",)),
    Rule("markdup", "markdup", SAMPLE_REGION, 10, "markdup", ("output", "temp"), mem_mb=10600, runtime=360,
         threads=Threads("markdup", cluster=2, most=4), node_share=ONE_PER_CMG),
    Rule("merge_bam", "merge bam", SAMPLE, 30, "merge_bam", ("output", "temp"), mem_mb=4000, runtime=240,
         node_share=NodeShare(threads=1, mem_mb=4000)),
    Rule("identify_mutations", "identify mutations", PAIR_REGION, 20, "identify_mutations",
         ("output", "temp"), mem_mb=5300, runtime=180, node_share=NodeShare(threads=1, mem_mb=5300)),
    Rule("merge_mutation", "merge mutation", PAIR, 30, "merge_mutation", ("output", "temp"), node_share=SHORT_JOB),
    # mutil filter and the VCFs, apart from the merge: retuning the filter reruns only this.
    Rule("filter_mutation", "merge mutation", PAIR, 30, node_share=SHORT_JOB),
    Rule("mutation_summary", "merge mutation", PAIR, node_share=SHORT_JOB),
    # ANNOVAR's refGene columns added to the merged calls (kept): changing the genes reruns only this
    # and what reads the results, no calling.
    Rule("annotate_mutation", "gene annotation", ANNOTATED_PAIR, 30, node_share=SHORT_JOB),
    # GenomonSV parse reads a whole BAM in one process (hours on a 100 GB WGS BAM).
    Rule("sv_parse", "sv detection", SV_SAMPLE, 20, "sv_parse", ("output", "temp"), runtime=720),
    Rule("sv_merge_control", "sv detection", SV_PANEL),
    Rule("sv_filt", "sv detection", SV_PAIR, 30, "sv_filt", ("output", "temp"), runtime=240),
    Rule("sv_utils_filter", "sv detection", SV_PAIR, node_share=SHORT_JOB),
    Rule("sv_vcf", "sv detection", SV_PAIR, node_share=SHORT_JOB),
    Rule("sv_summary", "sv detection", SV_PAIR, node_share=SHORT_JOB),
    Rule("bam_stats", "qc", QC_SAMPLE, node_share=SHORT_JOB),
    Rule("read_pair_integrity", "qc", MAPPED_QC_SAMPLE, node_share=SHORT_JOB),
    Rule("coverage", "qc", QC_SAMPLE, node_share=SHORT_JOB),
    Rule("duplication_metrics", "qc", MAPPED_QC_SAMPLE, node_share=SHORT_JOB),
    Rule("sv_multiqc_tables", "qc", SV_QC_RUN),
    Rule("multiqc", "qc", QC_RUN),
    # Genomon's post-analysis (one job per mode, over the whole cohort) and its paplot report.
    Rule("post_analysis_mutation", "post analysis", MUTATION_RUN),
    Rule("post_analysis_sv", "post analysis", SV_RUN),
    Rule("post_analysis_qc", "post analysis", QC_RUN),
    # Genomon's pmsignature: the cohort's mutation positions, then one job per K and mode. A fit of
    # the paper-scale cohort (1,000 tumors x 5,000 SNVs) takes up to 43 CPU minutes at K = 6.
    Rule("pre_pmsignature", "pmsignature", PMSIGNATURE_RUN),
    Rule("pmsignature_ind", "pmsignature", IND_K, mem_mb=4000, runtime=120),
    Rule("pmsignature_full", "pmsignature", FULL_K, mem_mb=4000, runtime=120),
    Rule("paplot", "paplot", POST_ANALYSIS_RUN),
    Rule("utilisation_timeline", "qc", RUN),
)

# The rule that only names the run's final files; Snakemake counts it as one job.
TARGET_RULE = "all"
# The rule that names only what the set-up rules build (`snakemake ... setup`).
SETUP_TARGET = "setup"
# The rule that names every per-sample and per-pair result the cohort's end stages read (a run in
# batches: `snakemake cohort_results --batch cohort_results=i/n`, genomon_smk.plan.batches).
BATCH_TARGET = "cohort_results"
# It and its rule of one marker per pair (workflow/rules/batches.smk): jobs only in a batched run.
BATCH_RULES = frozenset({BATCH_TARGET, "pair_results"})
SETUP_STAGE = "reference set-up"
SETUP_RULES = frozenset(rule.name for rule in RULES if rule.stage == SETUP_STAGE)

FACTS = {rule.name: rule for rule in RULES}
# Genomon's stages in pipeline order.
STAGES: tuple[str, ...] = tuple(dict.fromkeys(rule.stage for rule in RULES))
# The configurable priorities (the config's `priorities` keys) and their defaults.
PRIORITIES: dict[str, int] = {rule.name: rule.priority for rule in RULES if rule.priority is not None}
# The config's storage.rules keys.
TIER_KEYS: tuple[str, ...] = tuple(dict.fromkeys(rule.tier_key for rule in RULES if rule.tier_key))


def pjm_packing(node: Node = FUGAKU_NODE) -> dict[str, dict]:
    """profiles/pjm's job groups, from the rule table: for each rule with a node share, its group
    (named after the rule: Snakemake names its group jobs RULE_RULE, PJM's smk-RULE_RULE), the group's jobs
    per node, and the threads and memory of one job in it."""
    return {rule.name: {"group": rule.name, "per_node": rule.node_share.per_node(node),
                        "threads": rule.node_share.threads, "mem_mb": rule.node_share.mem_mb}
            for rule in RULES if rule.node_share}
