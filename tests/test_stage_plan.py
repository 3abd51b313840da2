"""The stage plan: job counts per Genomon stage from the config, and the same counts from
Snakemake's own DAG (the "Job stats" of a dry run)."""

import re
from dataclasses import replace

import pytest

from conftest import REPO, SCENARIO_DIRS, job_stats, parse_workflow, run_snakemake, write_config
from genomon_smk.plan.stage_plan import (
    STAGES,
    TARGET_RULE,
    CohortShape,
    rule_jobs,
    rule_tiers,
    stage_jobs,
    stage_of_rule,
    stage_table,
    stagger_delays,
    total_jobs,
)

TIERS = {
    "bam_to_fastq": {"output": "shared_tmp", "temp": "shared_tmp"},
    "split_fastq": {"output": "shared_tmp"},
    "map": {"output": "shared_tmp", "temp": "node_local"},
    "markdup": {"output": "shared_tmp", "temp": "shared_tmp"},
    "merge_bam": {"output": "global", "temp": "node_local"},
    "identify_mutations": {"output": "shared_tmp", "temp": "node_local"},
    "merge_mutation": {"output": "global", "temp": "node_local"},
    "sv_parse": {"output": "global", "temp": "node_local"},
    "sv_filt": {"output": "global", "temp": "node_local"},
}


def test_counts_scale_with_what_each_rule_has_a_job_per():
    small = rule_jobs(CohortShape(samples=2, pairs=1, chunks=8, regions=75, mutation_regions=74))
    large = rule_jobs(CohortShape(samples=200, pairs=100, chunks=8, regions=75, mutation_regions=74))
    assert small["map_reads"] == 16 and large["map_reads"] == 1600
    assert small["markdup"] == 150 and small["identify_mutations"] == 74 and large["identify_mutations"] == 7400
    assert small["multiqc"] == large["multiqc"] == 1 and small[TARGET_RULE] == 1
    # Per-sample and per-pair rules grow 100-fold, run-wide ones not at all.
    for rule in small:
        assert large[rule] in (small[rule], 100 * small[rule]), rule


def test_qc_follows_the_qc_selection_and_import_skips_the_mapping():
    shape = CohortShape(samples=2, pairs=1, chunks=4, regions=5, mutation_regions=4, imported=1, converted=3,
                        qc_samples=2, mapped_qc_samples=1)
    counts = rule_jobs(shape)
    assert (counts["bam_to_fastq"], counts["import_bam"], counts["split_fastq"], counts["merge_bam"]) == (3, 1, 2, 2)
    assert (counts["bam_stats"], counts["coverage"], counts["read_pair_integrity"], counts["multiqc"]) == (2, 2, 1, 1)
    # Without a [qc] section every sample, imported ones included; an empty one: no QC at all.
    assert rule_jobs(CohortShape(2, 1, 4, 5, 4, imported=1))["coverage"] == 3
    no_qc = rule_jobs(CohortShape(2, 1, 4, 5, 4, qc_samples=0, mapped_qc_samples=0))
    assert not {"bam_stats", "coverage", "multiqc", "read_pair_integrity"} & set(no_qc)


def test_stages_partition_the_rules_and_sum_to_the_total():
    shape = CohortShape(samples=6, pairs=2, chunks=5, regions=10, mutation_regions=9)
    counts = rule_jobs(shape)
    per_stage = stage_jobs(counts)
    assert list(per_stage) == [stage for stage, _ in STAGES]
    assert sum(per_stage.values()) + counts[TARGET_RULE] == total_jobs(shape) == sum(counts.values())
    assert len(stage_of_rule()) == sum(len(rules) for _, rules in STAGES)  # no rule in two stages
    assert per_stage["map"] == 1 + 1 + 6 * 5 + 6


def test_set_up_jobs_only_for_what_is_still_to_build():
    shape = CohortShape(samples=2, pairs=1, chunks=4, regions=5, mutation_regions=4)
    assert not {"reference_fasta", "reference_bwa_index", "simple_repeat_db"} & set(rule_jobs(shape))
    building = rule_jobs(replace(shape, to_build=frozenset({"reference_bwa_index", "simple_repeat_db"})))
    assert building["reference_bwa_index"] == building["simple_repeat_db"] == 1 and "reference_fasta" not in building
    assert stage_jobs(building)["reference set-up"] == 2
    assert rule_tiers("reference_bwa_index", TIERS) == "global (resources_dir)"


