"""Scatter one chunk's alignments by region (Genomon's "scatter sam" into chr dirs).

bwa's SAM streams into biobambam2's bamsort, which coordinate-sorts the chunk while bwa maps
(the plain `bwa mem | bamsort` way: the sort's work overlaps bwa's); then samtools cuts the
sorted chunk into one BAM per region (compressed at level 1 by htslib's libdeflate on the job's
threads). Each record goes to the region holding its start position (reads without a position
go to the `unmapped` region), and every region gets a file, empty or not, so later stages never
have to guess which exist.

The sorting is done in the map jobs, spread over the cluster: a region's markdup job merges its
sorted pieces with bammerge, which gives the very order bamsort gives their concatenation (both
keep the input order of equal positions), so the final BAM holds the same records in the same
order as sorting each region's reads at once would.

Deliberate difference from upstream Genomon (docs/differences.md): the map job sorts and cuts
sorted pieces, where Genomon scatters unsorted and markdup sorts (:func:`scatter_unsorted`); the
same records in the same order.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

from contextlib import ExitStack

from genomon_smk.plan.regions import Region, RegionLookup, read_regions

SORT = ["bamsort", "SO=coordinate", "inputformat=sam", "level=0", "verbose=0"]
CHECKSUM_COMMENT = "@CO\tTY:checksum\t"


def scatter(alignments: str, regions_tsv: str, out_dir: str, work_dir: str, keep_programs: bool = True,
            threads: int = 1, job_shell: int | None = None) -> int:
    """Write `<out_dir>/<region>.bam`, coordinate-sorted, for every region (see piece_header for
    keep_programs); return the records written. `-` reads bwa's SAM from stdin. job_shell: the pid
    of the job's shell that started this scatter (default: the parent process now)."""
    regions = read_regions(regions_tsv)
    parent = os.getppid() if job_shell is None else job_shell
    sorted_bam = os.path.join(work_dir, "sorted.bam")
    with open(sorted_bam, "wb") as out:
        subprocess.run([*SORT, f"tmpfile={os.path.join(work_dir, 'bamsort')}",
                        *([] if alignments == "-" else [f"I={alignments}"])], stdout=out, check=True)
    header = samtools_text(["view", "-H", "--no-PG", sorted_bam])
    check_contigs(header, regions, alignments)
    header_sam = os.path.join(work_dir, "header.sam")
    with open(header_sam, "w") as handle:
        handle.write(piece_header(header, keep_programs))
    subprocess.run(["samtools", "index", sorted_bam], check=True)
    job_shell_alive(parent, out_dir)
    os.makedirs(out_dir, exist_ok=True)
    for region in regions:
        cut_region(sorted_bam, region, header_sam, os.path.join(out_dir, f"{region.name}.bam"), work_dir, threads)
    job_shell_alive(parent, out_dir)
    return records_in(sorted_bam)


def scatter_unsorted(alignments: str, regions_tsv: str, out_dir: str) -> int:
    """Genomon's own scatter: every record into its region's piece in input order (compression
    level 1), for markdup to sort. Not the pipeline's way any more: the baseline that the sorted
    pieces are checked against (tests) and measured against (bench/markdup_paths.py)."""
    import pysam  # here: the map jobs, which never call this, start without its import

    regions = read_regions(regions_tsv)
    lookup = RegionLookup(regions)
    os.makedirs(out_dir, exist_ok=True)
    records = 0
    with ExitStack() as stack:
        source = stack.enter_context(pysam.AlignmentFile(alignments, "r", check_sq=False))
        pieces = [stack.enter_context(pysam.AlignmentFile(os.path.join(out_dir, f"{r.name}.bam"), "wb",
                                                          template=source, format_options=["level=1"]))
                  for r in regions]
        for record in source:
            pieces[lookup.index(record.reference_name, record.reference_start)].write(record)
            records += 1
    return records


def samtools_text(arguments: list[str]) -> str:
    return subprocess.run(["samtools", *arguments], check=True, capture_output=True, text=True).stdout


def check_contigs(header: str, regions: list[Region], alignments: str) -> None:
    """Every contig of the alignments' header lies in some region (a region table of another
    reference would drop its reads)."""
    in_regions = {interval.contig for region in regions for interval in region.intervals}
    contigs = [field[3:] for line in header.splitlines() if line.startswith("@SQ\t")
               for field in line.split("\t") if field.startswith("SN:")]
    missing = sorted(set(contigs) - in_regions)
    if missing:
        raise ValueError(f"{alignments}: contigs in no region: {', '.join(missing[:5])}")


