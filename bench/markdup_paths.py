#!/usr/bin/env python3
"""Map's scatter and markdup before and after the map jobs sorted the region pieces, on the same
chunks and alignments of the `bench` preset, step by step; and the marked BAMs compared.

    .venv/bin/python bench/markdup_paths.py [--workdir .test/bench] [--sample tumor] [--chunks 8] [--threads 2]

before (the pipeline until 2026-11): the map job scatters bwa's alignments into unsorted pieces
(compression level 1); markdup runs `samtools cat` of a region's pieces | bamsort |
bammarkduplicates (reading stdin).
now: the map job bamsorts the chunk and cuts it into region pieces with samtools (compressed at
level 1: genomon_smk.steps.scatter); markdup merges a region's pieces with bammerge, streamed into
bammarkduplicates (which keeps a copy of its uncompressed input for its second pass and writes
uncompressed records, compressed and indexed by samtools).

A map job as each path runs it, chunk by chunk: before, bwa writes a SAM file (timed) that the
scatter then reads; now, bwa's output streams into the scatter, whose bamsort sorts while bwa maps
(`bwa -K` makes both runs' alignments the same). Prints wall and CPU seconds of the map jobs
(summed over chunks) and of markdup (summed over regions) for each path, their ratios, and
whether the marked BAMs hold the same records in the same order with the same duplicate flags,
and the same metrics: exit status 1 if not. The figures feed the planner's paper-scale model
(genomon_smk.plan.planner.paper_pipeline).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from genomon_smk.plan.regions import make_regions, write_regions  # noqa: E402
from genomon_smk.steps.fastq_split import chunk_paths, split_sample  # noqa: E402

BEFORE_MARKDUP = (
    "samtools cat -b pieces.txt -o - | bamsort SO=coordinate inputformat=bam level=1 inputthreads={t} "
    "outputthreads={t} sortthreads={t} tmpfile=bamsort | bammarkduplicates M=metrics.txt markthreads={t} "
    "index=1 indexfilename=out.bam.bai tmpfile=markdup >out.bam"
)
# As workflow/rules/markdup.smk runs it.
NOW_MARKDUP = (
    "bammerge IL=pieces.txt level=0 verbose=0 tmpfile=merge | bammarkduplicates M=metrics.txt markthreads=1 "
    "rewritebam=2 level=0 tmpfile=markdup | samtools view --no-PG -@ {t} -O bam,level=6 --write-index "
    "-o out.bam##idx##out.bam.bai"
)
# Genomon's scatter (unsorted pieces), which the pipeline no longer runs.
BEFORE_SCATTER = "import sys; from genomon_smk.steps.scatter import scatter_unsorted; scatter_unsorted(*sys.argv[1:])"


def timed(command: list[str] | str, cwd: Path | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of a command and its children, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    shell = isinstance(command, str)
    result = subprocess.run(["bash", "-o", "pipefail", "-c", command] if shell else command, cwd=cwd,
                            capture_output=True, text=True)
    wall = time.monotonic() - start
    if result.returncode != 0:
        shown = command if shell else shlex.join(command)
        raise SystemExit(f"{shown} failed:\n{result.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def add(total: list[float], seconds: tuple[float, float]) -> None:
    total[0] += seconds[0]
    total[1] += seconds[1]


def marked_digest(bam: Path) -> str:
    """MD5 of the records (names, flags, positions, everything) in file order, without the header."""
    digest = hashlib.md5()
    with subprocess.Popen(["samtools", "view", str(bam)], stdout=subprocess.PIPE) as view:
        for block in iter(lambda: view.stdout.read(1 << 20), b""):
            digest.update(block)
    if view.returncode != 0:
        raise SystemExit(f"samtools view {bam} failed")
    return digest.hexdigest()


def metrics_rows(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line and not line.startswith("#")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", default=str(REPO / ".test" / "bench"))
    parser.add_argument("--sample", default="tumor")
    parser.add_argument("--chunks", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    python = sys.executable
    work = Path(args.workdir).resolve()
    data = work / "data"
    timed([python, str(REPO / ".test" / "make_testdata.py"), str(data), "--preset", "bench"])
    reference = data / "ref" / "genome.fa"
    out = work / "markdup_paths"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    regions = make_regions(f"{reference}.fai", None, 50_000_000, 10_000_000)  # the default config's
    with open(out / "regions.tsv", "w") as handle:
        write_regions(regions, handle)

    rows = [line.split("\t") for line in (data / "samples.tsv").read_text().splitlines()[1:]]
    lanes = [(str(data / r[1]), str(data / r[2])) for r in rows if r and r[0] == args.sample]
    chunks = chunk_paths(str(out / "split"), args.chunks)
    os.makedirs(out / "split")
    split_sample(lanes, chunks)
    bwa = [f"bwa mem -t {args.threads} -K 10000000 -T 0 -R '@RG\\tID:{args.sample}\\tSM:{args.sample}' "
           f"{shlex.quote(str(reference))} {fq1} {fq2} 2>/dev/null" for fq1, fq2 in chunks]
    sams = [out / f"chunk{number:04d}.sam" for number in range(len(chunks))]
    print(f"bench preset, sample {args.sample}: {args.chunks} chunks, {len(regions)} regions, "
          f"{args.threads} threads; load {' '.join(Path('/proc/loadavg').read_text().split()[:3])}", flush=True)

    totals = {}
    for path in ("before", "now"):
        map_seconds, markdup_seconds = [0.0, 0.0], [0.0, 0.0]
        for number, sam in enumerate(sams):
            pieces = out / path / "pieces" / f"{number:04d}"
            if path == "before":
                add(map_seconds, timed(f"{bwa[number]} >{sam}"))
                add(map_seconds, timed([python, "-c", BEFORE_SCATTER, str(sam), str(out / "regions.tsv"), str(pieces)]))
                sam.unlink()
            else:
                work_dir = out / path / "work" / f"{number:04d}"
                work_dir.mkdir(parents=True)
                scatter = [python, "-m", "genomon_smk.steps.scatter", "--regions", str(out / "regions.tsv"),
                           "--out-dir", str(pieces), "--work-dir", str(work_dir), "--threads", str(args.threads),
                           *(["--drop-programs"] if number else []), "-"]
                add(map_seconds, timed(f"{bwa[number]} | {shlex.join(scatter)}"))
        for region in regions:
            run_dir = out / path / "markdup" / region.name
            run_dir.mkdir(parents=True)
            (run_dir / "pieces.txt").write_text(
                "".join(f"{out / path / 'pieces' / f'{n:04d}' / region.name}.bam\n" for n in range(len(sams))))
            command = (BEFORE_MARKDUP if path == "before" else NOW_MARKDUP).format(t=args.threads)
            add(markdup_seconds, timed(f"ulimit -n $(ulimit -Hn); {command}", cwd=run_dir))
        totals[path] = (map_seconds, markdup_seconds)

    for step, index in (("map jobs", 0), ("markdup", 1)):
        before, now = totals["before"][index], totals["now"][index]
        print(f"{step:<8} before {before[0]:6.1f} s wall {before[1]:6.1f} s CPU   "
              f"now {now[0]:6.1f} s wall {now[1]:6.1f} s CPU   ratio wall {now[0] / before[0]:.2f} "
              f"CPU {now[1] / before[1]:.2f}", flush=True)
    both = [sum(totals[p][i][0] for i in (0, 1)) for p in ("before", "now")]
    print(f"map jobs + markdup  before {both[0]:.1f} s  now {both[1]:.1f} s  ratio {both[1] / both[0]:.2f}")

    different = []
    for region in regions:
        before_dir, now_dir = (out / p / "markdup" / region.name for p in ("before", "now"))
        if marked_digest(before_dir / "out.bam") != marked_digest(now_dir / "out.bam"):
            different.append(f"{region.name}: records")
        if metrics_rows(before_dir / "metrics.txt") != metrics_rows(now_dir / "metrics.txt"):
            different.append(f"{region.name}: metrics")
    if different:
        print("DIFFERENT: " + ", ".join(different))
        return 1
    print(f"identical: the marked BAMs' records, order and duplicate flags, and the metrics, in all "
          f"{len(regions)} regions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