def test_tiers_follow_the_config():
    assert rule_tiers("map_reads", TIERS) == "shared_tmp, temp node_local"
    moved = dict(TIERS, map={"output": "global", "temp": "shared_tmp"})
    assert rule_tiers("map_reads", moved) == "global, temp shared_tmp"
    assert rule_tiers("stage_reference", TIERS) == "cache" and rule_tiers("multiqc", TIERS) == "global"


def test_table_names_every_stage_rule_and_priority():
    everything = frozenset(rule for _, rules in STAGES for rule, _ in rules)
    table = stage_table(CohortShape(4, 2, 3, 6, 5, staggered=2, imported=1, converted=1, to_build=everything,
                                    sv_samples=5, sv_panels=1, sv_pairs=2, pmsignature_ind=5, pmsignature_full=2,
                                    annotated=True),
                        TIERS, {"map_reads": 0, "markdup": 10})
    for stage, rules in STAGES:
        assert re.search(rf"^  {re.escape(stage)} +\d+$", table, flags=re.M), stage
        for rule, unit in rules:
            assert re.search(rf"^    {rule} +{re.escape(unit)} +\d+ +\d+  \S", table, flags=re.M), rule
    assert re.search(r"^    markdup +sample x region +24 +10  shared_tmp, temp shared_tmp$", table, flags=re.M)
    # Threads after the table, for the rules with jobs in this cohort.
    threads = stage_table(CohortShape(4, 2, 3, 6, 5), TIERS, {}, {"map_reads": 2, "markdup": 2, "bam_to_fastq": 1})
    assert threads.splitlines()[-1] == "Threads per job (cluster jobs): map_reads 2, markdup 2"
    # A rule without jobs (no staggered start) is not listed.
    without = stage_table(CohortShape(4, 2, 3, 6, 5), TIERS, {})
    assert "stagger_start" not in without and "import_bam" not in without and "bam_to_fastq" not in without
    assert "reference_bwa_index" not in without  # nothing to set up


def printed_plan(output: str) -> tuple[dict[str, int], dict[str, int]]:
    """Jobs per stage and per rule from the stage plan the workflow prints."""
    block = output[output.index("Stage plan:"):]
    stages, rules = {}, {}
    names = {stage for stage, _ in STAGES}
    for line in block.splitlines()[2:]:
        if not line.startswith("  "):
            break
        rule = re.match(r"^    (\w+) .* (\d+) +\d+  ", line)
        stage = re.match(r"^  (\S.*?) +(\d+)$", line)
        if rule:
            rules[rule.group(1)] = int(rule.group(2))
        elif stage and stage.group(1) in names:
            stages[stage.group(1)] = int(stage.group(2))
    return stages, rules


