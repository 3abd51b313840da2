"""Cohort planner: simulate a workflow's jobs on a cluster of N slots, with stage priorities.

Jobs and their dependencies come from Snakemake (`snakemake -n --dag --forceall` of a config,
parsed by `read_dot`) or from a table such as the Fugaku paper's (`paper_pipeline`); durations
come from a finished run's benchmark files (mean seconds per rule, `benchmark_durations`) or from
the same table (`paper_rule_durations`). The simulation is list scheduling: whenever a slot is
free, the ready job with the highest priority (then the earliest released) starts; a job holds
one slot by default (the paper's CMG). Several pipelines can be started at once or staggered,
as the paper did (5 minutes apart, map jobs in a low-priority queue). `recommend_slots` finds
the fewest slots that finish within a target turnaround.

    python -m genomon_smk.plan.planner [--design genomon-smk]            # the paper's shape, 383 slots
    python -m genomon_smk.plan.planner --configfile my/config.yaml --benchmarks results/benchmarks \
        --slots 48 --pipelines 1 2 4 --target-hours 2 --slots-per-node 4 \
        [--threads map_reads=2 markdup=2] [--timeline DIR]

`--threads` makes a rule's jobs hold that many slots (a local run, where a slot is a core);
`--timeline` draws each simulated schedule with the run timeline's chart (genomon_smk.plan.timeline).
"""

from __future__ import annotations

import argparse
import heapq
import math
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from genomon_smk.plan.rules import FACTS, PRIORITIES, SETUP_RULES


@dataclass
class Job:
    name: str
    rule: str  # the workflow's rule (genomon_smk.plan.rules): its priority and its stage
    duration: float
    after: list[int] = field(default_factory=list)  # indexes of jobs this one waits for
    pipeline: int = 0
    threads: int = 1  # slots the job holds (1: one job per slot, as the paper's CMGs)

    @property
    def stage(self) -> str:
        """The rule's Genomon stage, as the rule table names it."""
        return FACTS[self.rule].stage if self.rule in FACTS else "other"


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
    """Run the jobs on `slots` slots; pipeline p may start at release[p] seconds. A job holds
    min(threads, slots) slots; when the best ready job does not fit, a lower one that does may
    start (as Snakemake fills the cores left)."""
    priority = PRIORITIES if priority is None else priority
    release = release or {}
    waiting = [len(job.after) for job in jobs]
    dependents: list[list[int]] = [[] for _ in jobs]
    for index, job in enumerate(jobs):
        for before in job.after:
            dependents[before].append(index)
    ready: list[tuple[int, float, int]] = []  # (-priority, released at, job)
    events: list[tuple[float, int]] = []  # (time, job) of job ends and pipeline releases (job -1 - p)
    started = {p for p in {job.pipeline for job in jobs} if release.get(p, 0.0) <= 0.0}
    for pipeline, at in release.items():
        if pipeline not in started:  # (a pipeline released at 0 is started now, once)
            heapq.heappush(events, (at, -1 - pipeline))
    for index, job in enumerate(jobs):
        if not job.after and job.pipeline in started:
            heapq.heappush(ready, (-priority.get(job.rule, 0), 0.0, index))
    now, free, busy, done = 0.0, slots, 0.0, 0
    starts = [0.0] * len(jobs)
    while done < len(jobs):
        too_wide = []
        while free and ready:
            entry = heapq.heappop(ready)
            index = entry[2]
            need = min(jobs[index].threads, slots)
            if need > free:
                too_wide.append(entry)
                continue
            starts[index] = now
            free -= need
            busy += need * jobs[index].duration
            heapq.heappush(events, (now + jobs[index].duration, index))
        for entry in too_wide:
            heapq.heappush(ready, entry)
        if not events:
            raise ValueError("jobs wait for each other: the dependencies have a cycle")
        now, index = heapq.heappop(events)
        if index < 0:  # a staggered pipeline starts
            pipeline = -1 - index
            started.add(pipeline)
            for job_index, job in enumerate(jobs):
                if job.pipeline == pipeline and not job.after:
                    heapq.heappush(ready, (-priority.get(job.rule, 0), now, job_index))
            continue
        free += min(jobs[index].threads, slots)
        done += 1
        for after in dependents[index]:
            waiting[after] -= 1
            if waiting[after] == 0:
                heapq.heappush(ready, (-priority.get(jobs[after].rule, 0), now, after))
    return Result(makespan=now, busy=busy, slots=slots, samples=samples, starts=tuple(starts))


# GRCh37 chromosomes (the markdup regions of the paper follow the contigs; small contigs make
# the many short jobs) in bp.
GRCH37_MAIN = [249250621, 243199373, 198022430, 191154276, 180915260, 171115067, 159138663, 146364022,
               141213431, 135534747, 135006516, 133851895, 115169878, 107349540, 102531392, 90354753,
               81195210, 78077248, 59128983, 63025520, 48129895, 51304566, 155270560, 59373566]