def piece_header(header: str, keep_programs: bool) -> str:
    """The pieces' header: the sorted chunk's without bamsort's checksum comments, and without
    @PG lines unless keep_programs. bammerge keeps every input's @PG and @CO lines: from every
    chunk's piece they would swell each header by thousands of lines, so only the first chunk's
    pieces keep their @PG lines (bwa's, bamsort's), as `samtools cat` of the pieces gave the
    header of the first."""
    dropped = (CHECKSUM_COMMENT,) if keep_programs else (CHECKSUM_COMMENT, "@PG\t")
    return "".join(line for line in header.splitlines(True) if not line.startswith(dropped))


def cut_region(sorted_bam: str, region: Region, header_sam: str, out: str, work_dir: str, threads: int) -> None:
    """The region's records of the indexed, sorted chunk into `out`, compressed at level 1."""
    piece = os.path.join(work_dir, "piece.bam")
    view = ["samtools", "view", "-b", "-1", "--no-PG", "-@", str(threads), "-o", piece, sorted_bam]
    if region.is_unmapped:
        view.append("*")
    else:
        bed = os.path.join(work_dir, "region.bed")
        with open(bed, "w") as handle:
            handle.writelines(f"{i.contig}\t{i.start}\t{i.end}\n" for i in region.intervals)
        # The index finds the records overlapping the intervals; the expression keeps those
        # that start in them.
        view[2:2] = ["-M", "-L", bed, *(["-e", expression] if (expression := starts_inside(region)) else [])]
    subprocess.run(view, check=True)
    with open(out, "wb") as handle:
        subprocess.run(["samtools", "reheader", "-P", header_sam, piece], stdout=handle, check=True)
    os.remove(piece)


def starts_inside(region: Region) -> str:
    """A samtools filter expression true for records starting in the region's intervals, or ""
    when every record overlapping them starts in them (whole contigs: how small contigs are
    packed; a contig's first piece)."""
    by_contig: dict[str, list[str]] = {}
    for interval in region.intervals:
        # `pos` is 1-based: [start, end) is start + 1 .. end.
        by_contig.setdefault(interval.contig, []).append(f"(pos >= {interval.start + 1} && pos <= {interval.end})")
    partial = {contig: ranges for contig, ranges in by_contig.items()
               if any(i.contig == contig and i.start > 0 for i in region.intervals)}
    return " && ".join(f'(rname != "{contig}" || {" || ".join(ranges)})' for contig, ranges in partial.items())


def records_in(indexed_bam: str) -> int:
    """Records of an indexed BAM, from its index (mapped + unmapped per contig, and unplaced)."""
    return sum(int(line.split("\t")[2]) + int(line.split("\t")[3])
               for line in samtools_text(["idxstats", indexed_bam]).splitlines())


def job_shell_alive(parent: int, out_dir: str) -> None:
    """Exit (removing out_dir) when the job's shell that started this scatter is gone: killed, its
    job already counts as failed and its outputs as removed, and an orphaned scatter must not
    write them again."""
    if os.getppid() != parent:
        shutil.rmtree(out_dir, ignore_errors=True)
        sys.exit(f"scatter: the job's shell (pid {parent}) is gone; {out_dir} not written")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Sort bwa's SAM and cut it into one BAM per region.")
    parser.add_argument("--regions", required=True, help="region table (genomon_smk.plan.regions)")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--work-dir", required=True, help="the job's work directory: the sorted chunk, bamsort's files")
    parser.add_argument("--threads", type=int, default=1, help="compression threads for the pieces")
    parser.add_argument("--drop-programs", action="store_true",
                        help="pieces without @PG lines (every chunk but the first)")
    # Given by the shell ($$): a shell killed before this process starts would already be gone
    # when it looked up its parent, and an orphaned scatter would write the pieces anyway.
    parser.add_argument("--job-shell", type=int, help="pid of the job's shell: write nothing once it is gone")
    parser.add_argument("alignments", help="SAM from the aligner (- for stdin)")
    args = parser.parse_args(argv)
    records = scatter(args.alignments, args.regions, args.out_dir, args.work_dir, not args.drop_programs, args.threads,
                      args.job_shell)
    print(f"scatter: {records} records into {len(read_regions(args.regions))} regions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