@pytest.mark.workflow
def test_printed_stage_plan_matches_snakemakes_job_stats(tmp_path, testdata):
    # Two pairs (one with the panel) and a shape other than the .test config's.
    (tmp_path / "pairs.tsv").write_text("tumor\tnormal\tpanel\ntumor\tnormal\tpanel1\npon1\tpon2\t\n")
    config = write_config(
        tmp_path, testdata, pairs=str(tmp_path / "pairs.tsv"), split={"chunks": 3},
        regions={"max_length": 25_000, "pack_bp": 0}, stagger_minutes=1,
        resources_dir=str(tmp_path / "resources"), pmsignature_full={"enable": True, "signum_max": 3},
        pmsignature_ind={"enable": True}, pmsignature={"annotation": str(REPO / ".test" / "config-genomon-sheet" / "genes.gtf")},
        gene_annotation=str(testdata / "genes.gtf"),
    )
    result = run_snakemake(config, "-n", "--quiet", "rules")
    stages, rules = printed_plan(result.stderr)
    snakemake = job_stats(result.stdout + result.stderr)
    unknown = set(snakemake) - set(stage_of_rule()) - {TARGET_RULE}
    assert not unknown, f"rules without a stage in genomon_smk.plan.stage_plan.STAGES: {sorted(unknown)}"
    assert rules == {rule: count for rule, count in snakemake.items() if rule != TARGET_RULE}
    assert stages == stage_jobs(snakemake)
    # 5 samples x 3 chunks; chr1 80 kb, chr2 60 kb, chr3 40 kb cut at 25 kb: 4 + 3 + 2 regions + unmapped.
    assert snakemake["map_reads"] == 15 and snakemake["markdup"] == 5 * 10 and snakemake["identify_mutations"] == 2 * 9
    assert snakemake["stagger_start"] == 2  # pon1 and pon2, the second pair's samples
    assert snakemake["annotate_mutation"] == 2  # the generated genome's genes: one job per pair
    # The .test config's map.threads and markdup.threads (2), on the run's 2 cores.
    assert "\nThreads per job (a local run on 2 core(s)): map_reads 2, markdup 2\n" in result.stderr
    # pmsignature: its background once, the cohort's positions, one job per K = 2..6 and 2..3.
    assert [snakemake[rule] for rule in ("pmsignature_background", "pre_pmsignature", "pmsignature_ind",
                                         "pmsignature_full")] == [1, 1, 5, 2]


def test_stagger_delays_follow_the_pair_order_and_a_samples_first_pair():
    pairs = [("t1", "n1"), ("t2", "n2"), ("t3", "n1"), ("t4", None)]
    assert stagger_delays(pairs, 5) == {"t2": 300, "n2": 300, "t3": 600, "t4": 900}
    assert stagger_delays(pairs, 0) == {}


def header_only_bam(path, fai):
    """An indexed BAM without reads whose header is the reference's: enough for a dry run. A
    comment line names the file, so that no two are the same data (which the workflow refuses)."""
    import pysam

    contigs = [line.split("\t")[:2] for line in fai.read_text().splitlines()]
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {"HD": {"VN": "1.6"}, "SQ": [{"SN": name, "LN": int(length)} for name, length in contigs],
              "CO": [f"stands in for {path}"]}
    with pysam.AlignmentFile(str(path), "wb", header=header):
        pass
    pysam.index(str(path))


@pytest.mark.workflow
def test_stage_plan_counts_imported_and_converted_samples_as_snakemake_does(tmp_path, testdata):
    """The Genomon-sheet scenario (.test/config-genomon-sheet: [bam_import], [bam_tofastq], [qc],
    [sv_detection] ...), its BAMs stood in for by header-only ones and pon3 given as two BAMs."""
    import shutil

    (tmp_path / "data").symlink_to(testdata, target_is_directory=True)
    scenario = tmp_path / "config-genomon-sheet"
    shutil.copytree(REPO / ".test" / "config-genomon-sheet", scenario)
    sheet = scenario / "sample_sheet.csv"
    fai = testdata / "ref" / "genome.fa.fai"
    for bam in re.findall(r"\.\./results/\S+?\.bam", sheet.read_text()):
        header_only_bam(scenario / bam, fai)
    header_only_bam(tmp_path / "other" / "pon3.bam", fai)
    converted = "pon3,../results/bam/pon3/pon3.markdup.bam"
    assert converted in sheet.read_text()
    sheet.write_text(sheet.read_text().replace(converted, converted + ";../other/pon3.bam"))
    result = run_snakemake(scenario / "config.yaml", "-n", "--quiet", "rules")
    stages, rules = printed_plan(result.stderr)
    snakemake = job_stats(result.stdout + result.stderr)
    assert rules == {rule: count for rule, count in snakemake.items() if rule != TARGET_RULE}
    assert stages == stage_jobs(snakemake)
    # One conversion per BAM, the normal imported, not mapped; [qc] names tumor and normal only.
    assert (snakemake["bam_to_fastq"], snakemake["import_bam"], snakemake["split_fastq"], snakemake["merge_bam"]) == (2, 1, 4, 4)
    assert (snakemake["bam_stats"], snakemake["coverage"]) == (2, 2)
    assert snakemake["read_pair_integrity"] == snakemake["duplication_metrics"] == 1  # the imported normal has none
    # [sv_detection]: one pair of each of Genomon's cases; the panels' members parsed once each
    # (pon1..pon3, also tumors there) and both panels merged.
    assert (snakemake["sv_parse"], snakemake["sv_merge_control"], snakemake["sv_filt"]) == (4, 2, 4)
    # Post-analysis: one merge per kind of table, and the report.
    assert [snakemake[rule] for rule in ("post_analysis_mutation", "post_analysis_sv", "post_analysis_qc", "paplot")] == [1] * 4


