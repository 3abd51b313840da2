"""The mutation stage end to end on the .test data, measured against the generator's truth."""

import os
import shutil
import subprocess
import sys

import pysam
import pytest

from conftest import retuned_jobs, run_snakemake, write_config

pytestmark = pytest.mark.workflow
TUMOR = "tumor"


def truth_sites(testdata, name):
    """(chrom, Genomon Start, kind, VAF) of a truth VCF; deletions start after the anchor base."""
    sites = []
    for record in pysam.VariantFile(str(testdata / "truth" / f"{name}.vcf.gz")):
        ref, alt = record.ref, record.alts[0]
        start = record.pos + 1 if len(ref) > len(alt) else record.pos
        kind = "SNV" if len(ref) == len(alt) == 1 else "INDEL"
        sites.append((record.chrom, start, kind, record.info["VAF"]))
    return sites


def result_rows(path):
    with open(path) as handle:
        lines = [line.rstrip("\n").split("\t") for line in handle if not line.startswith("#")]
    header = lines[0]
    return header, [dict(zip(header, row)) for row in lines[1:]]


def called(rows):
    return {(row["Chr"], int(row["Start"])) for row in rows}


def result_path(results, suffix):
    return results / "mutation" / TUMOR / f"{TUMOR}.genomon_mutation.result{suffix}"


def test_result_has_genomon_meta_lines_header_and_every_clonal_truth_mutation(pipeline_run, testdata):
    text = result_path(pipeline_run, ".txt").read_text().splitlines()
    assert text[0].startswith("# Version: fisher-genomon_smk-") and "EBFilter-genomon_smk-" in text[0]
    assert text[1].startswith("# Analysis Date: ") and text[2].startswith("# User: ")
    header, rows = result_rows(result_path(pipeline_run, ".txt"))
    assert header[:5] == ["Chr", "Start", "End", "Ref", "Alt"] and header[-1] == "P-value(EBCall)"
    assert len(header) == 32  # 18 fisher + 7 realignment + 2 indel + 2 breakpoint + 2 simplerepeat + EB
    keys = [(row["Chr"], row["Start"], row["Ref"], row["Alt"]) for row in rows]
    assert len(keys) == len(set(keys)), "region boundaries must not duplicate rows"
    clonal = {(c, s) for c, s, _, vaf in truth_sites(testdata, "somatic") if vaf >= 0.2}
    assert len(clonal) >= 20
    assert clonal <= called(rows)


def test_filtered_snvs_reach_f1_of_0_9_against_truth(pipeline_run, testdata):
    _, rows = result_rows(result_path(pipeline_run, ".filt.txt"))
    somatic = truth_sites(testdata, "somatic")
    # the subclonal SNVs planted at hotspot database sites are somatic too
    truth_any = {(c, s) for c, s, _, _ in somatic + truth_sites(testdata, "hotspot")}
    clonal_snv = {(c, s) for c, s, kind, vaf in somatic if kind == "SNV" and vaf >= 0.2}
    snv_calls = {(row["Chr"], int(row["Start"])) for row in rows if row["Ref"] != "-" and row["Alt"] != "-"}
    # Precision over every call (a subclonal truth call is right, too); recall over VAF >= 0.2.
    precision = len(snv_calls & truth_any) / len(snv_calls)
    recall = len(snv_calls & clonal_snv) / len(clonal_snv)
    f1 = 2 * precision * recall / (precision + recall)
    assert f1 >= 0.9, (precision, recall)


def test_panel_artifacts_are_called_by_fisher_and_removed_by_ebfilter(pipeline_run, testdata):
    artifacts = {(c, s) for c, s, _, _ in truth_sites(testdata, "artifacts")}
    _, rows = result_rows(result_path(pipeline_run, ".txt"))
    in_result = artifacts & called(rows)
    assert len(in_result) >= len(artifacts) // 2, "the artifacts must reach the EBFilter for this test to mean anything"
    _, filtered = result_rows(result_path(pipeline_run, ".filt.txt"))
    assert not artifacts & called(filtered)
    eb = {(row["Chr"], int(row["Start"])): float(row["P-value(EBCall)"]) for row in rows}
    clonal = {(c, s) for c, s, _, vaf in truth_sites(testdata, "somatic") if vaf >= 0.2}
    assert max(eb[site] for site in in_result) < min(eb[site] for site in clonal)


def reuse_bams(pipeline_run, run_dir):
    """A new run directory holding the session run's final BAMs (and the staged-reference manifest
    they were made with), so only the mutation stage runs."""
    for name in ("bam", "reference"):
        shutil.copytree(pipeline_run / name, run_dir / "results" / name, copy_function=shutil.copy2)


