#!/usr/bin/env python3
"""Speed of the clean-room gene annotator (genomon_smk.tools.annotate) on a chromosome's worth.

    .venv/bin/python bench/annotate_speed.py [--variants 1000000] [--genes hg19]
        [--reference /usr/share/doc/vt/examples/ref/20.fa.gz] [--workdir /tmp/annotate-bench]

Draws N variants uniformly over the reference's first contig (GRCh37 chr20 from Debian's
vt-examples by default: 63 Mb; positions on A/C/G/T only; 85 % SNVs, 8 % deletions of 1-5
bases, 7 % insertions of 1-5 bases) as a Genomon mutation TSV with a header and six extra
columns, then runs the command line against the full gene table (annot_utils' hg19 refGene by
default) and prints wall and CPU seconds (loading the table included) and the Func mix.
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pysam

REPO = Path(__file__).resolve().parents[1]


def write_variants(reference: str, count: int, path: Path, seed: int) -> str:
    fasta = pysam.FastaFile(reference)
    contig = fasta.references[0]
    seq = fasta.fetch(contig).upper()
    codes = np.frombuffer(seq.encode(), dtype=np.uint8)
    ok = np.flatnonzero(np.isin(codes, np.frombuffer(b"ACGT", dtype=np.uint8)))
    rng = np.random.default_rng(seed)
    pos0 = np.sort(rng.choice(ok[:-10], size=count, replace=False))
    kind = rng.random(count)
    lengths = rng.integers(1, 6, size=count)
    alts = rng.integers(0, 3, size=count)
    with open(path, "w") as out:
        out.write("Chr\tStart\tEnd\tRef\tAlt\tdepth_tumor\tvariantNum_tumor\tdepth_normal\t"
                  "variantNum_normal\tP-value(fisher)\tscore\n")
        for p, k, n, a in zip(pos0.tolist(), kind.tolist(), lengths.tolist(), alts.tolist()):
            ref = seq[p]
            if k < 0.85:
                alt = "ACGT".replace(ref, "")[a]
                row = (p + 1, p + 1, ref, alt)
            elif k < 0.93:
                row = (p + 1, p + n, seq[p:p + n], "-")
            else:
                row = (p + 1, p + 1, "-", "".join("ACGT"[(a + i * 7) % 4] for i in range(n)))
            out.write(f"{contig}\t{row[0]}\t{row[1]}\t{row[2]}\t{row[3]}\t40\t8\t30\t0\t12.5\t3.1\n")
    return contig


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", type=int, default=1_000_000)
    parser.add_argument("--genes", default="hg19")
    parser.add_argument("--reference", default="/usr/share/doc/vt/examples/ref/20.fa.gz")
    parser.add_argument("--workdir", default="/tmp/annotate-bench")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    source, target = work / f"variants.{args.variants}.tsv", work / "annotated.tsv"
    if not source.exists():
        write_variants(args.reference, args.variants, source, args.seed)
    began = time.time()
    subprocess.run([sys.executable, "-m", "genomon_smk.tools.annotate", "--genes", args.genes,
                    "--reference", args.reference, str(source), str(target)], check=True,
                   cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO / "src")))
    wall = time.time() - began
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    funcs = collections.Counter()
    with open(target) as handle:
        next(handle)
        for line in handle:
            funcs[line.split("\t", 6)[5]] += 1
    print(f"{args.variants} variants, genes {args.genes}: wall {wall:.1f} s, "
          f"CPU {usage.ru_utime + usage.ru_stime:.1f} s, peak RSS {usage.ru_maxrss / 1024:.0f} MB, "
          f"load average {os.getloadavg()[0]:.1f}")
    for func, n in funcs.most_common():
        print(f"  {func or '(empty)'}\t{n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
