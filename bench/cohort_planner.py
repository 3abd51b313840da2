#!/usr/bin/env python3
"""The cohort planner on the paper's Genomon shape, next to the paper's Table 7, and the same shape
with this pipeline's map and markdup (pieces sorted in the map jobs, merged in markdup).

    .venv/bin/python bench/cohort_planner.py [--slots 383] [--stagger 300] [--target-hours 3] [--stages 1 4]

`--stages N ...` also prints, for N pipelines, each stage's span (its first job's start to its last
job's end) and its slot-hours, for the paper's shape and this pipeline's; `--cut-mb M ...` adds
this pipeline with its own regions: the genome cut into pieces of at most M Mb (the config's
`regions.max_length`), one markdup job per piece and sample and one identify-mutations job per
piece, each as long as its share of the genome (Genomon's markdup follows the contigs and its
mutation calling cuts each chromosome into 11 intervals).

For a real config and a finished run's durations use the planner itself:
    .venv/bin/python -m genomon_smk.plan.planner --configfile CONFIG --benchmarks RESULTS/benchmarks ...
"""

from __future__ import annotations

import argparse
import math

from genomon_smk.plan.planner import (GENOMON_SMK_SECONDS, GRCH37_MAIN, Job, Result, paper_cohort, recommend_slots,
                                      simulate)
from genomon_smk.plan.regions import cut_contig

# The paper shape's longest markdup region (chr1) and identify-mutations interval (chr1 / 11), whose
# jobs take the shape's longest markdup seconds and 1250 s.
LONGEST_REGION, LONGEST_INTERVAL, IDENTIFY_SECONDS = max(GRCH37_MAIN), max(GRCH37_MAIN) / 11, 1250.0
# The rest of the genome the paper's markdup covers (chrM, GL contigs, hs37d5, EBV, unmapped) as in
# planner.paper_pipeline.
EXTRA_REGIONS = [16569] + [200_000] * 59 + [35_000_000, 171_823, 50_000_000]

PAPER = {1: (2.48, 0.40, 22.4), 2: (3.08, 0.65, 42.1), 3: (3.90, 0.77, 54.4), 4: (5.01, 0.80, 63.4)}


def recut(jobs: list[Job], max_length: int) -> list[Job]:
    """The paper shape's jobs with this pipeline's regions: each chromosome cut into equal pieces of
    at most max_length (the small contigs as they were); markdup seconds and identify seconds in
    proportion to a piece's length."""
    pieces = [piece.end - piece.start for contig, length in enumerate(GRCH37_MAIN)
              for piece in cut_contig(str(contig), length, max_length)]
    markdup_max = max(job.duration for job in jobs if job.stage == "markdup")
    out: list[Job] = []

    def add(name, stage, duration, after, pipeline):
        out.append(Job(name, stage, duration, list(after), pipeline))
        return len(out) - 1

    for pipeline in sorted({job.pipeline for job in jobs}):
        merges = []
        own = [job for job in jobs if job.pipeline == pipeline]
        for sample in ("normal", "tumor"):
            split = add(f"{sample}.split", "split", next(j.duration for j in own if j.name == f"{sample}.split"), [],
                        pipeline)
            maps = [add(job.name, "map", job.duration, [split], pipeline)
                    for job in own if job.name.startswith(f"{sample}.map")]
            markdups = [add(f"{sample}.markdup{i}", "markdup", markdup_max * length / LONGEST_REGION, maps, pipeline)
                        for i, length in enumerate(pieces + EXTRA_REGIONS)]
            merges.append(add(f"{sample}.merge_bam", "merge_bam", 191.0, markdups, pipeline))
        calls = [add(f"identify{i}", "identify", IDENTIFY_SECONDS * length / LONGEST_INTERVAL, merges, pipeline)
                 for i, length in enumerate(pieces)]
        add("merge_mutation", "merge_mutation", 10.0, calls, pipeline)
    return out


def stage_spans(jobs: list[Job], result: Result) -> dict[str, tuple[float, float, float]]:
    """stage -> (first start, last end, busy slot-seconds), in pipeline order."""
    spans: dict[str, tuple[float, float, float]] = {}
    for job, start in zip(jobs, result.starts):
        first, last, busy = spans.get(job.stage, (start, start, 0.0))
        spans[job.stage] = (min(first, start), max(last, start + job.duration), busy + job.duration * job.threads)
    return spans