@dataclass(frozen=True)
class MapMarkdupSeconds:
    """A map job's seconds (one of 2712 per sample) and the longest markdup job's, at the paper's scale."""

    map: float
    markdup: float


# Genomon as the paper measured it: map 98 s (bwa, scatter); markdup bamsort 1513 s +
# bammarkduplicates 3370 s.
GENOMON_SECONDS = MapMarkdupSeconds(map=98.0, markdup=1513.0 + 3370.0)
# This pipeline: the map jobs sort their region pieces while bwa maps, markdup streams their merge
# into bammarkduplicates.
# The paper's seconds times the ratios bench/markdup_paths.py measured on the bench preset
# (same alignments; now / before; docs/benchmarks.md).
MAP_RATIO = 0.87  # bwa streamed into bamsort + samtools cuts, against bwa into a file + unsorted scatter
MARKDUP_RATIO = 0.49  # bammerge streamed into bammarkduplicates, against cat | bamsort | bammarkduplicates
GENOMON_SMK_SECONDS = MapMarkdupSeconds(map=GENOMON_SECONDS.map * MAP_RATIO, markdup=GENOMON_SECONDS.markdup * MARKDUP_RATIO)
DESIGNS = {"genomon": GENOMON_SECONDS, "genomon-smk": GENOMON_SMK_SECONDS}


def paper_pipeline(pipeline: int = 0, first_index: int = 0, seconds: MapMarkdupSeconds = GENOMON_SECONDS) -> list[Job]:
    """One tumor/normal pair shaped as in the Fugaku paper: per sample a split job (count 347 s +
    split 1146 s), 2712 map jobs (seconds.map: 98 s in the paper), 87 markdup jobs
    (seconds.markdup for the largest region: bamsort 1513 s + bammarkduplicates 3370 s in the
    paper, scaled by region length; 63 short jobs for the small contigs, the unmapped reads and
    the decoy), a merge bam job (samtools cat 191 s); then per pair 275 identify-mutations jobs
    (up to 1250 s, scaled by interval length) and a merge."""
    regions = GRCH37_MAIN + [16569] + [200_000] * 59 + [35_000_000, 171_823]  # chrM, GL contigs, hs37d5, EBV
    regions = regions + [50_000_000]  # the unmapped reads: about one long region's work
    assert len(regions) == 87
    longest = max(regions)
    intervals = [length for length in GRCH37_MAIN for _ in range(11)] + [16569]  # 275 intervals
    intervals = intervals[:275]
    jobs: list[Job] = []

    def add(name, rule, duration, after):
        jobs.append(Job(name, rule, duration, [first_index + a for a in after], pipeline))
        return first_index + len(jobs) - 1

    merges = []
    for sample in ("normal", "tumor"):
        split = add(f"{sample}.split", "split_fastq", 347 + 1146, [])
        maps = [add(f"{sample}.map{i}", "map_reads", seconds.map, [split - first_index]) for i in range(2712)]
        markdups = [
            add(f"{sample}.markdup{i}", "markdup", seconds.markdup * length / longest, [m - first_index for m in maps])
            for i, length in enumerate(regions)
        ]
        merges.append(add(f"{sample}.merge_bam", "merge_bam", 191.0, [m - first_index for m in markdups]))
    longest_interval = max(intervals)
    calls = [
        add(f"identify{i}", "identify_mutations", 1250 * length / longest_interval, [m - first_index for m in merges])
        for i, length in enumerate(intervals)
    ]
    add("merge_mutation", "merge_mutation", 10.0, [c - first_index for c in calls])
    return jobs


def paper_cohort(pipelines: int, stagger: float, seconds: MapMarkdupSeconds = GENOMON_SECONDS
                 ) -> tuple[list[Job], dict[int, float]]:
    jobs: list[Job] = []
    for pipeline in range(pipelines):
        jobs += paper_pipeline(pipeline, first_index=len(jobs), seconds=seconds)
    return jobs, {p: p * stagger for p in range(pipelines)}


def read_dot(text: str, duration: dict[str, float], threads: dict[str, int] | None = None) -> list[Job]:
    """Jobs from `snakemake -n --dag` output (dot): node labels carry the rule name; duration[rule]
    seconds and threads[rule] slots each (default 0 s, 1 slot)."""
    threads = threads or {}
    labels = dict(re.findall(r'^\s*(\d+)\[label = "([^"\\]+)', text, flags=re.M))
    order = {node: i for i, node in enumerate(labels)}

    jobs = [Job(f"{labels[n]}#{n}", labels[n], duration.get(labels[n], 0.0), threads=threads.get(labels[n], 1))
            for n in labels]
    for before, after in re.findall(r"^\s*(\d+)\s*->\s*(\d+)", text, flags=re.M):
        jobs[order[after]].after.append(order[before])
    return jobs


