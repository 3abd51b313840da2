"""Inputs identified by content, not by name (issue 24, item 4): the same data under two names
for two samples is refused before any job, naming both sheet lines; a panel member holding the
pair's tumor is refused (its normal: warned about); a FASTQ replaced under its name with an
older date reruns its sample."""

import gzip
import os
import re
import shutil
import subprocess
from pathlib import Path

import pysam
import pytest

from conftest import run_snakemake, write_config
from genomon_smk.plan.input_identity import (HEAD_TAIL_BYTES, changed_inputs, fingerprint, gzip_content_id,
                                             held_inputs, read_record, record_inputs)
from genomon_smk.plan import samplesheet
from genomon_smk.plan.samplesheet import InputError, load_cohort

SCHEMAS = str(Path(__file__).resolve().parents[1] / "workflow" / "schemas")


def write_fastq(path, name, reads=1):
    path.write_text("".join(f"@{name}_{i}\nACGT\n+\nIIII\n" for i in range(reads)))


@pytest.fixture
def lanes(tmp_path):
    """FASTQ pairs of two samples, each file with its own reads."""
    for sample in ("tumor", "normal"):
        for mate in (1, 2):
            write_fastq(tmp_path / f"{sample}_R{mate}.fq", f"{sample}/{mate}")
    return tmp_path


def tables(directory, normal_fq1="normal_R1.fq"):
    (directory / "samples.tsv").write_text(
        "sample\tfq1\tfq2\ntumor\ttumor_R1.fq\ttumor_R2.fq\n" f"normal\t{normal_fq1}\tnormal_R2.fq\n"
    )
    (directory / "pairs.tsv").write_text("tumor\tnormal\tpanel\ntumor\tnormal\t\n")
    return dict(samples=str(directory / "samples.tsv"), pairs=str(directory / "pairs.tsv"))


def refusal(**tables_and_panels):
    with pytest.raises(InputError) as refused:
        load_cohort(SCHEMAS, **tables_and_panels)
    return str(refused.value)


SAME_DATA = {
    "symlink": (lambda source, name: name.symlink_to(source), "the same file as {d}/tumor_R1.fq: a link"),
    "hard_link": (lambda source, name: os.link(source, name), "the same file as {d}/tumor_R1.fq: a link"),
    "copy": (lambda source, name: shutil.copy(source, name), "a copy of {d}/tumor_R1.fq: same size, first and last 64 KiB"),
}


@pytest.mark.parametrize("case", SAME_DATA)
def test_a_fastq_of_another_sample_under_another_name_is_refused_naming_both_lines(lanes, case):
    make, how = SAME_DATA[case]
    make(lanes / "tumor_R1.fq", lanes / "normal_alias_R1.fq")
    message = refusal(**tables(lanes, "normal_alias_R1.fq"))
    assert (
        f"{lanes}/samples.tsv:3: field 'fq1': {lanes}/normal_alias_R1.fq ({how.format(d=lanes)}) "
        f"is already used at {lanes}/samples.tsv:2 (field 'fq1'): the same reads would be used twice"
    ) in message


