"""The map job's scatter: bwa's SAM read from a pipe, every record in its region's piece, the
pieces coordinate-sorted, so that markdup merges them with bammerge and gets the very BAM,
duplicate flags and metrics that sorting their concatenation (Genomon's way) gave."""

import subprocess
import sys
import zlib

import pysam
import pytest

from conftest import bam_records
from genomon_smk.plan.regions import read_regions
from genomon_smk.steps.scatter import CHECKSUM_COMMENT, scatter, scatter_unsorted

CHUNKS = 3


@pytest.fixture(scope="module")
def chunk_sams(pipeline_run, tmp_path_factory):
    """The default run's tumor BAM as bwa would give it in CHUNKS chunks: SAM files, each in read
    name order (pairs together), duplicate flags cleared."""
    out = tmp_path_factory.mktemp("chunks")
    with pysam.AlignmentFile(str(pipeline_run / "bam" / "tumor" / "tumor.markdup.bam")) as bam:
        chunks = [[] for _ in range(CHUNKS)]
        for record in bam.fetch(until_eof=True):
            record.flag &= ~0x400
            chunks[zlib.crc32(record.query_name.encode()) % CHUNKS].append(record)
        paths = []
        for number, records in enumerate(chunks):
            records.sort(key=lambda r: (r.query_name, r.is_read2, r.is_supplementary))
            path = out / f"{number:04d}.sam"
            with pysam.AlignmentFile(str(path), "w", template=bam) as sam:
                for record in records:
                    sam.write(record)
            paths.append(path)
    return paths


