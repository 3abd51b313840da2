"""Every Genomon analysis pattern and input class as a scenario config under .test/, run end to
end as a user replays it (`--configfile .test/config-<name>/config.yaml`), its calls scored
against the generator's truth.

Scenarios that do not test the mapping reuse the default scenario's mapped samples
(conftest.reuse_mapped_samples), so that only the stages they test run. The normal's forms (no
normal, a shared normal, a panel of BAM files) are in tests/test_scenarios_normals.py: another
pytest-xdist worker runs them beside these.
"""

import collections
import json
import re

import pysam
import pytest

from conftest import SCENARIO_DIRS, retuned_jobs, run_scenario, run_snakemake
from test_mutation_workflow import called, result_rows, truth_sites
from test_pmsignature_stage import check_pmsignature
from test_post_analysis_workflow import check_paplot, check_post_analysis, with_rows
from test_sv import planted_svs, score, sv_file, sv_rows

pytestmark = pytest.mark.workflow
PANEL = ["pon1", "pon2", "pon3"]
EB_COLUMN = "P-value(EBCall)"


def result(results, tumor, suffix):
    return results / "mutation" / tumor / f"{tumor}.genomon_mutation.result{suffix}"


def clonal_snvs(testdata):
    return {(c, s) for c, s, kind, vaf in truth_sites(testdata, "somatic") if kind == "SNV" and vaf >= 0.2}


def snv_recall(rows, truth):
    snvs = {(row["Chr"], int(row["Start"])) for row in rows if row["Ref"] != "-" and row["Alt"] != "-"}
    return len(snvs & truth) / len(truth)


def vcf_samples(path):
    with pysam.VariantFile(str(path)) as handle:
        return list(handle.header.samples)


def sv_recall(results, testdata, tumor="tumor"):
    """Recall of the planted SVs in a tumor's filtered SVs (tests/test_sv.py scores them)."""
    return score(sv_rows(sv_file(results, tumor, ".filt.txt"))[2], planted_svs(testdata))[0]


def sv_calls_but_panel_names(results):
    """The tumor's SV rows without the meta lines and the column naming a panel member."""
    _, header, rows = sv_rows(sv_file(results, "tumor", ".txt"))
    return [{key: value for key, value in row.items() if key != "Non-Matched_Control_Sample_With_Max_Junction"}
            for row in rows]


def ran_jobs(results, rule):
    """The jobs of a rule this run ran (one log file each)."""
    return sorted(path.stem for path in (results / "logs" / rule).rglob("*.log"))


def test_every_scenario_directory_is_run_by_a_test():
    tested = {"config", "config-pair", "config-genomon-sheet", "config-trimmed",
              "config-tumor-panel", "config-tumor-only", "config-shared-normal", "config-panel-bams",  # _normals.py
              "config-hotspot",  # tests/test_hotspot_workflow.py
              "config-genomon-cfg"}
    assert set(SCENARIO_DIRS) == tested


def test_pair_without_panel(pair_run, testdata):
    """Pattern 2: tumor/normal without a panel: no EBFilter column, and the panel artifacts stay."""
    results = pair_run
    header, rows = result_rows(result(results, "tumor", ".txt"))
    assert "depth_normal" in header and EB_COLUMN not in header
    assert clonal_snvs(testdata) <= called(rows)
    _, filtered = result_rows(result(results, "tumor", ".filt.txt"))
    artifacts = {(c, s) for c, s, _, _ in truth_sites(testdata, "artifacts")}
    assert len(artifacts & called(filtered)) >= 3, "without a panel, nothing removes the panel artifacts"
    assert vcf_samples(result(results, "tumor", ".filt.vcf.gz")) == ["tumor", "normal"]
    assert ran_jobs(results, "map_reads") == []
    # SVs with the matched normal and no panel: nothing merged, the normal's read pairs counted.
    assert sv_recall(results, testdata) >= 0.7 and ran_jobs(results, "sv_merge_control") == []
    assert all(row["Num_Control_Ref_Read_Pair"] != "---" for row in sv_rows(sv_file(results, "tumor", ".txt"))[2])


def test_trimmed_reads_of_any_length_and_other_read_names(scenario_root, pipeline_run, testdata, truth):
    """Adapter-trimmed reads (some of length zero), CASAVA 1.8 and /1 /2 names, multi-member gzip:
    the integrity check passes, every read pair is in the final BAM once, the calls are made."""
    results, _ = run_scenario(scenario_root, "config-trimmed", reuse=["normal"])
    expected = truth["trimmed_tumor"]
    assert expected["empty_read1"] > 100 and expected["empty_read2"] > 100
    counts = json.loads((results / "qc" / "tumor" / "tumor.fastq_counts.json").read_text())
    assert (counts["read_pairs"], counts["empty_read1"], counts["empty_read2"]) == (
        expected["read_pairs"], expected["empty_read1"], expected["empty_read2"])
    assert "status\tOK" in (results / "qc" / "tumor" / "tumor.integrity.txt").read_text()
    mates = collections.Counter()
    with pysam.AlignmentFile(str(results / "bam" / "tumor" / "tumor.markdup.bam")) as bam:
        for read in bam.fetch(until_eof=True):
            if not (read.is_secondary or read.is_supplementary):
                mates[read.is_read1] += 1
                empty = read.query_length == 0
                mates["empty_read1" if read.is_read1 else "empty_read2"] += empty
    assert mates[True] == mates[False] == expected["read_pairs"]
    assert (mates["empty_read1"], mates["empty_read2"]) == (expected["empty_read1"], expected["empty_read2"])
    _, filtered = result_rows(result(results, "tumor", ".filt.txt"))
    assert snv_recall(filtered, clonal_snvs(testdata)) >= 0.9


