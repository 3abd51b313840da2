"""The hotspot call end to end: the .test generator's hotspot database (low-VAF SNVs planted in the
tumor at some of its sites) run as the config-hotspot scenario on the default scenario's BAMs, its
calls scored against what the final BAMs hold."""

import math
import os
import re
import sys

import pysam
import pytest

from conftest import (result_rows as rows_without_meta, retuned_jobs, reuse_mapped_samples, run_scenario,
                      run_snakemake, scenario_variant)
from genomon_smk.tools import mutil
from test_mutation_workflow import MUTATION_FILTER_JOBS, result_rows

pytestmark = pytest.mark.workflow
PANEL = ["pon1", "pon2", "pon3"]
SCORE = "score(hotspot)"
# hotspotCall's defaults (Genomon's): -t 0.1 -c 0.1 -R 0.1 -m 8.0, pileup -B -q 20 -Q2
MIN_TUMOR_RATE, MAX_NORMAL_RATE, NORMAL_RATIO, MIN_LOD = 0.1, 0.1, 0.1, 8.0


def result(results, suffix):
    return results / "mutation" / "tumor" / f"tumor.genomon_mutation.result{suffix}"


@pytest.fixture(scope="module")
def hotspot_run(scenario_root, pipeline_run):
    results, _ = run_scenario(scenario_root, "config-hotspot", reuse=["tumor", "normal", *PANEL])
    return results


def database(testdata):
    """(Chr, Start, End, Ref, Alt) -> the row's kind (planted, other_alt, decoy, germline, mnv)."""
    rows = [line.split("\t") for line in (testdata / "hotspot_database.txt").read_text().splitlines()]
    return {tuple(row[:5]): row[6] for row in rows}


def bam_bases(path, contig, pos):
    """(base, quality) of every read over a 1-based position as `samtools mpileup -B -q 20 -Q2`
    counts them (htslib's pileup through pysam: MAPQ >= 20, BQ >= 2, no BAQ, unmapped, secondary,
    QC-failed and duplicate reads and anomalous pairs left out, overlapping mates' qualities
    adjusted); A/C/G/T only."""
    with pysam.AlignmentFile(str(path)) as bam:
        for column in bam.pileup(contig, pos - 1, pos, truncate=True, min_base_quality=2, min_mapping_quality=20,
                                 ignore_orphans=True, ignore_overlaps=True, compute_baq=False, stepper="samtools",
                                 max_depth=10_000_000):
            return [(read.alignment.query_sequence[read.query_position].upper(),
                     read.alignment.query_qualities[read.query_position])
                    for read in column.pileups if not read.is_del and not read.is_refskip
                    and read.alignment.query_sequence[read.query_position].upper() in "ACGT"
                    and read.alignment.query_qualities[read.query_position] >= 2]
    return []


def lod(qualities):
    """Σ −log10(p / (1 − p)), p = 10^(−q/10), q capped at 41 (genomon-stages-spec.md 1.3)."""
    return sum(-math.log10(10 ** (-min(q, 41) / 10) / (1 - 10 ** (-min(q, 41) / 10))) for q in qualities)


def measured(results, key):
    """(tumor AF, tumor LOD, normal AF) of a database alt in the run's final BAMs."""
    contig, start, _, _, alt = key
    tumor = bam_bases(results / "bam" / "tumor" / "tumor.markdup.bam", contig, int(start))
    normal = bam_bases(results / "bam" / "normal" / "normal.markdup.bam", contig, int(start))
    alt_qualities = [q for base, q in tumor if base == alt]
    tumor_af = len(alt_qualities) / len(tumor) if tumor else 0.0
    normal_af = sum(base == alt for base, _ in normal) / len(normal) if normal else 0.0
    return tumor_af, lod(alt_qualities), normal_af


def keyed(rows):
    return {(row["Chr"], row["Start"], row["End"], row["Ref"], row["Alt"]): row for row in rows}


