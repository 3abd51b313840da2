#!/usr/bin/env python3
"""Speed of each identify-mutations tool on the benchmark pair, per core, and what a whole genome costs.

    .venv/bin/python bench/mutation_speed.py [--workdir .test/bench]

Reads the BAMs that `bench/accuracy.py` made (tumor 40x, normal 30x, 3 panel normals, 5 Mb) and
runs the tools of one identify_mutations job over the whole benchmark genome, one after the
other as the workflow chains them, measuring the CPU seconds of each. Prints positions (fisher:
genome positions piled up; the filters: candidate rows) per CPU-second, and the core-hours a
3.1 Gb genome at the same depth would take, scaling fisher by genome length and the filters by
the candidate count per Mb seen here.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
from genomon_smk.plan.regions import derive_regions, read_fai  # noqa: E402

GENOME_BP = 3.1e9
SAMTOOLS = "-q 20 -BQ0 -d 10000000 --ff UNMAP,SECONDARY,QCFAIL,DUP"
FISHER = ["--min_depth", "8", "--base_quality", "15", "--min_variant_read", "4", "--min_allele_freq", "0.02",
          "--max_allele_freq", "0.1", "--fisher_value", "0.1", "--samtools_params", SAMTOOLS]


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one command, which must succeed."""
    cpu, wall = cpu_seconds(), time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
    return cpu_seconds() - cpu, time.monotonic() - wall


def rows(path: Path) -> int:
    return sum(1 for line in open(path) if line.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", default=str(REPO / ".test" / "bench"))
    args = parser.parse_args()
    work = Path(args.workdir).resolve()
    bam = work / "panel" / "results" / "bam"
    reference = work / "data" / "ref" / "genome.fa"
    if not (bam / "tumor" / "tumor.markdup.bam").exists():
        raise SystemExit(f"no benchmark BAMs in {bam}: run bench/accuracy.py first")
    tumor, normal = str(bam / "tumor" / "tumor.markdup.bam"), str(bam / "normal" / "normal.markdup.bam")
    contigs = read_fai(f"{reference}.fai")
    genome = sum(length for _, length in contigs)
    python = [sys.executable, "-m"]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        regions = out / "regions.txt"
        regions.write_text("".join(
            ",".join(i.samtools() for i in r.intervals) + "\n" for r in derive_regions(contigs, 2_000_000, 0) if r.intervals
        ))
        panel = out / "panel.txt"
        panel.write_text("".join(f"{bam / s / s}.markdup.bam\n" for s in ("pon1", "pon2", "pon3")))
        steps = [
            ("fisher comparison", python + ["genomon_smk.tools.fisher", "comparison", "-1", tumor, "-2", normal, "-r", str(reference),
                                            "-s", "samtools", "-L", str(regions), "-o", str(out / "fisher.txt"), *FISHER],
             None),
            ("mutfilter realignment", python + ["genomon_smk.tools.mutfilter", "realignment", "-t", str(out / "fisher.txt"), "-1", tumor,
                                                "-2", normal, "-r", str(reference), "-o", str(out / "realign.txt")], "fisher.txt"),
            ("mutfilter indel", python + ["genomon_smk.tools.mutfilter", "indel", "-t", str(out / "realign.txt"), "-2", normal,
                                          "-s", "samtools", "-o", str(out / "indel.txt")], "realign.txt"),
            ("mutfilter breakpoint", python + ["genomon_smk.tools.mutfilter", "breakpoint", "-t", str(out / "indel.txt"), "-2", normal,
                                               "-o", str(out / "breakpoint.txt")], "indel.txt"),
            ("EBFilter", python + ["genomon_smk.tools.ebfilter", "-f", "anno", "--loption", "-q", "20", "-Q", "15",
                                   str(out / "breakpoint.txt"), tumor, str(panel), str(out / "eb.txt")], "breakpoint.txt"),
        ]
        print(f"benchmark genome {genome / 1e6:.1f} Mb; tumor 40x, normal 30x, panel of 3")
        print(f"{'tool':<22} {'unit':<10} {'count':>9} {'CPU s':>8} {'wall s':>8} {'per CPU-s':>11} {'3.1 Gb core-h':>14}")
        total_core_hours = 0.0
        for name, command, input_name in steps:
            cpu, wall = timed(command)
            if input_name is None:
                count, unit, scale = genome, "positions", GENOME_BP / genome
            else:
                count, unit, scale = rows(out / input_name), "candidates", GENOME_BP / genome
            rate = count / cpu if cpu else float("inf")
            core_hours = cpu * scale / 3600
            total_core_hours += core_hours
            print(f"{name:<22} {unit:<10} {count:>9} {cpu:>8.1f} {wall:>8.1f} {rate:>11.0f} {core_hours:>14.1f}")
        print(f"{'identify_mutations':<22} {'':<10} {'':>9} {'':>8} {'':>8} {'':>11} {total_core_hours:>14.1f}")


if __name__ == "__main__":
    main()
