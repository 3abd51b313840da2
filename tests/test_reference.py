"""The reference is checked before any job: a .fai or bwa index of another FASTA, or a gzipped
(not bgzipped) FASTA, is refused with the command that fixes it."""

import gzip
import random
import shutil
import subprocess

import pytest

from genomon_smk.plan.reference import reference_problems

pytestmark = pytest.mark.filterwarnings("ignore")


def write_fasta(path, lengths, seed=1, width=60):
    rng = random.Random(seed)
    with open(path, "w") as handle:
        for index, length in enumerate(lengths, start=1):
            sequence = "".join(rng.choice("ACGT") for _ in range(length))
            handle.write(f">chr{index} test\n")
            handle.writelines(sequence[i:i + width] + "\n" for i in range(0, length, width))


def indexed(path, lengths, seed=1):
    write_fasta(path, lengths, seed)
    subprocess.run(["samtools", "faidx", str(path)], check=True)
    subprocess.run(["bwa", "index", str(path)], check=True, capture_output=True)
    return path


@pytest.fixture
def reference(tmp_path):
    return indexed(tmp_path / "ref.fa", [1000, 777, 120])


def test_an_indexed_reference_passes(reference):
    assert reference_problems(str(reference)) == []


def test_a_fai_of_another_fasta_is_refused(reference, tmp_path):
    write_fasta(reference, [1000, 800, 120], seed=1)  # the FASTA changed after indexing
    problems = reference_problems(str(reference))
    assert any(".fai does not match the FASTA" in p and f"samtools faidx {reference}" in p for p in problems)


def test_a_wrong_fai_alone_does_not_ask_for_a_bwa_index_rebuild(reference):
    """The bwa index is compared with the .fai: a hand-edited .fai must not send the user to an
    hour-long `bwa index` of a human genome."""
    fai = reference.with_name("ref.fa.fai")
    fai.write_text(fai.read_text().replace("777", "787", 1))
    problems = reference_problems(str(reference))
    assert len(problems) == 1 and ".fai does not match the FASTA" in problems[0], problems


def test_a_fai_in_another_order_or_missing_a_sequence_is_refused(reference):
    fai = reference.with_name("ref.fa.fai")
    lines = fai.read_text().splitlines(True)
    fai.write_text("".join([lines[1], lines[0], lines[2]]))
    assert any(".fai does not match" in p for p in reference_problems(str(reference)))
    fai.write_text("".join(lines[:2]))
    assert any("do not end at the end of the file" in p for p in reference_problems(str(reference)))


def test_a_bwa_index_of_another_fasta_is_refused(reference, tmp_path):
    other = indexed(tmp_path / "other.fa", [1000, 700, 120])
    shutil.copy(other.with_name("other.fa.ann"), reference.with_name("ref.fa.ann"))
    problems = reference_problems(str(reference))
    assert len(problems) == 1 and "bwa index of" in problems[0] and f"bwa index {reference}" in problems[0]
    assert "chr2 (700 bp) vs chr2 (777 bp)" in problems[0]


def test_a_gzipped_fasta_gets_advice_that_works_and_a_bgzipped_one_is_used(reference, tmp_path):
    zipped = tmp_path / "plain.fa.gz"
    zipped.write_bytes(gzip.compress(reference.read_bytes()))
    problems = reference_problems(str(zipped))
    assert len(problems) == 1 and "bgzip" in problems[0]
    advice = problems[0].split("Recompress it: ")[1].split(" (or")[0]
    subprocess.run(advice, shell=True, check=True, capture_output=True)
    assert reference_problems(str(tmp_path / "plain.fa.bgz")) == []
