"""Speed of ``mutfilter realignment`` at ~60x depth (candidates per second).

Builds a random reference, a tumor and a normal BAM with paired 150 bp reads at about the
requested depth around each candidate SNV (30% alt fragments in the tumor, none in the normal),
then times the realignment filter in parasail (default) and edlib mode.

    .venv/bin/python bench/mutfilter_speed.py [--sites 200] [--depth 60] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from genomon_smk.tools.mutfilter import cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the tests' BAM builder
from synth import random_sequence, simulate_snv_bam, write_reference  # noqa: E402


def build(workdir: Path, sites: int, depth: int) -> dict:
    """Write reference, BAMs and the candidate table; return their paths."""
    spacing = 1000
    reference = random_sequence(spacing * (sites + 1), seed=2024)
    positions = [spacing * (i + 1) for i in range(sites)]
    alts = [next(b for b in "ACGT" if b != reference[p]) for p in positions]
    ref = write_reference(str(workdir / "ref.fa"), {"chr1": reference})
    snvs = list(zip(positions, alts))
    tumor = simulate_snv_bam(str(workdir / "tumor.bam"), "chr1", reference, snvs, depth,
                             alt_fraction=0.3, seed=1)
    normal = simulate_snv_bam(str(workdir / "normal.bam"), "chr1", reference, snvs, depth,
                              alt_fraction=0.0, seed=2)
    target = workdir / "candidates.txt"
    target.write_text("".join(f"chr1\t{p + 1}\t{p + 1}\t{reference[p]}\t{a}\n"
                              for p, a in snvs))
    return {"ref": ref, "tumor": tumor, "normal": normal, "target": str(target)}


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (worker processes)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def time_run(files: dict, out: Path, extra: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds for one realignment run over all candidates.

    CPU seconds are reported too because the machine may be shared: wall time then
    overstates the cost.
    """
    argv = ["realignment", "-t", files["target"], "-1", files["tumor"], "-2", files["normal"],
            "-o", str(out), "-r", files["ref"], *extra]
    started, cpu_started = time.perf_counter(), cpu_seconds()
    assert cli.main(argv) == 0
    return time.perf_counter() - started, cpu_seconds() - cpu_started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, default=200)
    parser.add_argument("--depth", type=int, default=60)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        files = build(workdir, args.sites, args.depth)
        for label, extra in (("parasail", []), ("edlib", ["--edlib"])):
            wall, cpu = time_run(files, workdir / f"{label}.txt",
                                 [*extra, "-T", str(args.threads)])
            first = (workdir / f"{label}.txt").read_text().splitlines()[0].split("\t")[5:]
            print(f"{label:9s} {args.sites} candidates, {args.depth}x tumor+normal, "
                  f"{args.threads} thread(s): {wall:.2f} s wall = "
                  f"{args.sites / wall:.1f} candidates/s; {cpu:.2f} CPU s = "
                  f"{args.sites / cpu:.1f} candidates per CPU-second  "
                  f"(first row: {' '.join(first)})")


if __name__ == "__main__":
    main()