def dag_of_config(configfile: str, snakemake: str | None = None, cwd: str | None = None) -> str:
    """`snakemake -n --dag --forceall --configfile CONFIG` (every job of the config, done or not),
    run in cwd (the repository root, where workflow/Snakefile is)."""
    snakemake = snakemake or str(Path(sys.executable).parent / "snakemake")
    result = subprocess.run([snakemake, "-n", "--dag", "--forceall", "--configfile", configfile],
                            cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"snakemake --dag failed:\n{result.stderr[-4000:]}")
    return result.stdout


def benchmark_durations(directory: str) -> dict[str, float]:
    """Mean wall-clock seconds per rule of a finished run's benchmark files ({rule}/{wildcards}.tsv)."""
    from genomon_smk.plan.timeline import read_benchmarks  # (matplotlib is imported only to draw)

    seconds: dict[str, list[float]] = defaultdict(list)
    for record in read_benchmarks(directory, exclude=()):  # the timeline job is a job of the DAG too
        seconds[record.rule].append(record.seconds)
    return {rule: sum(values) / len(values) for rule, values in seconds.items()}


def paper_rule_durations(design: MapMarkdupSeconds = GENOMON_SMK_SECONDS) -> dict[str, float]:
    """Mean seconds per rule of the paper's shape (`paper_pipeline`) with this pipeline's map and
    markdup: split 1493, map and markdup (averaged over the regions) as the design has them,
    identify mutations averaged over its regions, merge bam 191, merge mutation 10. The paper
    has no gather or QC step: those rules take 0 s."""
    seconds: dict[str, list[float]] = defaultdict(list)
    for job in paper_pipeline(seconds=design):
        seconds[job.rule].append(job.duration)
    return {rule: sum(values) / len(values) for rule, values in seconds.items()}


def pairs_in(jobs: list[Job]) -> int:
    """Tumor/normal pairs a DAG analyses (merge_mutation jobs), or samples (merge_bam jobs) without pairs."""
    rules = [job.rule for job in jobs]
    return rules.count("merge_mutation") or rules.count("merge_bam") or 1


def replicate(jobs: list[Job], copies: int, stagger: float) -> tuple[list[Job], dict[int, float]]:
    """`copies` pipelines of the same DAG, pipeline p released at p * stagger seconds. The
    reference set-up jobs (built once into resources/ for every pipeline) are in the first only:
    the other pipelines wait for those."""
    once = {index for index, job in enumerate(jobs) if job.rule in SETUP_RULES}
    cohort: list[Job] = []
    for pipeline in range(copies):
        position, where = len(cohort), {}
        for index in range(len(jobs)):
            if pipeline and index in once:
                where[index] = index  # the first pipeline's job (it starts the cohort)
            else:
                where[index], position = position, position + 1
        cohort += [Job(job.name, job.rule, job.duration, [where[a] for a in job.after], pipeline, job.threads)
                   for index, job in enumerate(jobs) if not (pipeline and index in once)]
    return cohort, {p: p * stagger for p in range(copies)}


def recommend_slots(jobs: list[Job], samples: int, target: float, release: dict[int, float] | None = None,
                    priority: dict[str, int] | None = None) -> tuple[int, Result] | None:
    """The fewest slots (by bisection) whose simulated makespan is within `target` seconds, with
    that simulation; None if even one slot per job misses it (the critical path is longer)."""
    widest = max(1, len(jobs))
    best = simulate(jobs, widest, samples, release, priority)
    if best.makespan > target:
        return None
    low, high = 1, widest  # makespan(high) <= target
    while low < high:
        middle = (low + high) // 2
        result = simulate(jobs, middle, samples, release, priority)
        if result.makespan <= target:
            high, best = middle, result
        else:
            low = middle + 1
    return high, (best if best.slots == high else simulate(jobs, high, samples, release, priority))


def config_priorities(configfile: str) -> dict[str, int]:
    """The workflow's default priorities (rules.PRIORITIES) with the config file's over them."""
    import yaml

    with open(configfile) as handle:
        config = yaml.safe_load(handle) or {}
    return {**PRIORITIES, **(config.get("priorities") or {})}


def row(count: int, result: Result) -> str:
    return (f"{count:>9} {result.slots:>6} {result.makespan / 3600:>7.2f} {result.samples_per_hour:>9.2f} "
            f"{100 * result.utilisation:>13.1f}")


def draw_schedule(jobs: list[Job], result: Result, path: str) -> None:
    """The simulated schedule as the run's utilisation timeline (genomon_smk.plan.timeline's chart)."""
    from genomon_smk.plan.timeline import JobRecord, assign_lines, draw

    records = [JobRecord(job.rule, job.name, start, start + job.duration,
                         min(job.threads, result.slots))
               for job, start in zip(jobs, result.starts)]
    # The simulation never holds more than `slots` at once, so no line is added.
    draw(records, assign_lines(records, tolerance=0.0), result_summary(result, len(jobs)), [path])


