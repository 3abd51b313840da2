#!/usr/bin/env python3
"""GenomonSV parse on the `bench` preset's tumor: its time per BAM byte, what a whole-genome BAM
costs, and whether parsing per contig and concatenating gives the same junction files.

    .venv/bin/python bench/sv_parse_speed.py [--workdir .test/bench/sv]

Generates the `bench` preset (5 Mb of GRCh37 chr20, tumor 40x with its planted SVs) unless it is
there, maps the tumor (bwa mem, samtools sort, markdup as the workflow's BAM has duplicates
flagged), runs `GenomonSV parse` on the whole BAM, then on one BAM per contig, and compares the
clustered junction and improper records (their GenomonSV IDs, numbered per run, left out).
Prints the figures; docs/benchmarks.md quotes them.
"""

from __future__ import annotations

import argparse
import gzip
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GENOMON_SV = REPO / ".venv-sv" / "bin" / "GenomonSV"
WGS_BAM_BYTES = 100e9
KINDS = ("junction", "improper")


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, command))} failed:\n{result.stderr[-3000:]}")
    return result


def timed(command) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of a command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    run(command)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return cpu, time.monotonic() - start


def sample_bam(work: Path, sample: str = "tumor") -> Path:
    """The `bench` preset's BAM of a sample (made once in work/): mapped, sorted, duplicates marked."""
    data = work / "data"
    run([sys.executable, str(REPO / ".test" / "make_testdata.py"), str(data), "--preset", "bench"])
    bam = work / f"{sample}.bam"
    if bam.exists():
        return bam
    rows = [line.split("\t") for line in (data / "samples.tsv").read_text().splitlines()[1:]]
    fq1 = [str(data / row[1]) for row in rows if row[0] == sample]
    fq2 = [str(data / row[2]) for row in rows if row[0] == sample]
    reference = str(data / "ref" / "genome.fa")
    sorted_bam = work / f"{sample}.sorted.bam"
    script = (
        f"bwa mem -t 2 -R '@RG\\tID:{sample}\\tSM:{sample}' {reference} <(zcat {' '.join(fq1)}) <(zcat {' '.join(fq2)}) "
        f"| samtools fixmate -m - - | samtools sort -@ 2 -o {sorted_bam} - "
        f"&& samtools markdup {sorted_bam} {bam}.part && mv {bam}.part {bam} && samtools index {bam} "
        f"&& rm {sorted_bam}"
    )
    run(["bash", "-o", "pipefail", "-c", script])
    return bam


def records(prefix: Path, kind: str) -> list[str]:
    """The clustered records of a parse without GenomonSV's per-run ID (the 7th column)."""
    with gzip.open(f"{prefix}.{kind}.clustered.bedpe.gz", "rt") as handle:
        rows = [line.rstrip("\n").split("\t") for line in handle]
    return sorted("\t".join(row[:6] + row[7:]) for row in rows)


def work_dir(doc: str) -> Path:
    """The --workdir of an SV bench script (its BAMs are shared: .test/bench/sv by default)."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--workdir", default=str(REPO / ".test" / "bench" / "sv"))
    work = Path(parser.parse_args().workdir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    return work


def main() -> None:
    work = work_dir(__doc__)
    bam = sample_bam(work)
    size = bam.stat().st_size
    whole = work / "whole" / "tumor"
    cpu, wall = timed([str(GENOMON_SV), "parse", str(bam), str(whole)])
    print(f"GenomonSV parse, whole BAM ({size / 1e6:.1f} MB): {cpu:.1f} CPU s, {wall:.1f} s wall; "
          f"{size / 1e6 / cpu:.2f} MB per CPU s -> a {WGS_BAM_BYTES / 1e9:.0f} GB BAM: "
          f"{WGS_BAM_BYTES / (size / cpu) / 3600:.1f} CPU hours in one process")
    contigs = [line.split("\t")[0] for line in Path(f"{work}/data/ref/genome.fa.fai").read_text().splitlines()]
    pieces = {kind: [] for kind in KINDS}
    total_cpu = 0.0
    for contig in contigs:
        piece = work / "per_contig" / f"{contig}.bam"
        piece.parent.mkdir(parents=True, exist_ok=True)
        run(["samtools", "view", "-b", "-o", str(piece), str(bam), contig])
        run(["samtools", "index", str(piece)])
        prefix = work / "per_contig" / contig
        cpu, _ = timed([str(GENOMON_SV), "parse", str(piece), str(prefix)])
        total_cpu += cpu
        for kind in KINDS:
            pieces[kind] += records(prefix, kind)
    print(f"GenomonSV parse, one BAM per contig ({len(contigs)}): {total_cpu:.1f} CPU s in all")
    for kind in KINDS:
        ours, theirs = sorted(pieces[kind]), records(whole, kind)
        same = len(set(ours) & set(theirs))
        between = sum(1 for record in theirs if record.split("\t")[0] != record.split("\t")[3])
        print(f"  {kind}: whole BAM {len(theirs)} records ({between} joining two contigs), per contig "
              f"{len(ours)}, {same} identical: {'the same files' if ours == theirs else 'NOT the same files'}")


if __name__ == "__main__":
    main()