def check_annotation(results, tumors, testdata):
    """Each tumor's results carry ANNOVAR's refGene columns after Alt, its other cells the merge's
    (calls.txt, kept); the tumor's filtered somatic SNVs, each inside a made-up coding gene, are
    exonic in that gene with a coding consequence; the VCF carries them in INFO; the merged tables
    have Genomon's Merge_Func. Returns the genes paplot's mutation matrix must draw."""
    from genomon_smk.plan.annotation import GENE_COLUMNS

    for tumor in tumors:
        calls_header, calls = result_rows(results / f"mutation/{tumor}/{tumor}.genomon_mutation.calls.txt")
        header, annotated = result_rows(result(results, tumor, ".txt"))
        assert header == [*calls_header[:5], *GENE_COLUMNS, *calls_header[5:]], tumor
        assert [{k: v for k, v in row.items() if k not in GENE_COLUMNS} for row in annotated] == calls
        assert result_rows(result(results, tumor, ".filt.txt"))[0] == header
    _, filtered = result_rows(result(results, "tumor", ".filt.txt"))
    somatic = {(chrom, start) for chrom, start, kind, _ in truth_sites(testdata, "somatic") if kind == "SNV"}
    in_genes = [row for row in filtered if (row["Chr"], int(row["Start"])) in somatic]
    assert in_genes and all(row["Func.refGene"] == "exonic" and row["Gene.refGene"].startswith("TG")
                            and row["ExonicFunc.refGene"] for row in in_genes)
    with pysam.VariantFile(str(result(results, "tumor", ".filt.vcf.gz"))) as vcf:
        assert set(GENE_COLUMNS) <= set(vcf.header.info)
        info = {(r.chrom, r.pos): r.info.get("Gene.refGene") for r in vcf}
    assert all(info[(row["Chr"], int(row["Start"]))] == (row["Gene.refGene"],) for row in in_genes)
    merged_header, merged = result_rows(results / "post_analysis" / "sample_sheet" / "merge_mutation_filt.txt")
    assert merged_header.index("Merge_Func") == merged_header.index("ExonicFunc.refGene") + 1
    assert all(row["Merge_Func"] == ("splicing" if "splicing" in row["Func.refGene"] else row["ExonicFunc.refGene"])
               for row in merged)
    # Genomon's template leaves out `_blank_`, unknown and synonymous SNV.
    genes = {gene for row in merged if row["Merge_Func"] not in ("", "unknown", "synonymous SNV")
             for gene in row["Gene.refGene"].split(";")}
    assert genes
    return sorted(genes)