def test_vcf_is_indexed_and_read_by_bcftools(pipeline_run):
    import subprocess

    vcf = result_path(pipeline_run, ".filt.vcf.gz")
    stats = subprocess.run(["bcftools", "stats", str(vcf)], capture_output=True, text=True, check=True).stdout
    records = int(next(line.split("\t")[3] for line in stats.splitlines() if "number of records:" in line))
    _, rows = result_rows(result_path(pipeline_run, ".filt.txt"))
    assert records == len(rows) > 0
    with pysam.VariantFile(str(vcf)) as handle:
        assert list(handle.header.samples) == ["tumor", "normal"]
        assert {tuple(record.filter) for record in handle} == {("PASS",)}
        assert set(handle.header.contigs) == {"chr1", "chr2", "chr3"}
        for record in handle.fetch("chr1"):
            tumor = record.samples["tumor"]
            assert tumor["DP"] == sum(tumor["AD"]) and 0 < tumor["AD"][1] <= tumor["DP"]
            assert record.info["EB"] >= 0.8 and "FP" in record.info


def fake_upstream_tools(directory, log):
    """Executables named like Genomon's tools (here wrapping ours) that record each call."""
    directory.mkdir()
    for tool, module in (("fisher", "fisher"), ("mutfilter", "mutfilter"), ("EBFilter", "ebfilter"), ("mutil", "mutil")):
        path = directory / tool
        path.write_text(f'#!/bin/sh\necho "{tool} $1" >> {log}\nexec {sys.executable} -m genomon_smk.tools.{module} "$@"\n')
        path.chmod(0o755)


def test_upstream_mutation_tools_are_taken_from_path(pipeline_run, testdata, tmp_path):
    run_dir = tmp_path / "upstream"
    reuse_bams(pipeline_run, run_dir)
    calls_log = tmp_path / "calls.log"
    fake_upstream_tools(tmp_path / "bin", calls_log)
    # The session run's simple-repeat database, which it built: reused, not built again.
    config = write_config(run_dir, testdata, mutation_tools="upstream", resources_dir=str(pipeline_run.parent / "resources"),
                          simple_repeat_db=str(testdata / "bare" / "simpleRepeat.txt.gz"))
    target = str(result_path(run_dir / "results", ".filt.txt"))
    refused = run_snakemake(config, target, "-n", check=False)
    assert refused.returncode != 0
    assert "upstream's fisher, mutfilter, EBFilter, mutil not on PATH" in refused.stdout + refused.stderr
    env = dict(os.environ, PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    run_snakemake(config, target, env=env)
    called = calls_log.read_text().split("\n")
    for call in ("fisher comparison", "mutfilter realignment", "mutfilter indel", "mutfilter breakpoint",
                 "mutfilter simplerepeat", "mutil filter"):
        assert call in called
    assert any(line.startswith("EBFilter ") for line in called)
    ours = [line for line in result_path(pipeline_run, ".txt").read_text().splitlines() if not line.startswith("#")]
    theirs = [line for line in result_path(run_dir / "results", ".txt").read_text().splitlines() if not line.startswith("#")]
    assert theirs == ours


# What retuning a final filter reruns: the filter's own job and what reads its result, never the
# calls before it (the per-region calls' files are temporary: rerunning them is a genome's work).
# (The cohort's post-analysis table of the filtered calls and its paplot report read them too.)
MUTATION_FILTER_JOBS = {"filter_mutation", "mutation_summary", "post_analysis_mutation", "paplot",
                        "utilisation_timeline", "all"}
SV_FILTER_JOBS = {"sv_utils_filter", "sv_vcf", "sv_summary", "sv_multiqc_tables", "multiqc", "post_analysis_sv",
                  "paplot", "utilisation_timeline", "all"}


@pytest.mark.parametrize("section, key, value, jobs", [
    ("mutation_util", "pair_params", "--fish_pval 1.0 --realign_pval 1.0 --eb_pval 0.5 --tcount 4 --ncount 2",
     MUTATION_FILTER_JOBS),
    ("mutation_util", "single_params", "--post10q 0.2 --r_post10q 0.1 --count 4", {}),  # no tumor-only pair here
    ("sv_filt", "sv_utils_params", "--min_tumor_allele_freq 0.1 --max_control_variant_read_pair 1", SV_FILTER_JOBS),
])
def test_retuning_a_final_filter_reruns_only_the_filter_and_what_reads_it(pipeline_run, section, key, value, jobs):
    planned = retuned_jobs(pipeline_run.parent / "config" / "config.yaml", section, key, value)
    assert set(planned) == set(jobs)
    assert all(count == 1 for count in planned.values())


def test_another_cores_or_profile_plans_no_job_after_a_finished_run(pipeline_run, no_slurm_probe):
    """Results do not depend on --cores or the profile: a dry run of the finished default run
    with one core, four, or the Slurm profile plans nothing (no params, regions or thread counts
    that differ)."""
    from conftest import MADE_IN, SNAKEMAKE, job_stats

    config = pipeline_run.parent / "config" / "config.yaml"
    made_in = (config.parent / MADE_IN).read_text()
    for profile, cores in (("profiles/local", "1"), ("profiles/local", "4"), ("profiles/slurm", "2")):
        command = [SNAKEMAKE, "--profile", profile, "--configfile", str(config), "--cores", cores, "-n"]
        result = subprocess.run(command, cwd=made_in, capture_output=True, text=True, env=no_slurm_probe)
        assert result.returncode == 0, result.stderr[-3000:]
        assert job_stats(result.stdout + result.stderr) == {}, (profile, cores, result.stdout[-3000:])
