"""mutfilter simplerepeat: tabix lookups in a UCSC-style simpleRepeat db (bin column cut)."""

import subprocess
import sys

import pysam
import pytest

from genomon_smk.tools.mutfilter import cli
from genomon_smk.tools.mutfilter.simplerepeat import COLUMNS, contig_candidates


def repeat_row(chrom, start, end, unit):
    """A simpleRepeat.txt row without its bin column: 16 fields, sequence last."""
    return [chrom, str(start), str(end), f"trf{start}", str(len(unit)), "10.0", str(len(unit)),
            "100", "0", "50", "25", "25", "25", "25", "2.0", unit]


DB_ROWS = [
    repeat_row("chr1", 100, 120, "AC"),
    *[repeat_row("chr1", 500 + i, 560 + i, "T" * (i + 1)) for i in range(7)],
    repeat_row("2", 1000, 1030, "GGA"),
]


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    d = tmp_path_factory.mktemp("sr")
    plain = d / "simpleRepeat.bed"
    plain.write_text("".join("\t".join(r) + "\n" for r in DB_ROWS))
    return pysam.tabix_index(str(plain), preset="bed", force=True)


def run(db, tmp_path, rows, *extra):
    target = tmp_path / "t.txt"
    target.write_text("".join("\t".join(map(str, r)) + "\n" for r in rows))
    out = tmp_path / "o.txt"
    assert cli.main(["simplerepeat", "-t", str(target), "-o", str(out), "-S", db, *extra]) == 0
    return [line.split("\t") for line in out.read_text().splitlines()]


def test_contig_rule():
    assert contig_candidates("1") == ["chr1", "1"]
    assert contig_candidates("chr1") == ["chr1"]


def test_overlaps_and_formats(db, tmp_path):
    rows = run(db, tmp_path, [
        ("1", 101, 101, "A", "C"),  # [100, 101): first base of the repeat; chr-prefixed lookup
        ("chr1", 120, 120, "A", "C"),  # [119, 120): last base of the repeat; name as given
        ("chr1", 121, 121, "A", "C"),  # [120, 121): just past the half-open end
        ("chr1", 100, 100, "A", "C"),  # [99, 100): just before the repeat
        ("chr1", 550, 550, "A", "C"),  # 7 records overlap: first 5 reported
        ("2", 1010, 1012, "AAA", "-"),  # db names this contig without chr
        ("chrZ", 5, 5, "A", "C"),  # unknown contig
    ])
    assert [r[5:] for r in rows] == [
        ["chr1:100-120", "AC"],
        ["chr1:100-120", "AC"],
        ["---", "---"],
        ["---", "---"],
        [";".join(f"chr1:{500 + i}-{560 + i}" for i in range(5)),
         ";".join("T" * (i + 1) for i in range(5))],
        ["2:1000-1030", "GGA"],
        ["---", "---"],
    ]
    assert all(len(r) == 7 for r in rows)


def test_header(db, tmp_path):
    target = tmp_path / "h.txt"
    target.write_text("Chr\tStart\tEnd\tRef\tAlt\textra\n1\t110\t110\tA\tG\tx\n")
    out = tmp_path / "h.out"
    assert cli.main(["simplerepeat", "-t", str(target), "-o", str(out), "-S", db,
                     "--header"]) == 0
    header, row = out.read_text().splitlines()
    assert header.split("\t")[6:] == list(COLUMNS)
    assert row.split("\t") == ["1", "110", "110", "A", "G", "x", "chr1:100-120", "AC"]


def test_python_m_entry_point(db, tmp_path):
    target = tmp_path / "t.txt"
    target.write_text("1\t110\t110\tA\tG\n")
    out = tmp_path / "o.txt"
    done = subprocess.run([sys.executable, "-m", "genomon_smk.tools.mutfilter", "simplerepeat",
                           "-t", str(target), "-o", str(out), "-S", db],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "1\t110\t110\tA\tG\tchr1:100-120\tAC\n"


def test_vcf_mode_sets_sr_flag(db, tmp_path):
    vcf = tmp_path / "in.vcf"
    vcf.write_text("##fileformat=VCFv4.2\n"
                   "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
                   "1\t110\t.\tA\tG\t.\tPASS\tFP=3.2\n"
                   "1\t300\t.\tA\tG\t.\tPASS\t.\n"
                   "chr1\t99\t.\tCA\tC\t.\tPASS\t.\n")  # deletion of 100 (1-based): no hit
    out = tmp_path / "out.vcf"
    assert cli.main(["simplerepeat", "-t", str(vcf), "-o", str(out), "-S", db, "-O", "vcf"]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "##fileformat=VCFv4.2"
    assert lines[1].startswith("##INFO=<ID=SR,Number=0,Type=Flag")
    assert [line.split("\t")[7] for line in lines[3:]] == ["FP=3.2;SR", ".", "."]