def test_a_piped_sam_is_scattered_sorted_with_every_record_in_its_region(chunk_sams, pipeline_run, tmp_path):
    regions = read_regions(str(pipeline_run / "regions.tsv"))
    out, work = tmp_path / "pieces", tmp_path / "work"
    work.mkdir()
    with open(chunk_sams[0], "rb") as sam:
        result = subprocess.run([sys.executable, "-m", "genomon_smk.steps.scatter", "--regions",
                                 str(pipeline_run / "regions.tsv"), "--out-dir", str(out), "--work-dir", str(work), "-"],
                                stdin=sam, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    expected = sum(1 for _ in pysam.AlignmentFile(str(chunk_sams[0])).fetch(until_eof=True))
    assert f"scatter: {expected} records into {len(regions)} regions" in result.stdout
    total = 0
    for region in regions:
        with pysam.AlignmentFile(str(out / f"{region.name}.bam")) as piece:
            assert piece.header.get("HD", {}).get("SO") == "coordinate", region.name
            records = list(piece.fetch(until_eof=True))
            assert not [line for line in str(piece.header).splitlines() if line.startswith(CHECKSUM_COMMENT)]
        total += len(records)
        keys = [(r.reference_id if r.reference_id >= 0 else 1 << 30, r.reference_start) for r in records]
        assert keys == sorted(keys), region.name
        for record in records:
            if region.is_unmapped:
                assert record.reference_id < 0
            else:
                assert any(i.contig == record.reference_name and i.start <= record.reference_start < i.end
                           for i in region.intervals), (region.name, record.query_name)
    assert total == expected


def programs(bam) -> list[str]:
    """The PN of each @PG line."""
    return [dict(field.split(":", 1) for field in line.split("\t")[1:])["PN"]
            for line in bam_records(bam, programs=True) if line.startswith("@PG")]


def markdup(command: str, directory, options: str = "", compress: str = "") -> tuple[list[str], list[str]]:
    """Run `command | bammarkduplicates <options> [| compress]` into out.bam in directory; (records
    and header without @PG and bamsort's checksum comments, @RG fields sorted; metrics rows)."""
    marking = f"bammarkduplicates M=metrics.txt markthreads=2 {options} tmpfile=markdup {compress} >out.bam"
    subprocess.run(f"set -o pipefail; {command} | {marking}", shell=True, executable="/bin/bash", cwd=directory,
                   check=True, capture_output=True)
    metrics = [line for line in (directory / "metrics.txt").read_text().splitlines() if not line.startswith("#")]
    records = [line for line in bam_records(directory / "out.bam") if not line.startswith(CHECKSUM_COMMENT)]
    # bammerge writes an @RG line's fields in its own order.
    records = ["\t".join(["@RG", *sorted(line.split("\t")[1:])]) if line.startswith("@RG") else line
               for line in records]
    return records, metrics


def test_merging_sorted_pieces_marks_the_bam_that_sorting_their_concatenation_marked(chunk_sams, pipeline_run,
                                                                                    tmp_path):
    """Per region: bammerge of the sorted pieces into bammarkduplicates, which keeps an
    uncompressed copy of its input and leaves its output's compression to samtools (this
    pipeline), against `samtools cat` of the unsorted pieces
    into bamsort into bammarkduplicates (Genomon's way): the same records in the same order,
    duplicate flags and metrics; the header differs only by bamsort's checksum comments and the
    order of the @RG fields."""
    regions_tsv = str(pipeline_run / "regions.tsv")
    for number, sam in enumerate(chunk_sams):
        work = tmp_path / f"work{number}"
        work.mkdir()
        scatter(str(sam), regions_tsv, str(tmp_path / "sorted" / f"{number:04d}"), str(work), keep_programs=number == 0)
        scatter_unsorted(str(sam), regions_tsv, str(tmp_path / "unsorted" / f"{number:04d}"))
    duplicates = 0
    for region in read_regions(regions_tsv):
        pieces = [f"{number:04d}/{region.name}.bam" for number in range(CHUNKS)]
        merged_dir, sorted_dir = tmp_path / "merged" / region.name, tmp_path / "resorted" / region.name
        merged_dir.mkdir(parents=True)
        sorted_dir.mkdir(parents=True)
        (merged_dir / "pieces.txt").write_text("".join(f"{tmp_path / 'sorted' / p}\n" for p in pieces))
        (sorted_dir / "pieces.txt").write_text("".join(f"{tmp_path / 'unsorted' / p}\n" for p in pieces))
        # As the markdup rule does now, and as it did before the map jobs sorted the pieces.
        merged = markdup("bammerge IL=pieces.txt level=0 verbose=0 tmpfile=merge", merged_dir,
                         "rewritebam=2 level=0", "| samtools view --no-PG -@ 2 -O bam,level=6")
        resorted = markdup("samtools cat -b pieces.txt -o - | bamsort SO=coordinate inputformat=bam level=1 "
                           "tmpfile=bamsort", sorted_dir)
        assert merged == resorted, region.name
        # The first chunk's program lines (the other pieces have none), bammerge's and bammarkduplicates'.
        first = programs(tmp_path / "sorted" / pieces[0])
        assert programs(merged_dir / "out.bam") == first + ["bammerge", "bammarkduplicates"], region.name
        duplicates += sum(1 for line in merged[0] if not line.startswith("@") and int(line.split("\t")[1]) & 0x400)
    assert duplicates > 0  # the comparison covered duplicate marking


def test_regions_of_intervals_in_any_order_get_the_records_starting_in_them_in_coordinate_order(chunk_sams, tmp_path):
    """A region file may give a region several intervals, cut anywhere, in any order: each piece
    holds exactly the records that start in its intervals (as Genomon's scatter put them), in
    coordinate order, equal positions in bwa's order."""
    with pysam.AlignmentFile(str(chunk_sams[0])) as sam:
        (first, first_length), *others = zip(sam.references, sam.lengths)
    cut = [round(first_length * f) for f in (0, 0.25, 0.5, 0.75, 1)]
    rows = [("mixed", first, cut[3], cut[4]), ("mixed", first, cut[0], cut[1]),  # later interval first
            ("middle", first, cut[1], cut[3]), *(("rest", contig, 0, length) for contig, length in others),
            ("unmapped", "*", 0, 0)]
    regions_tsv = tmp_path / "regions.tsv"
    regions_tsv.write_text("region\tcontig\tstart\tend\n" + "".join("\t".join(map(str, row)) + "\n" for row in rows))
    work = tmp_path / "work"
    work.mkdir()
    written = scatter(str(chunk_sams[0]), str(regions_tsv), str(tmp_path / "sorted"), str(work))
    assert scatter_unsorted(str(chunk_sams[0]), str(regions_tsv), str(tmp_path / "unsorted")) == written
    for region in ("mixed", "middle", "rest", "unmapped"):
        pieces = [bam_records(tmp_path / kind / f"{region}.bam") for kind in ("sorted", "unsorted")]
        expected = [line for line in pieces[1] if not line.startswith("@")]
        references = {name: index for index, name in enumerate([first] + [contig for contig, _ in others])}
        # Stable: records at equal positions keep bwa's order.
        expected.sort(key=lambda line: (references.get(line.split("\t")[2], 1 << 30), int(line.split("\t")[3])))
        assert [line for line in pieces[0] if not line.startswith("@")] == expected, region
        assert expected or region == "unmapped"
