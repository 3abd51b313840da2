"""Cohort planner: simulate a workflow's jobs on a cluster of N slots, with stage priorities.

Jobs and their dependencies come from Snakemake (`snakemake -n --dag` of a config, parsed by
`read_dot`) or from a table such as the Fugaku paper's (`paper_pipeline`); durations come from
a finished run's benchmarks or the same table. The simulation is list scheduling: whenever a
slot is free, the ready job with the highest priority (then the earliest released) starts.
Several pipelines can be started at once or staggered, as the paper did (5 minutes apart, map
jobs in a low-priority queue).
"""

from __future__ import annotations

import argparse
import heapq
import re
import sys
from dataclasses import dataclass, field

# Snakemake priorities of the workflow's stages: map jobs fill the gaps (the paper's low-priority queue).
STAGE_PRIORITY = {"split": 10, "map": 0, "markdup": 10, "merge_bam": 30, "identify": 20, "merge_mutation": 30}


@dataclass
class Job:
    name: str
    stage: str
    duration: float
    after: list[int] = field(default_factory=list)  # indexes of jobs this one waits for
    pipeline: int = 0


@dataclass(frozen=True)
class Result:
    makespan: float
    busy: float
    slots: int
    samples: int  # tumor/normal pairs, as the paper counts them
    starts: tuple[float, ...] = ()  # start time of each job

    @property
    def utilisation(self) -> float:
        return self.busy / (self.slots * self.makespan)

    @property
    def samples_per_hour(self) -> float:
        return self.samples / (self.makespan / 3600)


def simulate(jobs: list[Job], slots: int, samples: int, release: dict[int, float] | None = None,
             priority: dict[str, int] | None = None) -> Result:
    """Run the jobs on `slots` slots; pipeline p may start at release[p] seconds."""
    priority = STAGE_PRIORITY if priority is None else priority
    release = release or {}
    waiting = [len(job.after) for job in jobs]
    dependents: list[list[int]] = [[] for _ in jobs]
    for index, job in enumerate(jobs):
        for before in job.after:
            dependents[before].append(index)
    ready: list[tuple[int, float, int]] = []  # (-priority, released at, job)
    events: list[tuple[float, int]] = []  # (time, job) of job ends and pipeline releases (job -1 - p)
    for pipeline, at in release.items():
        heapq.heappush(events, (at, -1 - pipeline))
    started = {p for p in {job.pipeline for job in jobs} if release.get(p, 0.0) <= 0.0}
    for index, job in enumerate(jobs):
        if not job.after and job.pipeline in started:
            heapq.heappush(ready, (-priority[job.stage], 0.0, index))
    now, free, busy, done = 0.0, slots, 0.0, 0
    starts = [0.0] * len(jobs)
    while done < len(jobs):
        while free and ready:
            _, _, index = heapq.heappop(ready)
            starts[index] = now
            free -= 1
            busy += jobs[index].duration
            heapq.heappush(events, (now + jobs[index].duration, index))
        if not events:
            raise ValueError("jobs wait for each other: the dependencies have a cycle")
        now, index = heapq.heappop(events)
        if index < 0:  # a staggered pipeline starts
            pipeline = -1 - index
            started.add(pipeline)
            for job_index, job in enumerate(jobs):
                if job.pipeline == pipeline and not job.after:
                    heapq.heappush(ready, (-priority[job.stage], now, job_index))
            continue
        free += 1
        done += 1
        for after in dependents[index]:
            waiting[after] -= 1
            if waiting[after] == 0:
                heapq.heappush(ready, (-priority[jobs[after].stage], now, after))
    return Result(makespan=now, busy=busy, slots=slots, samples=samples, starts=tuple(starts))


# GRCh37 chromosomes (the markdup regions of the paper follow the contigs; small contigs make
# the many short jobs) in bp.
GRCH37_MAIN = [249250621, 243199373, 198022430, 191154276, 180915260, 171115067, 159138663, 146364022,
               141213431, 135534747, 135006516, 133851895, 115169878, 107349540, 102531392, 90354753,
               81195210, 78077248, 59128983, 63025520, 48129895, 51304566, 155270560, 59373566]