def test_planted_hotspot_snvs_are_scored_and_kept_and_no_unmutated_site_is_called(hotspot_run, testdata):
    sites = database(testdata)
    header, rows = result_rows(result(hotspot_run, ".txt"))
    assert header[header.index("P-value(fisher)") + 1] == SCORE
    called = {key: row for key, row in keyed(rows).items() if row[SCORE] != "---"}
    _, filtered = result_rows(result(hotspot_run, ".filt.txt"))
    kept = keyed(filtered)
    planted = [key for key, kind in sites.items() if kind == "planted"]
    expected = []
    for key in planted:
        tumor_af, tumor_lod, normal_af = measured(hotspot_run, key)
        passes = (tumor_lod >= MIN_LOD and tumor_af >= MIN_TUMOR_RATE and normal_af <= MAX_NORMAL_RATE
                  and normal_af <= tumor_af * NORMAL_RATIO)
        if passes:
            expected.append(key)
            assert key in called and key in kept, (key, tumor_af, tumor_lod)
            # (a site fisher called too keeps fisher's row, whose counts take bases of BQ >= 15 only)
            assert float(called[key][SCORE]) == pytest.approx(tumor_lod, abs=0.002), key
        else:
            assert key not in called, (key, tumor_af, tumor_lod, normal_af)
    # Enough planted SNVs pass for the test to mean something; the others sit below the bar.
    assert len(expected) >= len(planted) // 3, (len(expected), len(planted))
    unmutated = {key for key, kind in sites.items() if kind != "planted"}
    assert not unmutated & set(called) and not unmutated & set(kept)
    print(f"hotspot: {len(planted)} planted, {len(expected)} with LOD >= 8 and AF >= 0.1 in the BAM, "
          f"{len(set(expected) & set(kept))} kept; {len(called)} rows with a hotspot score; "
          f"{len(unmutated)} unmutated database rows, none called")


def test_fisher_rows_are_the_default_runs_and_only_hotspot_rows_are_added(hotspot_run, pipeline_run):
    """The same BAMs as the default scenario (no hotspot database): its rows are ours without the
    score(hotspot) column; every row more is a hotspot row, kept by mutil filter whatever its other
    scores."""
    default_header, default_rows = result_rows(result(pipeline_run, ".txt"))
    header, rows = result_rows(result(hotspot_run, ".txt"))
    assert [c for c in header if c != SCORE] == default_header
    plain = keyed(default_rows)
    ours = keyed(rows)
    for key, row in ours.items():
        if key in plain:
            assert {c: v for c, v in row.items() if c != SCORE} == plain[key], key
        else:
            assert row[SCORE] != "---", key
    assert set(plain) <= set(ours)
    _, filtered = result_rows(result(hotspot_run, ".filt.txt"))
    _, default_filtered = result_rows(result(pipeline_run, ".filt.txt"))
    hot = {key for key, row in ours.items() if row[SCORE] != "---"}
    assert set(keyed(filtered)) == set(keyed(default_filtered)) | hot
    rescued = hot - set(keyed(default_filtered))
    print(f"hotspot: {len(hot)} hotspot rows, {len(hot & set(plain))} also fisher's, "
          f"{len(hot - set(plain))} only hotspotCall's; {len(rescued)} kept only for their hotspot score")
    # position order within the file (the merge sorts; upstream appends hotspot rows unsorted)
    order = {"chr1": 0, "chr2": 1, "chr3": 2}
    starts = [(order[row["Chr"]], int(row["Start"])) for row in rows]
    assert starts == sorted(starts)


def test_retuning_mutil_with_a_hotspot_database_reruns_only_the_filter(hotspot_run, scenario_root):
    """The filter's options (the database among them) are a recorded parameter of its job."""
    planned = retuned_jobs(scenario_root / "config-hotspot" / "config.yaml", "mutation_util", "pair_params",
                           "--fish_pval 1.0 --realign_pval 1.0 --eb_pval 0.5 --tcount 4 --ncount 2")
    assert set(planned) == MUTATION_FILTER_JOBS


def test_vcf_marks_hotspot_rows_with_a_flag_and_the_lod(hotspot_run, testdata):
    """HS: hotspotCall's calls (with their LOD, LS) and the calls the database names (issue 38:
    the rows it rescued had no flag)."""
    _, filtered = result_rows(result(hotspot_run, ".filt.txt"))
    lods = {(row["Chr"], int(row["Start"])): float(row[SCORE]) for row in filtered if row[SCORE] != "---"}
    named = {(key[0], int(key[1])) for key in keyed(filtered) if key in database(testdata)}
    with pysam.VariantFile(str(result(hotspot_run, ".filt.vcf.gz"))) as vcf:
        assert vcf.header.info["HS"].type == "Flag" and vcf.header.info["LS"].type == "Float"
        marked, scored = set(), {}
        for record in vcf:
            if "HS" in record.info:
                marked.add((record.chrom, record.pos))
            if "LS" in record.info:
                assert "HS" in record.info
                scored[(record.chrom, record.pos)] = record.info["LS"]
    assert scored.keys() == lods.keys() and all(scored[k] == pytest.approx(lods[k], abs=1e-3) for k in lods)
    assert marked == lods.keys() | named


