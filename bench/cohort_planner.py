#!/usr/bin/env python3
"""The cohort planner on the paper's Genomon shape, next to the paper's Table 7, and the same shape
with this pipeline's map and markdup (pieces sorted in the map jobs, merged in markdup).

    .venv/bin/python bench/cohort_planner.py [--slots 383] [--stagger 300] [--target-hours 3] [--stages 1 4]

`--stages N ...` also prints, for N pipelines, each stage's span (its first job's start to its last
job's end) and its slot-hours, for the paper's shape and this pipeline's.

For a real config and a finished run's durations use the planner itself:
    .venv/bin/python -m genomon_smk.plan.planner --configfile CONFIG --benchmarks RESULTS/benchmarks ...
"""

from __future__ import annotations

import argparse
import math

from genomon_smk.plan.planner import GENOMON_SMK_SECONDS, Job, Result, paper_cohort, recommend_slots, simulate

PAPER = {1: (2.48, 0.40, 22.4), 2: (3.08, 0.65, 42.1), 3: (3.90, 0.77, 54.4), 4: (5.01, 0.80, 63.4)}


def stage_spans(jobs: list[Job], result: Result) -> dict[str, tuple[float, float, float]]:
    """stage -> (first start, last end, busy slot-seconds), in pipeline order."""
    spans: dict[str, tuple[float, float, float]] = {}
    for job, start in zip(jobs, result.starts):
        first, last, busy = spans.get(job.stage, (start, start, 0.0))
        spans[job.stage] = (min(first, start), max(last, start + job.duration), busy + job.duration * job.threads)
    return spans


def print_stages(count: int, slots: int, stagger: float) -> None:
    designs = {}
    for label, seconds in (("paper", None), ("genomon-smk", GENOMON_SMK_SECONDS)):
        jobs, release = paper_cohort(count, stagger, *([seconds] if seconds else []))
        result = simulate(jobs, slots, samples=count, release=release)
        designs[label] = (stage_spans(jobs, result), result.makespan)
    print(f"{count} pipeline(s) on {slots} slots: each stage's first start - last end (h) and slot-hours")
    print(f"{'stage':<15} | {'paper shape':>23} | {'genomon-smk':>23}")
    for stage in designs["paper"][0]:
        cells = [f"{first / 3600:5.2f} - {last / 3600:5.2f} {busy / 3600:8.1f}"
                 for first, last, busy in (spans[stage] for spans, _ in designs.values())]
        print(f"{stage:<15} | {cells[0]:>23} | {cells[1]:>23}")
    print(f"{'makespan':<15} | {designs['paper'][1] / 3600:>23.2f} | {designs['genomon-smk'][1] / 3600:>23.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--slots", type=int, default=383)
    parser.add_argument("--stagger", type=float, default=300.0)
    parser.add_argument("--target-hours", type=float, help="also give the fewest slots that finish in this time")
    parser.add_argument("--slots-per-node", type=int, default=4)
    parser.add_argument("--stages", type=int, nargs="*", default=[], metavar="N",
                        help="each stage's span and slot-hours for N pipelines")
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
        print_stages(count, args.slots, args.stagger)
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