def print_stages(count: int, slots: int, stagger: float, cuts: list[float]) -> None:
    designs = {}
    for label, seconds in (("paper shape", None), ("genomon-smk", GENOMON_SMK_SECONDS)):
        jobs, release = paper_cohort(count, stagger, *([seconds] if seconds else []))
        designs[label] = (jobs, release)
    for cut in cuts:
        designs[f"genomon-smk, {cut:g} Mb"] = (recut(designs["genomon-smk"][0], int(cut * 1e6)),
                                               designs["genomon-smk"][1])
    spans = {}
    for label, (jobs, release) in designs.items():
        result = simulate(jobs, slots, samples=count, release=release)
        spans[label] = (stage_spans(jobs, result), result.makespan, sum(job.stage == "markdup" for job in jobs) // (2 * count),
                        sum(job.stage == "identify" for job in jobs) // count)
    print(f"{count} pipeline(s) on {slots} slots: each stage's first start - last end (h) and slot-hours")
    print(f"{'stage':<15} | " + " | ".join(f"{label:>23}" for label in spans))
    print(f"{'(regions)':<15} | " + " | ".join(f"{f'{m} markdup, {i} identify':>23}" for _, _, m, i in spans.values()))
    for stage in spans["paper shape"][0]:
        cells = [f"{first / 3600:5.2f} - {last / 3600:5.2f} {busy / 3600:8.1f}"
                 for first, last, busy in (stages[stage] for stages, *_ in spans.values())]
        print(f"{stage:<15} | " + " | ".join(f"{cell:>23}" for cell in cells))
    print(f"{'makespan':<15} | " + " | ".join(f"{makespan / 3600:>23.2f}" for _, makespan, *_ in spans.values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--slots", type=int, default=383)
    parser.add_argument("--stagger", type=float, default=300.0)
    parser.add_argument("--target-hours", type=float, help="also give the fewest slots that finish in this time")
    parser.add_argument("--slots-per-node", type=int, default=4)
    parser.add_argument("--stages", type=int, nargs="*", default=[], metavar="N",
                        help="each stage's span and slot-hours for N pipelines")
    parser.add_argument("--cut-mb", type=float, nargs="*", default=[], metavar="M",
                        help="with --stages, also this pipeline with regions of at most M Mb")
    args = parser.parse_args()
    print(f"{'pipelines':>9} | {'hours':>6} {'pairs/h':>7} {'util %':>6} | paper: {'hours':>5} {'pairs/h':>7} "
          f"{'util %':>6} | genomon-smk: {'hours':>5} {'pairs/h':>7} {'util %':>6}")
    for count, (hours, rate, utilisation) in PAPER.items():
        jobs, release = paper_cohort(count, args.stagger)
        result = simulate(jobs, args.slots, samples=count, release=release)
        jobs, release = paper_cohort(count, args.stagger, GENOMON_SMK_SECONDS)
        ours = simulate(jobs, args.slots, samples=count, release=release)
        print(f"{count:>9} | {result.makespan / 3600:>6.2f} {result.samples_per_hour:>7.2f} "
              f"{100 * result.utilisation:>6.1f} | {hours:>12.2f} {rate:>7.2f} {utilisation:>6.1f} | "
              f"{ours.makespan / 3600:>18.2f} {ours.samples_per_hour:>7.2f} {100 * ours.utilisation:>6.1f}")
    for count in args.stages:
        print()
        print_stages(count, args.slots, args.stagger, args.cut_mb)
    if args.target_hours:
        print(f"fewest slots to finish within {args.target_hours:g} h:")
        for count in PAPER:
            jobs, release = paper_cohort(count, args.stagger)
            found = recommend_slots(jobs, count, args.target_hours * 3600, release)
            if found is None:
                print(f"{count:>9} pipeline(s): not reachable (critical path)")
                continue
            slots, result = found
            print(f"{count:>9} pipeline(s): {slots} slots = {math.ceil(slots / args.slots_per_node)} nodes of "
                  f"{args.slots_per_node}, {result.makespan / 3600:.2f} h, {100 * result.utilisation:.1f} %")


if __name__ == "__main__":
    main()