def test_tumor_only_pairs_get_no_hotspot_call_but_the_database_rescue(scenario_root, pipeline_run, testdata,
                                                                       tmp_path):
    """Genomon's tumor-only branch has no hotspotCall (no score(hotspot) column), but `mutil filter`
    still keeps a call the database names, whatever its single-mode scores."""
    config = scenario_variant(scenario_root, "config-tumor-only", tmp_path, sv_detection={"tumors": []},
                              hotspot_db=str(testdata / "hotspot_database.txt"))
    reuse_mapped_samples(pipeline_run, tmp_path / "results", ["tumor"])
    results = tmp_path / "results"
    run_snakemake(config, str(result(results, ".filt.txt")))
    header, rows = result_rows(result(results, ".txt"))
    assert SCORE not in header and "posterior_mean" in header
    _, filtered = result_rows(result(results, ".filt.txt"))
    sites = database(testdata)
    thresholds, _ = mutil.thresholds_of(["--post10q", "0.1", "--r_post10q", "0.1", "--count", "4"])
    passes = mutil.make_row_filter(header, thresholds)
    rescued = {key for key, row in keyed(rows).items() if key in sites and not passes([row[c] for c in header])}
    assert rescued and rescued <= set(keyed(filtered))
    assert {key for key, row in keyed(rows).items() if passes([row[c] for c in header])} | rescued == set(keyed(filtered))
    print(f"hotspot, tumor only: {len(rescued)} calls kept only because the database names them")


def test_a_bad_database_or_missing_upstream_hotspotcall_is_refused_before_any_job(scenario_root, testdata, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text((testdata / "hotspot_database.txt").read_text() + "20\t31022441\t31022441\tA\tG\tASXL1\n"
                   + "chr1\t100\tA\tG\n")
    lines = len((testdata / "hotspot_database.txt").read_text().splitlines())
    config = scenario_variant(scenario_root, "config-hotspot", tmp_path / "bad", hotspot_db=str(bad))
    refused = run_snakemake(config, "-n", check=False)
    text = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert f"{bad}:{lines + 1}: hotspot_db: contig '20' is not in the reference" in text
    assert f"{bad}:{lines + 2}: hotspot_db: 4 tab-separated columns" in text
    config = scenario_variant(scenario_root, "config-hotspot", tmp_path / "upstream", mutation_tools="upstream",
                              hotspot_db=str(testdata / "hotspot_database.txt"))
    refused = run_snakemake(config, "-n", check=False)
    assert re.search(r"upstream's [\w, ]*hotspotCall[\w, ]* not on PATH", refused.stdout + refused.stderr)


def test_upstream_hotspotcall_and_mutil_are_taken_from_path(scenario_root, hotspot_run, pipeline_run, testdata,
                                                             tmp_path):
    """mutation_tools: upstream runs `hotspotCall` and `mutil merge_hotspot` from PATH (here
    executables of those names wrapping ours, which record their calls): the same rows."""
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    for tool, module in (("fisher", "fisher"), ("mutfilter", "mutfilter"), ("EBFilter", "ebfilter"),
                         ("mutil", "mutil"), ("hotspotCall", "hotspot")):
        (bin_dir / tool).write_text(f'#!/bin/sh\necho "{tool} $1" >> {calls}\n'
                                    f'exec {sys.executable} -m genomon_smk.tools.{module} "$@"\n')
        (bin_dir / tool).chmod(0o755)
    config = scenario_variant(scenario_root, "config-hotspot", tmp_path, mutation_tools="upstream",
                              hotspot_db=str(testdata / "hotspot_database.txt"))
    reuse_mapped_samples(pipeline_run, tmp_path / "results", ["tumor", "normal", *PANEL])
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    run_snakemake(config, str(result(tmp_path / "results", ".filt.txt")), env=env)
    called = calls.read_text().splitlines()
    assert "mutil merge_hotspot" in called and any(line.startswith("hotspotCall -t") for line in called)
    for suffix in (".txt", ".filt.txt"):
        assert rows_without_meta(result(tmp_path / "results", suffix)) == rows_without_meta(result(hotspot_run, suffix))
