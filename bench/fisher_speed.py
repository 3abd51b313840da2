"""Speed of `fisher comparison` on a simulated tumor/normal BAM pair.

Usage: python bench/fisher_speed.py [--length 100000] [--depth 40] [--workdir DIR]

Simulates a random reference, germline SNPs (shared), somatic SNVs (tumor only, VAF 10-40%)
and 0.5% sequencing errors in 100 bp single-end reads, then times `samtools mpileup` alone
and `fisher comparison` with Genomon's pair parameters and prints positions per second and
how many somatic sites were called.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pysam

from genomon_smk.tools import fisher

PARAMS = "-q 20 -BQ0 -d 10000000 --ff UNMAP,SECONDARY,QCFAIL,DUP"
GENOMON_PAIR = ["--min_depth", "8", "--base_quality", "15", "--min_variant_read", "4",
                "--min_allele_freq", "0.02", "--max_allele_freq", "0.1", "--fisher_value", "0.1"]
READ_LENGTH = 100
BASES = np.frombuffer(b"ACGT", dtype=np.uint8)


def write_bam(path, contig, genome, haplotypes, depth, rng):
    """Reads from `haplotypes` [(sequence array, weight)], errors 0.5%, half reverse strand."""
    length = len(genome)
    n_reads = depth * length // READ_LENGTH
    starts = np.sort(rng.integers(0, length - READ_LENGTH, n_reads))
    weights = np.array([w for _, w in haplotypes])
    choice = rng.choice(len(haplotypes), n_reads, p=weights / weights.sum())
    header = {"HD": {"VN": "1.6", "SO": "coordinate"}, "SQ": [{"SN": contig, "LN": length}]}
    quals = pysam.qualitystring_to_array("I" * READ_LENGTH)
    with pysam.AlignmentFile(path, "wb", header=header) as out:
        for i, (start, hap) in enumerate(zip(starts, choice)):
            seq = haplotypes[hap][0][start:start + READ_LENGTH].copy()
            errors = rng.random(READ_LENGTH) < 0.005
            seq[errors] = BASES[rng.integers(0, 4, errors.sum())]
            read = pysam.AlignedSegment(out.header)
            read.query_name = "r%d" % i
            read.reference_id = 0
            read.reference_start = int(start)
            read.query_sequence = seq.tobytes().decode()
            read.query_qualities = quals
            read.cigartuples = [(0, READ_LENGTH)]
            read.mapping_quality = 60
            read.flag = 16 if rng.random() < 0.5 else 0
            out.write(read)
    pysam.index(path)


def mutate(sequence, positions, rng):
    """Copy of sequence with a different base at each position."""
    mutated = sequence.copy()
    for pos in positions:
        mutated[pos] = BASES[(np.searchsorted(BASES, sequence[pos]) + rng.integers(1, 4)) % 4]
    return mutated


def simulate_pair(workdir, length, depth, seed=1):
    """Write ref.fa (+.fai, .dict), tumor.bam, normal.bam; returns the somatic 1-based positions."""
    rng = np.random.default_rng(seed)
    genome = BASES[rng.integers(0, 4, length)]
    fasta = os.path.join(workdir, "ref.fa")
    with open(fasta, "w") as handle:
        handle.write(">chr1\n" + genome.tobytes().decode() + "\n")
    pysam.faidx(fasta)
    sites = rng.choice(np.arange(200, length - 200), 120, replace=False)
    germline, somatic = np.sort(sites[:80]), np.sort(sites[80:])
    het = mutate(genome, germline, rng)
    normal_haps = [(genome, 0.5), (het, 0.5)]
    vaf = rng.uniform(0.1, 0.4)
    tumor_haps = [(genome, 0.5), (het, 0.5 - vaf), (mutate(het, somatic, rng), vaf)]
    write_bam(os.path.join(workdir, "tumor.bam"), "chr1", genome, tumor_haps, depth, rng)
    write_bam(os.path.join(workdir, "normal.bam"), "chr1", genome, normal_haps, depth, rng)
    return [int(p) + 1 for p in somatic]


def main(argv=None):
    """Simulate, time, print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--length", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=40)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix="fisher_speed_")
    os.makedirs(workdir, exist_ok=True)
    somatic = simulate_pair(workdir, args.length, args.depth)
    ref, tumor, normal = (os.path.join(workdir, n) for n in ("ref.fa", "tumor.bam", "normal.bam"))
    out = os.path.join(workdir, "fisher.txt")

    begin = time.perf_counter()
    pileup = subprocess.run(["samtools", "mpileup", "-f", ref] + PARAMS.split() + [tumor, normal],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True)
    mpileup_seconds = time.perf_counter() - begin
    positions = pileup.stdout.count(b"\n")

    begin = time.perf_counter()
    fisher.main(["comparison", "-1", tumor, "-2", normal, "-o", out, "-r", ref,
                 "-S", PARAMS] + GENOMON_PAIR)
    fisher_seconds = time.perf_counter() - begin
    called = {int(line.split("\t")[1]) for line in open(out)}
    print("positions: %d (%d bp at %dx)" % (positions, args.length, args.depth))
    print("samtools mpileup alone: %.2f s (%.0f positions/s)"
          % (mpileup_seconds, positions / mpileup_seconds))
    print("fisher comparison:      %.2f s (%.0f positions/s)"
          % (fisher_seconds, positions / fisher_seconds))
    print("calls: %d; somatic sites called: %d of %d"
          % (len(called), len(called & set(somatic)), len(somatic)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
