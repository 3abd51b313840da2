"""Speed of the pmsignature fit (Genomon's ind mode) per K on a simulated cohort.

Usage: python bench/pmsignature_speed.py [--samples 1000] [--mutations 5000] [--ks 2,3,4,5,6]
                                         [--trials 10] [--em squarem|plain] [--threads 1]

Simulates N tumors with M SNVs each drawn from 3 planted ind signatures (numBases 5, strand,
3072 patterns) plus a background, then times `fit` (trialnum starts, tol 1e-4, as Genomon)
for each K and prints seconds per K, per trial, the iterations and the best LL. With fewer
trials than 10 the time for Genomon's 10 is extrapolated (labelled). The feature encoding
(reading mutation.cut.txt against the FASTA) is a separate, once-per-cohort cost; its rate is
measured by --encode (mutations per second on a synthetic FASTA).
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def cpu_seconds() -> float:
    """CPU seconds of this process and of its finished children (the --processes workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--mutations", type=int, default=5000, help="per sample")
    parser.add_argument("--ks", default="2,3,4,5,6")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--em", choices=("squarem", "plain"), default="squarem")
    parser.add_argument("--threads", default="1", help="OPENBLAS_NUM_THREADS (default 1)")
    parser.add_argument("--processes", type=int, default=1, help="trials in parallel (fit -t)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--encode", type=int, default=0,
                        help="also time the feature encoding of this many mutations")
    args = parser.parse_args()
    os.environ["OPENBLAS_NUM_THREADS"] = args.threads     # before numpy loads OpenBLAS
    import numpy as np
    from genomon_smk.tools import pmsignature as pm

    rng = np.random.default_rng(args.seed)
    fdim = pm.IND.fdim
    n_codes = pm.IND.n_patterns
    feats = pm.decode(np.arange(n_codes), fdim)
    planted = [rng.dirichlet(np.full(d, 0.5), size=3) for d in fdim]
    P = np.ones((n_codes, 3))
    for feature, f in enumerate(planted):
        P *= f.T[feats[:, feature]]
    background = rng.dirichlet(np.full(n_codes, 5.0))
    P = np.column_stack([P, background])
    Q = rng.dirichlet(np.ones(4), size=args.samples)
    mix = Q @ P.T
    counts = np.array([rng.multinomial(args.mutations, m / m.sum()) for m in mix])
    keep = np.flatnonzero(counts.sum(axis=0) > 0)
    catalog = pm.Catalog(pm.IND, [f"t{i}" for i in range(args.samples)], keep, counts[:, keep])
    model = pm.model_for(catalog, background)
    density = np.count_nonzero(catalog.counts) / catalog.counts.size
    print(f"cohort: {args.samples} tumors x {args.mutations} SNVs, {len(keep)} of {n_codes} "
          f"patterns observed, {density:.0%} of the cells nonzero "
          f"({'sparse' if model.sparse else 'dense'} counts); {args.em}, "
          f"OPENBLAS_NUM_THREADS={args.threads}, {args.processes} process(es), "
          f"{os.cpu_count()} CPUs (shared; load average {os.getloadavg()[0]:.1f})")
    start = pm.random_start(rng, args.samples, 4, fdim, True)
    t, c = time.perf_counter(), time.process_time()
    for _ in range(5):
        model.em_step(start)
    print(f"one EM step: {(time.perf_counter() - t) / 5 * 1000:.0f} ms wall, "
          f"{(time.process_time() - c) / 5 * 1000:.0f} ms cpu")
    print("wall = elapsed seconds; cpu = CPU seconds of this process and its workers (on a "
          "shared node the wall time includes waiting for a core)")
    print("K\ttrials\twall s\tcpu s\tcpu s/trial\titerations per trial\tbest LL\t"
          "Genomon's 10 trials, cpu s")
    total = 0.0
    for K in [int(k) for k in args.ks.split(",")]:
        t, c = time.perf_counter(), cpu_seconds()
        iterations = []
        original = pm.run_em

        def counting(*a, **kw):
            result = original(*a, **kw)
            iterations.append(result.iterations)
            return result
        pm.run_em = counting        # (only seen in this process: with --processes > 1, "-")
        try:
            result = pm.fit(model, K, trials=args.trials, seed=args.seed,
                            accelerate=args.em == "squarem", processes=args.processes)
        finally:
            pm.run_em = original
        seconds, cpu = time.perf_counter() - t, cpu_seconds() - c
        ten = cpu / args.trials * 10
        total += ten
        label = f"{ten:.0f}" + ("" if args.trials == 10 else " (extrapolated)")
        print(f"{K}\t{args.trials}\t{seconds:.1f}\t{cpu:.1f}\t{cpu / args.trials:.1f}\t"
              f"{','.join(map(str, iterations)) or '-'}\t{result.loglik:.2f}\t{label}", flush=True)
    print(f"all K, 10 trials each: {total / 60:.1f} CPU min"
          + ("" if args.trials == 10 else " (extrapolated from the trials run)"))
    if args.encode:
        encode_rate(pm, np, args.encode)
    return 0


def encode_rate(pm, np, n):
    """Mutations per second of build_catalog on a synthetic 10 Mb genome with one transcript."""
    import tempfile
    import pysam
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        seq = "".join(rng.choice(list("ACGT"), 10_000_000))
        fa = os.path.join(tmp, "ref.fa")
        with open(fa, "w") as out:
            out.write(">1\n" + "\n".join(seq[i:i + 60] for i in range(0, len(seq), 60)) + "\n")
        pysam.faidx(fa)
        tx = pm.StrandMap({"1": [(0, len(seq), 1)]})
        pos = rng.integers(10, len(seq) - 10, n)
        rows = [(f"t{i % 1000}", "chr1", int(p) + 1, seq[p], "ACGT".replace(seq[p], "")[i % 3])
                for i, p in enumerate(pos)]
        with pysam.FastaFile(fa) as fasta:
            t = time.perf_counter()
            pm.build_catalog(rows, fasta, pm.IND, tx)
            seconds = time.perf_counter() - t
    print(f"feature encoding: {n} mutations in {seconds:.1f} s ({n / seconds:,.0f}/s); "
          f"1,000 x 5,000 = 5e6 mutations ~ {5e6 / (n / seconds) / 60:.1f} min, once per cohort")


if __name__ == "__main__":
    sys.exit(main())
