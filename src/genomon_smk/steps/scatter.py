"""Scatter one chunk's alignments by region (Genomon's "scatter sam" into chr dirs).

Each record goes to the region holding its position (reads without a position go to the
`unmapped` region), so a region's markdup job finds all its reads in one file per chunk.
Every region gets a file, empty or not, so later stages never have to guess which exist.

With a work directory (the map job's), the pieces are written there uncompressed and then
coordinate-sorted into the output directory by biobambam2's bamsort: the sorting is done in the
map jobs, spread over the cluster, and a region's markdup job merges its sorted pieces with
bammerge, which gives the very order bamsort gives their concatenation (both keep the input
order of equal positions), so the final BAM holds the same records in the same order. bamsort
writes uncompressed and samtools compresses (htslib's libdeflate on the job's threads: about a
third of the time bamsort's own zlib takes, while bwa's second core would otherwise idle).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from contextlib import ExitStack

import pysam

from genomon_smk.plan.regions import RegionLookup, read_regions

# Region pieces are read once by the next stage on the same file system: light compression
# keeps them small without making bwa's partner step wait on zlib.
PIECE_OPTIONS = ["level=1"]
SORT = ["bamsort", "SO=coordinate", "inputformat=bam", "level=0", "verbose=0"]
CHECKSUM_COMMENT = "@CO\tTY:checksum\t"


def scatter(alignments: str, regions_tsv: str, out_dir: str, work_dir: str | None = None,
            keep_programs: bool = True, threads: int = 1) -> dict[str, int]:
    """Write `<out_dir>/<region>.bam` for every region (coordinate-sorted when given a work
    directory; see sort_piece for keep_programs); return records written per region. `-` reads
    SAM from stdin (bwa's pipe)."""
    regions = read_regions(regions_tsv)
    lookup = RegionLookup(regions)
    parent = os.getppid()
    piece_dir = os.path.join(work_dir, "unsorted") if work_dir else out_dir
    os.makedirs(piece_dir, exist_ok=True)
    mode, options = ("wbu", None) if work_dir else ("wb", PIECE_OPTIONS)
    counts = [0] * len(regions)
    with ExitStack() as stack:
        source = stack.enter_context(pysam.AlignmentFile(alignments, "r", check_sq=False))
        missing = set(source.references) - lookup.contigs
        if missing:
            raise ValueError(f"{alignments}: contigs in no region: {', '.join(sorted(missing)[:5])}")
        pieces = [
            stack.enter_context(
                pysam.AlignmentFile(os.path.join(piece_dir, f"{r.name}.bam"), mode, template=source, format_options=options)
            )
            for r in regions
        ]
        for record in source:
            index = lookup.index(record.reference_name, record.reference_start)
            pieces[index].write(record)
            counts[index] += 1
    if work_dir:
        job_shell_alive(parent, out_dir)
        os.makedirs(out_dir, exist_ok=True)
        for region in regions:
            sort_piece(os.path.join(piece_dir, f"{region.name}.bam"), os.path.join(out_dir, f"{region.name}.bam"),
                       work_dir, keep_programs, threads)
        job_shell_alive(parent, out_dir)
    return {region.name: n for region, n in zip(regions, counts)}


def job_shell_alive(parent: int, out_dir: str) -> None:
    """Exit (removing out_dir) when the job's shell that started this scatter is gone: killed, its
    job already counts as failed and its outputs as removed, and an orphaned scatter must not
    write them again."""
    if os.getppid() != parent:
        shutil.rmtree(out_dir, ignore_errors=True)
        sys.exit(f"scatter: the job's shell (pid {parent}) is gone; {out_dir} not written")


def sort_piece(unsorted: str, out: str, work_dir: str, keep_programs: bool, threads: int = 1) -> None:
    """bamsort `unsorted` into `out` (the unsorted piece stays for the job's work directory to
    remove: the job's node-local peak is all its pieces at once either way).

    bammerge keeps every input's @PG lines, and bamsort writes checksums of what it sorted as
    @CO lines: merged from every chunk's piece they would swell each header by thousands of
    lines. So `out` has bamsort's header without its checksums, and its @PG lines (bwa's,
    bamsort's) only with keep_programs (the first chunk: as `samtools cat` of the pieces gave
    the header of the first)."""
    sorted_bam = os.path.join(work_dir, "sorted.bam")
    with subprocess.Popen([*SORT, f"I={unsorted}", f"tmpfile={os.path.join(work_dir, 'bamsort')}"],
                          stdout=subprocess.PIPE) as sort:
        subprocess.run(["samtools", "view", "--no-PG", "-1", "-@", str(threads), "-o", sorted_bam],
                       stdin=sort.stdout, check=True)
    if sort.returncode:
        raise subprocess.CalledProcessError(sort.returncode, sort.args)
    header = subprocess.run(["samtools", "view", "-H", "--no-PG", sorted_bam], check=True, capture_output=True,
                            text=True).stdout.splitlines(True)
    dropped = (CHECKSUM_COMMENT,) if keep_programs else (CHECKSUM_COMMENT, "@PG\t")
    header_sam = os.path.join(work_dir, "header.sam")
    with open(header_sam, "w") as handle:
        handle.writelines(line for line in header if not line.startswith(dropped))
    with open(out, "wb") as handle:
        subprocess.run(["samtools", "reheader", "-P", header_sam, sorted_bam], stdout=handle, check=True)
    os.remove(sorted_bam)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Scatter a SAM/BAM by region into one BAM per region.")
    parser.add_argument("--regions", required=True, help="region table (genomon_smk.plan.regions)")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--work-dir", help="sort the pieces with bamsort, using this directory")
    parser.add_argument("--threads", type=int, default=1, help="compression threads for the sorted pieces")
    parser.add_argument("--drop-programs", action="store_true",
                        help="sorted pieces without @PG lines (every chunk but the first)")
    parser.add_argument("alignments", help="SAM or BAM from the aligner (- for stdin)")
    args = parser.parse_args(argv)
    counts = scatter(args.alignments, args.regions, args.out_dir, args.work_dir, not args.drop_programs, args.threads)
    print(f"scatter: {sum(counts.values())} records into {len(counts)} regions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
