"""The mutation VCFs: PASS for kept calls, ##reference/##source headers, and an unfiltered VCF whose
FILTER names each mutil threshold a call fails."""

import io
import subprocess
import sys

import pysam
import pytest

from genomon_smk.tools import mutil
from genomon_smk.steps import merge_mutation
from genomon_smk.steps.merge_mutation import header_columns, write_vcf

PARAMS = ["--fish_pval", "1.0", "--realign_pval", "1.0", "--eb_pval", "4.0", "--tcount", "4", "--ncount", "2"]


def pair_row(columns, start, fisher, realign, eb, tumor_pairs, normal_pairs):
    values = dict.fromkeys(columns, "---")
    values.update({"Chr": "chr1", "Start": str(start), "End": str(start), "Ref": "A", "Alt": "T",
                   "depth_tumor": "40", "variantNum_tumor": "12", "depth_normal": "30", "variantNum_normal": "0",
                   "P-value(fisher)": fisher, "P-value(fisher_realignment)": realign, "P-value(EBCall)": eb,
                   "variantPairNum_tumor": str(tumor_pairs), "variantPairNum_normal": str(normal_pairs)})
    return "\t".join(values[column] for column in columns)


def make_inputs(tmp_path):
    fasta = tmp_path / "ref.fa"
    fasta.write_text(">chr1\n" + "A" * 100 + "\n")
    pysam.faidx(str(fasta))
    columns = header_columns(paired=True, with_panel=True)
    rows = [pair_row(columns, 10, "5.0", "3.0", "6.0", 10, 0),   # passes everything
            pair_row(columns, 20, "0.5", "3.0", "1.2", 10, 0),   # fails fish_pval and eb_pval
            pair_row(columns, 30, "5.0", "---", "6.0", 3, 5)]    # fails realign_pval, tcount, ncount
    result = tmp_path / "result.txt"
    result.write_text("# Version: test\n" + "\t".join(columns) + "\n" + "\n".join(rows) + "\n")
    return fasta, result


def records(path):
    with pysam.VariantFile(str(path)) as vcf:
        return [(r.pos, list(r.filter)) for r in vcf]


def test_unfiltered_vcf_names_each_failed_threshold_and_passes_what_mutil_keeps(tmp_path):
    fasta, result = make_inputs(tmp_path)
    out = tmp_path / "all.vcf.gz"
    assert write_vcf(str(result), str(fasta), str(out), "T", "N", PARAMS) == 3
    assert records(out) == [(10, ["PASS"]), (20, ["fish_pval", "eb_pval"]),
                            (30, ["realign_pval", "tcount", "ncount"])]
    kept = io.StringIO()
    thresholds, _ = mutil.thresholds_of(PARAMS)
    mutil.filter_table(result.read_text().splitlines(True), kept, thresholds)
    kept_starts = [int(line.split("\t")[1]) for line in kept.getvalue().splitlines()[2:]]
    assert [pos for pos, filters in records(out) if filters == ["PASS"]] == kept_starts == [10]
    text = subprocess.run(["bcftools", "view", "-h", str(out)], capture_output=True, text=True, check=True).stdout
    assert "##source=genomon-smk" in text and f"##reference=file://{fasta}" in text
    assert '##FILTER=<ID=eb_pval,Description="P-value(EBCall) below 4 (mutil filter --eb_pval)">' in text


def test_filtered_vcf_passes_every_record(tmp_path):
    fasta, result = make_inputs(tmp_path)
    out = tmp_path / "filt.vcf.gz"
    write_vcf(str(result), str(fasta), str(out), "T", None)
    assert [filters for _, filters in records(out)] == [["PASS"]] * 3
    with pysam.VariantFile(str(out)) as vcf:
        assert list(vcf.header.samples) == ["T"]


def test_hotspot_rows_have_the_column_after_fishers_the_hs_flag_the_lod_and_pass(tmp_path):
    fasta = tmp_path / "ref.fa"
    fasta.write_text(">chr1\n" + "A" * 100 + "\n")
    pysam.faidx(str(fasta))
    columns = header_columns(paired=True, with_panel=True, hotspot=True)
    assert columns[columns.index("P-value(fisher)") + 1] == "score(hotspot)" and len(columns) == 33
    assert header_columns(paired=False, with_panel=False, hotspot=True) == header_columns(False, False)
    hot = pair_row(columns, 20, "0.5", "---", "0.1", 1, 3).split("\t")
    hot[columns.index("score(hotspot)")] = "12.300"
    rows = [pair_row(columns, 10, "5.0", "3.0", "6.0", 10, 0), "\t".join(hot)]
    result = tmp_path / "result.txt"
    result.write_text("\t".join(columns) + "\n" + "\n".join(rows) + "\n")
    out = tmp_path / "all.vcf.gz"
    write_vcf(str(result), str(fasta), str(out), "T", "N", PARAMS)
    assert records(out) == [(10, ["PASS"]), (20, ["PASS"])]  # mutil keeps hotspot rows whatever their scores
    with pysam.VariantFile(str(out)) as vcf:
        plain, hotspot = list(vcf)
    assert "HS" not in plain.info and "LS" not in plain.info
    assert hotspot.info["HS"] is True and hotspot.info["LS"] == pytest.approx(12.3)