# Cohorts of imported BAMs only, as Genomon sheets (their BAMs stood in for as above): no map job,
# so no region table; without a pair no mutation job either, so no staged reference.
IMPORTED_ONLY = {
    "imported-pair": "[bam_import]\nnormal,../results/bam/normal/normal.markdup.bam\n"
                     "pon1,../results/bam/pon1/pon1.markdup.bam\n\n[mutation_call]\npon1,normal,None\n",
    "imported-qc-only": "[bam_import]\nnormal,../results/bam/normal/normal.markdup.bam\n",
}


def scenario_copy(tmp_path, testdata, name):
    """A .test scenario (or an IMPORTED_ONLY sheet in the Genomon-sheet scenario) beside a `data`
    link, with header-only BAMs for the default scenario's results that it names; its config."""
    import shutil

    (tmp_path / "data").symlink_to(testdata, target_is_directory=True)
    scenario = tmp_path / "scenario"
    shutil.copytree(REPO / ".test" / ("config-genomon-sheet" if name in IMPORTED_ONLY else name), scenario)
    if name in IMPORTED_ONLY:
        (scenario / "sample_sheet.csv").write_text(IMPORTED_ONLY[name])
    for bam in {bam for path in scenario.iterdir() if path.suffix in (".yaml", ".csv", ".tsv")
                for bam in re.findall(r"\.\./results/\S+?\.bam", path.read_text())}:
        header_only_bam(scenario / bam, testdata / "ref" / "genome.fa.fai")
    return scenario / "config.yaml"


@pytest.mark.workflow
@pytest.mark.parametrize("name", [*SCENARIO_DIRS, *IMPORTED_ONLY])
def test_stage_plan_totals_equal_snakemakes_in_every_scenario(tmp_path, testdata, name):
    """The stage plan of a first run counts, rule by rule, the jobs of Snakemake's dry run."""
    result = run_snakemake(scenario_copy(tmp_path, testdata, name), "-n", "--quiet", "rules")
    stages, rules = printed_plan(result.stderr)
    snakemake = job_stats(result.stdout + result.stderr)
    assert rules == {rule: count for rule, count in snakemake.items() if rule != TARGET_RULE}
    assert stages == stage_jobs(snakemake)
    total = re.search(r"^  total \(with rule all\) +(\d+)", result.stderr, flags=re.M)
    assert int(total.group(1)) == sum(snakemake.values())


@pytest.mark.workflow
def test_a_small_genomes_mutation_cut_is_the_same_on_any_cores_or_profile(tmp_path, testdata):
    """regions.min_mutation_regions auto: the cut is the genome's (the test genome is too small to
    cut), the same with --cores 1, 4 and on a cluster; a number cuts, and the plan says so."""
    regions = {"max_length": 100_000, "pack_bp": 0}  # the .test contigs: three regions
    config = write_config(tmp_path, testdata, regions=regions)
    cuts = [
        list(parse_workflow(config, cores=cores).globals["MUTATION_REGIONS"].values())
        for cores in (1, 4)
    ]
    cluster = parse_workflow(config, command_line={"cluster": "slurm"}).globals["MUTATION_REGIONS"]
    assert cuts[0] == cuts[1] == list(cluster.values()) and len(cuts[0]) == 3
    fixed = write_config(tmp_path / "fixed", testdata, regions={**regions, "min_mutation_regions": 4})
    number = run_snakemake(fixed, "-n").stderr
    assert "(5 for mutations)" in number and "cut into 5 pieces" in number