def test_distinct_fastqs_of_the_same_size_and_head_pass(lanes):
    """Only the first and last bytes are compared: files that differ there are different data."""
    write_fastq(lanes / "tumor_R1.fq", "same", reads=HEAD_TAIL_BYTES // 10)
    write_fastq(lanes / "normal_R1.fq", "same", reads=HEAD_TAIL_BYTES // 10)
    with open(lanes / "normal_R1.fq", "r+") as handle:  # the same size and head, another end
        handle.seek(os.path.getsize(lanes / "normal_R1.fq") - 5)
        handle.write("TTTT\n")
    assert load_cohort(SCHEMAS, **tables(lanes)).samples == ["tumor", "normal"]


def header_only_bam(path, sample):
    header = {"HD": {"VN": "1.6", "SO": "coordinate"}, "SQ": [{"SN": "chr1", "LN": 1000}],
              "RG": [{"ID": sample, "SM": sample}]}
    with pysam.AlignmentFile(str(path), "wb", header=header):
        pass
    pysam.index(str(path))


def test_the_same_bam_imported_for_tumor_and_normal_is_refused(tmp_path):
    header_only_bam(tmp_path / "tumor.bam", "tumor")
    (tmp_path / "normal.bam").symlink_to(tmp_path / "tumor.bam")
    (tmp_path / "normal.bam.bai").symlink_to(tmp_path / "tumor.bam.bai")
    (tmp_path / "samples.tsv").write_text("sample\tbam\ntumor\ttumor.bam\nnormal\tnormal.bam\n")
    (tmp_path / "pairs.tsv").write_text("tumor\tnormal\tpanel\ntumor\tnormal\t\n")
    message = refusal(samples=str(tmp_path / "samples.tsv"), pairs=str(tmp_path / "pairs.tsv"))
    assert f"samples.tsv:3: field 'bam': {tmp_path}/normal.bam (the same file as {tmp_path}/tumor.bam: a link) " \
           f"is already used at {tmp_path}/samples.tsv:2" in message


@pytest.fixture
def imported_pair(tmp_path):
    """A tumor and a normal imported as BAMs, a panel of BAMs: one a copy of the tumor's, one a
    link to the normal's, one of another sample."""
    for sample in ("tumor", "normal", "pon"):
        header_only_bam(tmp_path / f"{sample}.bam", sample)
    shutil.copy(tmp_path / "tumor.bam", tmp_path / "panel_t.bam")
    shutil.copy(tmp_path / "tumor.bam.bai", tmp_path / "panel_t.bam.bai")
    os.link(tmp_path / "normal.bam", tmp_path / "panel_n.bam")
    os.link(tmp_path / "normal.bam.bai", tmp_path / "panel_n.bam.bai")
    (tmp_path / "samples.tsv").write_text("sample\tbam\ntumor\ttumor.bam\nnormal\tnormal.bam\n")
    (tmp_path / "pairs.tsv").write_text("tumor\tnormal\tpanel\ntumor\tnormal\tpanel1\n")
    return tmp_path, dict(samples=str(tmp_path / "samples.tsv"), pairs=str(tmp_path / "pairs.tsv"),
                          panel_base=str(tmp_path))


def test_a_panel_bam_holding_the_pairs_tumor_is_refused(imported_pair):
    directory, tables_ = imported_pair
    message = refusal(control_panels={"panel1": ["pon.bam", "panel_t.bam"]}, **tables_)
    assert (f"pairs.tsv:2: panel 'panel1': {directory}/panel_t.bam is a copy of {directory}/tumor.bam, the data of "
            f"the pair's tumor 'tumor' (at {directory}/samples.tsv:2): its mutations would be filtered out") in message


def test_a_panel_naming_the_pairs_tumor_is_refused(lanes):
    write_fastq(lanes / "pon_R1.fq", "pon/1")
    write_fastq(lanes / "pon_R2.fq", "pon/2")
    paths = tables(lanes)
    with open(paths["samples"], "a") as handle:
        handle.write("pon\tpon_R1.fq\tpon_R2.fq\n")
    (lanes / "pairs.tsv").write_text("tumor\tnormal\tpanel\ntumor\tnormal\tpanel1\n")
    message = refusal(control_panels={"panel1": ["pon", "tumor"]}, **paths)
    assert "pairs.tsv:2: panel 'panel1' holds the pair's own tumor 'tumor'" in message


def test_a_panel_bam_holding_the_pairs_normal_under_another_name_is_warned_about(imported_pair):
    """Genomon's panels may hold a cohort's normals (GenomonSV filt leaves out the matched normal
    by its name): accepted, but under another name its reads count as noise, which is said."""
    directory, tables_ = imported_pair
    cohort = load_cohort(SCHEMAS, control_panels={"panel1": ["pon.bam", "panel_n.bam"]}, **tables_)
    assert samplesheet.panel_normal_warnings(cohort) == [
        f"warning: {directory}/pairs.tsv:2: panel 'panel1': {directory}/panel_n.bam is the same file as "
        f"{directory}/normal.bam, the data of the pair's normal 'normal': the normal's reads of the tumor's "
        "mutations count as panel noise"
    ]


def test_a_fingerprint_changes_with_the_content_whatever_the_date(tmp_path):
    path = tmp_path / "reads.fq"
    write_fastq(path, "a")
    before = fingerprint([str(path)])
    stat = os.stat(path)
    write_fastq(path, "b")  # the same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert fingerprint([str(path)]) != before


def test_a_fastq_replaced_under_its_name_with_an_older_date_reruns_its_sample(tmp_path, testdata, no_slurm_probe):
    """cp -p (or rsync -a) of other reads onto a FASTQ: the date goes back, Snakemake's mtime
    trigger sees nothing, the fingerprint param of split_fastq changes."""
    fastq = tmp_path / "fastq"
    fastq.mkdir()
    for name in ("tumor_L1_R1", "tumor_L1_R2", "tumor_L2_R1", "tumor_L2_R2"):
        shutil.copy(testdata / "fastq" / f"{name}.fastq.gz", fastq)
    samples = tmp_path / "samples.tsv"
    samples.write_text("sample\tfq1\tfq2\ntumor\tfastq/tumor_L1_R1.fastq.gz\tfastq/tumor_L1_R2.fastq.gz\n")
    config = write_config(tmp_path, testdata, samples=str(samples), pairs=None, control_panels={},
                          split={"chunks": 1})
    counts = str(tmp_path / "results" / "qc" / "tumor" / "tumor.fastq_counts.json")
    run_snakemake(config, counts, env=no_slurm_probe)
    assert "Nothing to be done" in run_snakemake(config, counts, "-n", env=no_slurm_probe).stdout
    # The same reads compressed again (another level, another date): the plan says so.
    recompressed = fastq / "tumor_L1_R1.fastq.gz"
    recompressed.write_bytes(gzip.compress(gzip.decompress(recompressed.read_bytes()), compresslevel=1))
    plan = run_snakemake(config, counts, "-n", env=no_slurm_probe).stderr
    assert f"{recompressed}: changed since the last run, the same reads by gzip's CRC-32 and length" in plan, plan
    for mate in (1, 2):  # another lane's reads, dated a year before the first run
        replaced = fastq / f"tumor_L1_R{mate}.fastq.gz"
        shutil.copy(fastq / f"tumor_L2_R{mate}.fastq.gz", replaced)
        os.utime(replaced, (os.path.getmtime(counts) - 365 * 86400,) * 2)
    dry_run = run_snakemake(config, counts, "-n", env=no_slurm_probe)
    assert re.search(r"params have changed since last execution:\s+split_fastq\n", dry_run.stdout), dry_run.stdout
    assert f"{fastq / 'tumor_L1_R2.fastq.gz'}: changed since the last run, other reads" in dry_run.stderr
    # Snakemake's hint (--rerun-triggers mtime) would switch this check off: the summary says so.
    closing = dry_run.stdout[dry_run.stdout.index("This was a dry-run"):]
    assert ("genomon-smk: 1 sample(s) will rerun from their first step because their input files were replaced: "
            "tumor." in closing and "'--rerun-triggers mtime', would turn off the check" in closing), closing


def test_a_gzip_files_content_id_is_its_trailers_and_a_changed_input_is_named(tmp_path):
    plain, again, other = tmp_path / "a.fq.gz", tmp_path / "b.fq.gz", tmp_path / "c.fq.gz"
    plain.write_bytes(gzip.compress(b"@r/1\nACGT\n+\nIIII\n", compresslevel=9))
    again.write_bytes(gzip.compress(b"@r/1\nACGT\n+\nIIII\n", compresslevel=1))
    other.write_bytes(gzip.compress(b"@r/1\nACGA\n+\nIIII\n"))
    assert gzip_content_id(str(plain)) == gzip_content_id(str(again)) != gzip_content_id(str(other))
    bgzf = tmp_path / "d.fq.gz"
    (tmp_path / "x.txt").write_text("x\n")
    pysam.tabix_compress(str(tmp_path / "x.txt"), str(bgzf))
    assert gzip_content_id(str(bgzf)) is None  # bgzip's empty last block says nothing
    assert gzip_content_id(str(tmp_path / "missing.gz")) is None
    before = held_inputs([str(plain)])
    assert changed_inputs(before, held_inputs([str(plain)])) == []
    plain.write_bytes(again.read_bytes())
    assert "the same reads" in changed_inputs(before, held_inputs([str(plain)]))[0]
    plain.write_bytes(other.read_bytes())
    assert "other reads" in changed_inputs(before, held_inputs([str(plain)]))[0]
    assert changed_inputs({}, held_inputs([str(plain)])) == []  # no earlier run: nothing to say
    record = tmp_path / "logs" / "inputs_held.json"
    record_inputs(str(record), before)
    assert read_record(str(record)) == before and read_record(str(tmp_path / "none.json")) == {}


def test_a_bam_to_convert_replaced_under_its_name_with_an_older_date_reruns_its_sample(tmp_path, testdata,
                                                                                        no_slurm_probe):
    """A [bam_tofastq] BAM: the fingerprint rides on the split (bam_to_fastq's FASTQs are temporary),
    which pulls bam_to_fastq in again."""
    for name, lane in (("x", "L1"), ("y", "L2")):
        subprocess.run(["samtools", "import", "-o", str(tmp_path / f"{name}.bam"),
                        "-1", str(testdata / "fastq" / f"tumor_{lane}_R1.fastq.gz"),
                        "-2", str(testdata / "fastq" / f"tumor_{lane}_R2.fastq.gz")], check=True, capture_output=True)
    (tmp_path / "sheet.csv").write_text("[bam_tofastq]\nconv,x.bam\n")
    config = write_config(tmp_path, testdata, samples=None, pairs=None, control_panels=None,
                          genomon_sample_sheet=str(tmp_path / "sheet.csv"), split={"chunks": 1})
    counts = str(tmp_path / "results" / "qc" / "conv" / "conv.fastq_counts.json")
    run_snakemake(config, counts, env=no_slurm_probe)
    os.utime(tmp_path / "y.bam", (os.path.getmtime(counts) - 365 * 86400,) * 2)
    shutil.copy2(tmp_path / "y.bam", tmp_path / "x.bam")  # cp -p
    dry_run = run_snakemake(config, counts, "-n", env=no_slurm_probe).stdout
    assert re.search(r"params have changed since last execution:\s+split_fastq\n", dry_run), dry_run
    assert re.search(r"\nbam_to_fastq +1\n", dry_run), dry_run  # Job stats: its FASTQs made again