@pytest.mark.parametrize("hotspot_column", [True, False], ids=["pair", "tumor-only"])
def test_rows_the_hotspot_database_rescued_carry_the_hs_flag_in_both_vcfs(tmp_path, hotspot_column):
    """Issue 38 item 5: a call kept past the filter only because the hotspot database names it
    (score(hotspot) `---`: hotspotCall did not call it; tumor-only pairs have no hotspot call)
    had no `HS` flag. Lower-case alleles in the database name the same site."""
    fasta = tmp_path / "ref.fa"
    fasta.write_text(">chr1\n" + "A" * 100 + "\n")
    pysam.faidx(str(fasta))
    columns = header_columns(paired=True, with_panel=True, hotspot=hotspot_column)
    rows = [pair_row(columns, 10, "5.0", "3.0", "6.0", 10, 0), pair_row(columns, 20, "0.5", "---", "0.1", 1, 3)]
    result = tmp_path / "result.txt"
    result.write_text("\t".join(columns) + "\n" + "\n".join(rows) + "\n")
    db = tmp_path / "hotspot.txt"
    db.write_text("chr1\t20\t20\ta\tt\tGENE\n")
    out = tmp_path / "all.vcf.gz"
    write_vcf(str(result), str(fasta), str(out), "T", "N", [*PARAMS, "--hotspot_db", str(db)])
    assert records(out) == [(10, ["PASS"]), (20, ["PASS"])]
    filtered = tmp_path / "filt.vcf.gz"
    write_vcf(str(result), str(fasta), str(filtered), "T", "N", hotspot_db=str(db))
    for path in (out, filtered):
        with pysam.VariantFile(str(path)) as vcf:
            plain, rescued = list(vcf)
            assert "HS" in vcf.header.info
        assert "HS" not in plain.info and rescued.info["HS"] is True, path


def test_the_vcf_command_takes_the_hotspot_database(tmp_path):
    fasta, result = make_inputs(tmp_path)
    db = tmp_path / "hotspot.txt"
    db.write_text("chr1\t20\t20\tA\tT\n")
    out = tmp_path / "filt.vcf.gz"
    subprocess.run([sys.executable, "-m", "genomon_smk.steps.merge_mutation", "vcf", "--result", str(result),
                    "--reference", str(fasta), "--out", str(out), "--tumor", "T", "--normal", "N",
                    "--hotspot-db", str(db)], check=True, capture_output=True)
    with pysam.VariantFile(str(out)) as vcf:
        assert [r.pos for r in vcf if "HS" in r.info] == [20]


def test_the_vcf_command_logs_as_the_filter_mutation_step(tmp_path, capsys):
    """The `vcf` command runs in the filter_mutation job: its log line names that step."""
    fasta, result = make_inputs(tmp_path)
    assert merge_mutation.main(["vcf", "--result", str(result), "--reference", str(fasta),
                                "--out", str(tmp_path / "all.vcf.gz"), "--tumor", "T", "--normal", "N"]) == 0
    assert capsys.readouterr().out == "filter_mutation: 3 VCF records in all.vcf.gz\n"


def vcf_lines(path):
    """A bgzipped VCF's records (its header has no date: the same for the same rows)."""
    with pysam.VariantFile(str(path)) as vcf:
        return str(vcf.header), [str(record) for record in vcf]


@pytest.mark.parametrize("mutil_command", ["builtin", "command"])
def test_the_filter_command_is_mutil_filter_and_both_vcf_commands(tmp_path, capsys, mutil_command):
    """`filter` (the filter_mutation job in one process) writes what `mutil filter` and the two
    `vcf` commands wrote, with genomon-smk's mutil in its process or another mutil as a command."""
    fasta, result = make_inputs(tmp_path)
    options = PARAMS
    assert mutil.main(["filter", "-i", str(result), "-o", str(tmp_path / "expected.filt.txt"), *options]) == 0
    write_vcf(str(tmp_path / "expected.filt.txt"), str(fasta), str(tmp_path / "expected.filt.vcf.gz"), "T", "N")
    write_vcf(str(result), str(fasta), str(tmp_path / "expected.vcf.gz"), "T", "N", options)
    command = ([] if mutil_command == "builtin"
               else ["--mutil-command", f"{sys.executable} -m genomon_smk.tools.mutil"])
    capsys.readouterr()
    assert merge_mutation.main(["filter", "--result", str(result), "--filtered", str(tmp_path / "filt.txt"),
                                "--mutil-options", " ".join(options), *command, "--reference", str(fasta),
                                "--out", str(tmp_path / "filt.vcf.gz"), "--all-vcf", str(tmp_path / "all.vcf.gz"),
                                "--tumor", "T", "--normal", "N", "--hotspot-db", ""]) == 0
    assert (tmp_path / "filt.txt").read_text() == (tmp_path / "expected.filt.txt").read_text()
    assert vcf_lines(tmp_path / "filt.vcf.gz") == vcf_lines(tmp_path / "expected.filt.vcf.gz")
    assert vcf_lines(tmp_path / "all.vcf.gz") == vcf_lines(tmp_path / "expected.vcf.gz")
    assert len(records(tmp_path / "filt.vcf.gz")) == 1 and len(records(tmp_path / "all.vcf.gz")) == 3
    assert capsys.readouterr().out.splitlines() == ["filter_mutation: 1 VCF records in filt.vcf.gz",
                                                    "filter_mutation: 3 VCF records in all.vcf.gz"]


def test_the_filter_command_fails_with_its_mutil(tmp_path, capsys):
    fasta, result = make_inputs(tmp_path)
    assert merge_mutation.main(["filter", "--result", str(result), "--filtered", str(tmp_path / "filt.txt"),
                                "--mutil-command", "false", "--reference", str(fasta), "--out", str(tmp_path / "f.vcf.gz"),
                                "--all-vcf", str(tmp_path / "all.vcf.gz"), "--tumor", "T"]) == 1
    assert "failed with exit status 1" in capsys.readouterr().err
    assert not (tmp_path / "f.vcf.gz").exists()