def result_summary(result: Result, jobs: int):
    from genomon_smk.plan.timeline import Summary

    return Summary(jobs=jobs, slots=result.slots, makespan=result.makespan, busy=result.busy, samples=result.samples)


def parse_threads(values: list[str]) -> dict[str, int]:
    from genomon_smk.plan.timeline import parse_threads as parse

    return parse(values)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Simulate 1..k pipelines on N slots, with the stage priorities.")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--configfile", help="plan this config's jobs (runs `snakemake -n --dag --forceall` here)")
    source.add_argument("--dag", help="a saved `snakemake -n --dag` output ('-': stdin)")
    parser.add_argument("--benchmarks", help="a finished run's {output_dir}/benchmarks: mean seconds per rule "
                        "(default: the paper's durations)")
    parser.add_argument("--slots", type=int, default=383, help="job slots (the paper: 96 nodes x 4 CMGs - 1)")
    parser.add_argument("--pipelines", type=int, nargs="+", default=[1, 2, 3, 4], help="pipelines at once")
    parser.add_argument("--stagger", type=float, default=300.0, help="seconds between pipeline starts")
    parser.add_argument("--threads", nargs="*", default=[], metavar="RULE=N",
                        help="slots a job of RULE holds (its threads, for a local run); default 1")
    parser.add_argument("--target-hours", type=float, help="recommend the fewest slots that finish in this time")
    parser.add_argument("--slots-per-node", type=int, default=4, help="for the node count (A64FX: 4 CMGs)")
    parser.add_argument("--design", choices=DESIGNS,
                        help="map and markdup seconds at the paper's scale: Genomon's as the paper measured them "
                        "(default for the paper's shape), or this pipeline's (default for a DAG without --benchmarks)")
    parser.add_argument("--timeline", metavar="DIR",
                        help="draw each simulated schedule as DIR/planned_<N>pipelines.png (the run timeline's chart)")
    args = parser.parse_args(argv)
    try:
        threads = parse_threads(args.threads)
    except argparse.ArgumentTypeError as error:
        parser.error(str(error))

    design = args.design or ("genomon-smk" if args.configfile or args.dag else "genomon")
    if args.configfile or args.dag:
        if args.configfile:
            dot = dag_of_config(args.configfile)
        else:
            dot = sys.stdin.read() if args.dag == "-" else Path(args.dag).read_text()
        durations = benchmark_durations(args.benchmarks) if args.benchmarks else paper_rule_durations(DESIGNS[design])
        one = read_dot(dot, durations, threads)
        priority = config_priorities(args.configfile) if args.configfile else PRIORITIES
        per_pipeline = pairs_in(one)
        source_text = f"the DAG of {args.configfile or args.dag}"

        def cohort(count):
            return replicate(one, count, args.stagger)
    else:
        if args.benchmarks:
            parser.error("--benchmarks needs a DAG: --configfile or --dag")
        priority, per_pipeline, source_text = PRIORITIES, 1, "the paper's pipeline shape"

        def cohort(count):
            return paper_cohort(count, args.stagger, DESIGNS[design])
    durations_text = (f"mean seconds per rule of {args.benchmarks}" if args.benchmarks
                      else f"the paper's durations, map and markdup as {design} has them")
    jobs_one, _ = cohort(1)
    print(f"{len(jobs_one)} jobs per pipeline ({per_pipeline} pair(s)) from {source_text}; {durations_text}")
    print(f"{'pipelines':>9} {'slots':>6} {'hours':>7} {'samples/h':>9} {'utilisation %':>13}")
    for count in args.pipelines:
        jobs, release = cohort(count)
        result = simulate(jobs, args.slots, count * per_pipeline, release, priority)
        print(row(count, result))
        if args.timeline:
            Path(args.timeline).mkdir(parents=True, exist_ok=True)
            draw_schedule(jobs, result, str(Path(args.timeline) / f"planned_{count}pipelines.png"))
    if args.target_hours:
        print(f"fewest slots to finish within {args.target_hours:g} h:")
        for count in args.pipelines:
            jobs, release = cohort(count)
            found = recommend_slots(jobs, count * per_pipeline, args.target_hours * 3600, release, priority)
            if found is None:
                critical = simulate(jobs, len(jobs), count * per_pipeline, release, priority).makespan
                print(f"{count:>9} pipeline(s): not reachable, the critical path alone takes {critical / 3600:.2f} h")
                continue
            slots, result = found
            nodes = math.ceil(slots / args.slots_per_node)
            print(row(count, result) + f"   -> {slots} slots = {nodes} nodes of {args.slots_per_node}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
