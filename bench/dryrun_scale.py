#!/usr/bin/env python3
"""Time `snakemake -n` on cohort-sized configs (a GRCh37-shaped reference, placeholder inputs).

    .venv/bin/python bench/dryrun_scale.py [--pairs 1 10] [--chunks 2712] [--regions 87]

Prints, per configuration: samples, chunks per sample, regions, jobs in the DAG, wall seconds
and peak memory of the dry run. Inputs are empty placeholder files: a dry run never reads them.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from genomon_smk.reference import reference_files  # noqa: E402
from genomon_smk.regions import derive_regions  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
GRCH37 = [
    ("1", 249250621), ("2", 243199373), ("3", 198022430), ("4", 191154276), ("5", 180915260),
    ("6", 171115067), ("7", 159138663), ("8", 146364022), ("9", 141213431), ("10", 135534747),
    ("11", 135006516), ("12", 133851895), ("13", 115169878), ("14", 107349540), ("15", 102531392),
    ("16", 90354753), ("17", 81195210), ("18", 78077248), ("19", 59128983), ("20", 63025520),
    ("21", 48129895), ("22", 51304566), ("X", 155270560), ("Y", 59373566), ("MT", 16569),
]


def max_length_for(regions: int) -> int:
    """The contig cut length that gives `regions` regions (incl. unmapped) on GRCh37."""
    low, high = 1_000_000, 250_000_000
    while low < high:
        middle = (low + high) // 2
        if len(derive_regions(GRCH37, middle, 1_000_000)) > regions:
            low = middle + 1
        else:
            high = middle
    return low


def write_inputs(directory: Path, pairs: int) -> None:
    reference = directory / "ref" / "GRCh37.fa"
    reference.parent.mkdir(parents=True)
    for path in reference_files(str(reference)):
        Path(path).touch()
    (directory / "ref" / "GRCh37.fa.fai").write_text(
        "".join(f"{name}\t{length}\t0\t60\t61\n" for name, length in GRCH37)
    )
    (directory / "fastq").mkdir()
    rows, pair_rows = [], []
    for index in range(pairs):
        for role in ("tumor", "normal"):
            sample = f"{role}{index:03d}"
            for mate in (1, 2):
                (directory / "fastq" / f"{sample}_R{mate}.fastq.gz").touch()
            rows.append(f"{sample}\tfastq/{sample}_R1.fastq.gz\tfastq/{sample}_R2.fastq.gz\n")
        pair_rows.append(f"tumor{index:03d}\tnormal{index:03d}\t\n")
    (directory / "samples.tsv").write_text("sample\tfq1\tfq2\n" + "".join(rows))
    (directory / "pairs.tsv").write_text("tumor\tnormal\tpanel\n" + "".join(pair_rows))


def dry_run(pairs: int, chunks: int, regions: int) -> tuple[int, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        write_inputs(directory, pairs)
        max_length = max_length_for(regions)
        (directory / "config.yaml").write_text(
            "reference: ref/GRCh37.fa\nsamples: samples.tsv\npairs: pairs.tsv\n"
            f"split: {{chunks: {chunks}}}\nregions: {{max_length: {max_length}, pack_bp: 1000000}}\n"
        )
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        start = time.monotonic()
        result = subprocess.run(
            [str(Path(sys.executable).parent / "snakemake"), "-n", "--quiet", "rules", "--cores", "2",
             "--configfile", str(directory / "config.yaml")],
            cwd=REPO, capture_output=True, text=True,
        )
        seconds = time.monotonic() - start
        peak_mb = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
        if result.returncode != 0:
            raise SystemExit(result.stdout[-2000:] + result.stderr[-2000:])
        total = next(int(line.split()[1]) for line in result.stdout.splitlines() if line.startswith("total"))
        return total, seconds, peak_mb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, nargs="+", default=[1])
    parser.add_argument("--chunks", type=int, nargs="+", default=[2712])
    parser.add_argument("--regions", type=int, default=87)
    args = parser.parse_args()
    print(f"{'pairs':>5} {'samples':>7} {'chunks':>6} {'regions':>7} {'jobs':>8} {'seconds':>8} {'peak MB':>8}")
    for pairs in args.pairs:
        for chunks in args.chunks:
            jobs, seconds, peak = dry_run(pairs, chunks, args.regions)
            print(f"{pairs:>5} {2 * pairs:>7} {chunks:>6} {args.regions:>7} {jobs:>8} {seconds:>8.1f} {peak:>8.0f}")


if __name__ == "__main__":
    main()