def paper_pipeline(pipeline: int = 0, first_index: int = 0) -> list[Job]:
    """One tumor/normal pair shaped as in the Fugaku paper: per sample a split job (count 347 s +
    split 1146 s), 2712 map jobs of 98 s, 87 markdup jobs (bamsort 1513 s + bammarkduplicates
    3370 s for the largest region, scaled by region length; 63 short jobs for the small contigs,
    the unmapped reads and the decoy), a merge bam job (samtools cat 191 s); then per pair 275
    identify-mutations jobs (up to 1250 s, scaled by interval length) and a merge."""
    regions = GRCH37_MAIN + [16569] + [200_000] * 59 + [35_000_000, 171_823]  # chrM, GL contigs, hs37d5, EBV
    regions = regions + [50_000_000]  # the unmapped reads: about one long region's work
    assert len(regions) == 87
    longest = max(regions)
    intervals = [length for length in GRCH37_MAIN for _ in range(11)] + [16569]  # 275 intervals
    intervals = intervals[:275]
    jobs: list[Job] = []

    def add(name, stage, duration, after):
        jobs.append(Job(name, stage, duration, [first_index + a for a in after], pipeline))
        return first_index + len(jobs) - 1

    merges = []
    for sample in ("normal", "tumor"):
        split = add(f"{sample}.split", "split", 347 + 1146, [])
        maps = [add(f"{sample}.map{i}", "map", 98.0, [split - first_index]) for i in range(2712)]
        markdups = [
            add(f"{sample}.markdup{i}", "markdup", 4883 * length / longest, [m - first_index for m in maps])
            for i, length in enumerate(regions)
        ]
        merges.append(add(f"{sample}.merge_bam", "merge_bam", 191.0, [m - first_index for m in markdups]))
    longest_interval = max(intervals)
    calls = [
        add(f"identify{i}", "identify", 1250 * length / longest_interval, [m - first_index for m in merges])
        for i, length in enumerate(intervals)
    ]
    add("merge_mutation", "merge_mutation", 10.0, [c - first_index for c in calls])
    return jobs


def paper_cohort(pipelines: int, stagger: float) -> tuple[list[Job], dict[int, float]]:
    jobs: list[Job] = []
    for pipeline in range(pipelines):
        jobs += paper_pipeline(pipeline, first_index=len(jobs))
    return jobs, {p: p * stagger for p in range(pipelines)}


def read_dot(text: str, stage_of_rule: dict[str, str], duration: dict[str, float]) -> list[Job]:
    """Jobs from `snakemake -n --dag` output (dot): node labels carry the rule name."""
    labels = dict(re.findall(r'^\s*(\d+)\[label = "([^"\\]+)', text, flags=re.M))
    order = {node: i for i, node in enumerate(labels)}
    jobs = [Job(f"{labels[n]}#{n}", stage_of_rule.get(labels[n], "merge_mutation"), duration.get(labels[n], 0.0))
            for n in labels]
    for before, after in re.findall(r"^\s*(\d+)\s*->\s*(\d+)", text, flags=re.M):
        jobs[order[after]].after.append(order[before])
    return jobs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Simulate pipelines on N slots (the paper's Genomon shape).")
    parser.add_argument("--slots", type=int, default=383)
    parser.add_argument("--pipelines", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument("--stagger", type=float, default=300.0, help="seconds between pipeline starts")
    args = parser.parse_args(argv)
    print(f"{'pipelines':>9} {'hours':>6} {'samples/h':>9} {'utilisation %':>13}")
    for count in args.pipelines:
        jobs, release = paper_cohort(count, args.stagger)
        result = simulate(jobs, args.slots, samples=count, release=release)
        print(f"{count:>9} {result.makespan / 3600:>6.2f} {result.samples_per_hour:>9.2f} {100 * result.utilisation:>13.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