def test_genomon_classic_sheet_with_every_dna_section(scenario_root, pipeline_run, testdata, truth, tmp_path):
    results, run = run_scenario(scenario_root, "config-genomon-sheet", reuse=["tumor", "pon1", "pon2"])
    # [sv_detection]: the tumor's SVs, with the imported normal and the panel (and the three
    # normals called as tumors, one of each other case).
    assert ran_jobs(results, "sv_filt") == ["pon1", "pon2", "pon3", "tumor"] and sv_recall(results, testdata) >= 0.7
    # [bam_import]: the normal's BAM is linked, not mapped; [bam_tofastq]: pon3 is mapped again.
    normal = results / "bam" / "normal" / "normal.markdup.bam"
    assert normal.is_symlink() and normal.resolve() == (pipeline_run / "bam" / "normal" / "normal.markdup.bam").resolve()
    assert ran_jobs(results, "import_bam") == ["normal"] and ran_jobs(results, "bam_to_fastq/pon3") == ["bam1"]
    assert ran_jobs(results, "merge_bam") == ["pon3"]
    with pysam.AlignmentFile(str(results / "bam" / "pon3" / "pon3.markdup.bam")) as bam:
        read1 = sum(1 for r in bam.fetch(until_eof=True) if r.is_read1 and not (r.is_secondary or r.is_supplementary))
    assert read1 == truth["read_pairs"]["pon3"]
    # [qc]: tumor and normal only (the tumor's QC came with its reused BAM).
    assert ran_jobs(results, "coverage") == ["normal"] and ran_jobs(results, "read_pair_integrity") == []
    multiqc_inputs = (results / "logs" / "multiqc" / "all.log").read_text()
    assert "pon1.samtools_stats" not in multiqc_inputs
    # [mutation_call]: pattern 1 with the panel, pattern 4 for pon1.
    _, filtered = result_rows(result(results, "tumor", ".filt.txt"))
    assert snv_recall(filtered, clonal_snvs(testdata)) >= 0.9
    artifacts = {(c, s) for c, s, _, _ in truth_sites(testdata, "artifacts")}
    assert not artifacts & called(filtered)
    header, _ = result_rows(result(results, "pon1", ".txt"))
    assert "depth_normal" not in header and EB_COLUMN not in header
    # Post-analysis of the cohort named after the sheet: every case's tables, recounted from the
    # tumors' own files, and the paplot report drawing every sample.
    cases = {"tumor": "pair_controlpanel", "pon2": "pair", "pon3": "unpair_controlpanel", "pon1": "unpair"}
    check_post_analysis(results, "sample_sheet", {"mutation": cases, "sv": cases}, ["tumor", "normal"])
    sv_tumors = [t for t in cases if sv_rows(results / f"sv/{t}/{t}.genomonSV.result.filt.txt")[2]]
    # Gene annotation with the generated genome's genes (gene_annotation: ../data/genes.gtf).
    genes = check_annotation(results, list(cases), testdata)
    # Other genes rerun the annotation and what reads the results, no calling (calls.txt is kept).
    other_genes = scenario_root / "config-genomon-sheet" / "other-genes.gtf"
    other_genes.write_text((testdata / "genes.gtf").read_text())
    planned = retuned_jobs(scenario_root / "config-genomon-sheet" / "config.yaml", None, "gene_annotation",
                           str(other_genes))
    assert planned["annotate_mutation"] == 4 and planned["filter_mutation"] == 4
    assert not {"identify_mutations", "merge_mutation", "sv_filt", "markdup"} & set(planned)
    check_paplot(results, "sample_sheet", "Genomon", ["tumor", "normal"], sv_tumors,
                 with_rows(results, list(cases)), tmp_path, mutation_genes=genes)
    assert with_rows(results, list(cases)) == list(cases)  # every case's tumor has calls to draw
    check_pmsignature(results, "sample_sheet", sorted(cases), range(2, 7), range(2, 4), tmp_path)
    # The stage plan counts every job of this cohort as Snakemake does (imported, converted and
    # QC-selected samples included).
    plan = run_snakemake(scenario_root / "config-genomon-sheet" / "config.yaml", "-n", "--forceall", "--quiet", "rules")
    planned = int(re.search(r"total \(with rule all\) +(\d+)", plan.stderr).group(1))
    counted = int(re.search(r"^total +(\d+)$", plan.stdout + plan.stderr, flags=re.M).group(1))
    # Four pairs (mutations, gene annotation and SVs), two panels; post-analysis: three merges and
    # paplot; pmsignature: the cohort's positions, ind K = 2..6, full K = 2..3. --forceall also
    # forces the background's set-up job, which the plan (of what is still to build) no longer counts.
    assert planned == counted - 1 == 128


def test_a_genomon_sites_dna_genomon_cfg_and_sheet_run_as_they_are(scenario_root, pipeline_run, testdata):
    """.test/config-genomon-cfg: three config lines naming Genomon's public dna_genomon.cfg (paths
    replaced) and a Genomon sheet, on the default run's BAMs: the cfg's interval list (no chr3),
    databases and parameters take effect, and its keys without a counterpart are listed once."""
    results, run = run_scenario(scenario_root, "config-genomon-cfg", reuse=["tumor", "normal", *PANEL])
    listed = run.stderr[run.stderr.index("genomon_config "):]
    assert "[bwa_mem] qsub_option" in listed and "profile's resources" in listed
    assert run.stderr.count("[markduplicates] java_memory") == 1
    header, rows = result_rows(result(results, "tumor", ".txt"))
    # The interval list: mutations on chr1 and chr2 only, chr1's shared boundary base called once.
    assert {row["Chr"] for row in rows} == {"chr1", "chr2"}
    assert len({(r["Chr"], r["Start"], r["Ref"], r["Alt"]) for r in rows}) == len(rows)
    assert ran_jobs(results, "identify_mutations/tumor") == ["r0001", "r0002", "r0003"]
    # [fisher_mutation_call] --min_depth 10 (Genomon's 8); [mutation_util] --eb_pval 0.8 (a
    # three-normal panel: Genomon's 4.0 would keep nothing); the simple-repeat and hotspot databases.
    assert EB_COLUMN in header and min(int(row["depth_tumor"]) for row in rows) >= 10
    _, filtered = result_rows(result(results, "tumor", ".filt.txt"))
    truth = {(c, s) for c, s in clonal_snvs(testdata) if c != "chr3"}
    assert snv_recall(filtered, truth) >= 0.9
    assert "score(hotspot)" in header  # the cfg's hotspot_db, its flag True
    # The cfg's prepared simple-repeat database: the default run's (built from the same table)
    # columns at every site both called.
    _, default_rows = result_rows(result(pipeline_run, "tumor", ".txt"))
    repeats = {(r["Chr"], r["Start"]): r["simple_repeat_pos"] for r in default_rows}
    both = [r for r in rows if (r["Chr"], r["Start"]) in repeats]
    assert both and all(r["simple_repeat_pos"] == repeats[(r["Chr"], r["Start"])] for r in both)
