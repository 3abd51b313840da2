"""Utilisation timeline of a finished run, drawn as the Fugaku paper's Figs. 7-11: one line per
job slot, one bar per job coloured by Genomon stage, the slot utilisation and the throughput in
the title.

    python -m genomon_smk.plan.timeline --benchmarks RESULTS/benchmarks [--slots N] \\
        [--threads map_reads=2 markdup=2] --png T.png --svg T.svg --tsv T.tsv --summary T.summary.tsv

Where the job records come from: the benchmark files Snakemake writes for every job
(``{output_dir}/benchmarks/{rule}/{wildcards}.tsv``, every rule of this workflow has one). A job's
end is the file's modification time (Snakemake writes it as the job ends) and its start is the end
less the measured wall-clock seconds (column ``s``). They were preferred to Snakemake's metadata
(``.snakemake/metadata/``) because the metadata
  * lives in the directory Snakemake ran in, not with the results (every run from the repository
    root shares one), and can be switched off (``--drop-metadata``);
  * has one record per output file, not per job (a job's records differ in end time: each is
    that output's mtime, and a directory output's mtime is when its last entry was added);
  * takes the start from the moment the job was handed to the executor, so on a cluster it counts
    queue waiting as slot time.
The benchmark's ``s`` misses Snakemake's own per-job overhead (well under a second locally), so
the utilisation is a slight underestimate of the time slots were held.

Slots: a job with t threads holds t slots (t lines), as it holds t cores on a local run (a job
with 0 threads, a timer, holds none and is listed but not drawn); on a cluster where one slot is
one job (the paper's CMG), pass no ``--threads``. Jobs are put on lines
by greedy interval colouring in start order (each takes the lowest free lines), which for
one-slot jobs uses the fewest lines possible. Utilisation = busy slot-seconds / (slots x
makespan); samples/h counts tumor/normal pairs (``merge_mutation`` jobs) as the paper does, or
samples (``merge_bam`` jobs) for a run without pairs.

The workflow draws the jobs of this run only (``--run-started``: the jobs whose benchmark file was
written after the run started): the benchmark files of earlier runs stay in the directory, and a
rerun drawn with them would span the pause between the runs and count jobs it did not run. A
rerun that reruns a few jobs draws those; without ``--run-started`` every file is drawn.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from genomon_smk.plan.rules import RULES, STAGES

# Each rule's Genomon stage (from the rule table); the colours follow the pipeline's order.
STAGE_OF_RULE = {rule.name: rule.stage for rule in RULES}
STAGE_COLOURS = dict(
    zip(
        (*STAGES, "other"),
        ("#d4a6c8", "#9c755f", "#ff9da7", "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#e15759", "#edc948",
         "#499894", "#8cd17d", "#76b7b2", "#86bcb6", "#d37295", "#b6992d",
         "#bab0ac"),
        strict=True,
    )
)
# The rule that draws the timeline is not part of the run it draws.
TIMELINE_RULE = "utilisation_timeline"
# Benchmark times are the job's own measurements: a job may appear to start a moment before the
# one it replaced on a slot ended.
DEFAULT_TOLERANCE = 1.0
JOB_COLUMNS = ("rule", "name", "stage", "start", "end", "seconds", "threads", "lines")


@dataclass(frozen=True)
class JobRecord:
    rule: str
    name: str  # the wildcards, as the benchmark file's path below its rule's directory
    start: float  # seconds since the epoch
    end: float
    threads: int = 1

    @property
    def seconds(self) -> float:
        return self.end - self.start

    @property
    def stage(self) -> str:
        return STAGE_OF_RULE.get(self.rule, "other")


@dataclass(frozen=True)
class Summary:
    jobs: int
    slots: int
    makespan: float  # seconds, first start to last end
    busy: float  # slot-seconds
    samples: int
    # Which jobs the figures are of, the title's first words ("this run"); "" = every benchmark file.
    scope: str = ""

    @property
    def utilisation(self) -> float:
        return self.busy / (self.slots * self.makespan) if self.makespan > 0 else 0.0

    @property
    def samples_per_hour(self) -> float:
        return self.samples / (self.makespan / 3600) if self.makespan > 0 else 0.0

    def title(self) -> str:
        """The chart's title; the summary file holds the same string."""
        return ((f"{self.scope}: " if self.scope else "") + f"{self.jobs} jobs on {self.slots} slots in {format_duration(self.makespan)}: "
                f"utilisation {100 * self.utilisation:.1f} %, {self.samples_per_hour:.2f} samples/h")


def format_duration(seconds: float) -> str:
    if seconds < 600:
        return f"{seconds:.0f} s"
    if seconds < 3 * 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"


# --- job records


def read_benchmark(path: Path) -> tuple[float, int | None]:
    """Wall-clock seconds of one benchmark file (summed over `repeat` rows) and, in Snakemake's
    extended format (--benchmark-extended), the job's threads."""
    seconds, threads = 0.0, None
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            seconds += float(row["s"])
            if row.get("threads") not in (None, "", "NA", "-"):
                threads = int(float(row["threads"].strip("(),")))
    return seconds, threads


def read_benchmarks(directory: str | os.PathLike, threads_of_rule: dict[str, int] | None = None,
                    exclude: tuple[str, ...] = (TIMELINE_RULE,), ended_after: float | None = None) -> list[JobRecord]:
    """One record per benchmark file under `directory` ({rule}/{wildcards}.tsv): end = the file's
    mtime, start = end - s; threads from the file (extended format), else threads_of_rule, else 1.
    With ended_after (seconds since the epoch), only the files written after it."""
    threads_of_rule = threads_of_rule or {}
    records = []
    root = Path(directory)
    for path in sorted(root.rglob("*.tsv")):
        relative = path.relative_to(root)
        rule = relative.parts[0]
        if len(relative.parts) < 2 or rule in exclude:
            continue
        end = path.stat().st_mtime
        if ended_after is not None and end < ended_after:
            continue
        seconds, threads = read_benchmark(path)
        name = str(relative.relative_to(rule).with_suffix(""))
        if threads is None:
            threads = threads_of_rule.get(rule, 1)
        records.append(JobRecord(rule, name, end - seconds, end, threads))
    return records


def cap_threads(records: list[JobRecord], slots: int) -> list[JobRecord]:
    """Snakemake runs a job with at most --cores threads: so does the chart."""
    return [r if r.threads <= slots else JobRecord(r.rule, r.name, r.start, r.end, slots) for r in records]


def count_samples(records: list[JobRecord]) -> int:
    """Tumor/normal pairs analysed (merge_mutation jobs), or samples (merge_bam jobs) without pairs."""
    pairs = sum(r.rule == "merge_mutation" for r in records)
    return pairs or sum(r.rule == "merge_bam" for r in records)


# --- slots


def assign_lines(records: list[JobRecord], tolerance: float = DEFAULT_TOLERANCE) -> list[tuple[int, ...]]:
    """Greedy interval colouring in start order: each job takes the `threads` lowest-numbered lines
    free at its start (a line is free once its last job ended, within `tolerance` seconds); new
    lines open when too few are free. Returns each record's lines, in the records' order."""
    order = sorted(range(len(records)), key=lambda i: (records[i].start, -records[i].threads, records[i].end))
    line_end: list[float] = []
    lines: list[tuple[int, ...]] = [()] * len(records)
    for index in order:
        record = records[index]
        free = [line for line, end in enumerate(line_end) if end <= record.start + tolerance]
        while len(free) < record.threads:
            line_end.append(-math.inf)
            free.append(len(line_end) - 1)
        taken = tuple(free[:record.threads])
        for line in taken:
            line_end[line] = record.end
        lines[index] = taken
    return lines


def count_lines(lines: list[tuple[int, ...]]) -> int:
    return 1 + max((max(taken) for taken in lines if taken), default=-1)


def summarise(records: list[JobRecord], slots: int, samples: int | None = None, scope: str = "") -> Summary:
    start = min((r.start for r in records), default=0.0)
    end = max((r.end for r in records), default=0.0)
    busy = sum(r.threads * r.seconds for r in records)
    return Summary(jobs=len(records), slots=slots, makespan=end - start, busy=busy,
                   samples=count_samples(records) if samples is None else samples, scope=scope)


# --- outputs


def write_jobs(path: str, records: list[JobRecord], lines: list[tuple[int, ...]]) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(JOB_COLUMNS)
        for record, taken in sorted(zip(records, lines), key=lambda pair: (pair[0].start, pair[1])):
            writer.writerow([record.rule, record.name, record.stage, f"{record.start:.3f}", f"{record.end:.3f}",
                             f"{record.seconds:.3f}", record.threads, ",".join(map(str, taken))])


def write_summary(path: str, summary: Summary, lines_used: int) -> None:
    rows = [
        ("jobs", summary.jobs),
        ("slots", summary.slots),
        ("lines_used", lines_used),
        ("makespan_s", f"{summary.makespan:.3f}"),
        ("busy_slot_s", f"{summary.busy:.3f}"),
        ("utilisation_pct", f"{100 * summary.utilisation:.1f}"),
        ("samples", summary.samples),
        ("samples_per_hour", f"{summary.samples_per_hour:.2f}"),
        ("title", summary.title()),
    ]
    with open(path, "w") as handle:
        handle.write("key\tvalue\n")
        handle.writelines(f"{key}\t{value}\n" for key, value in rows)


def time_unit(makespan: float) -> tuple[str, float]:
    if makespan < 600:
        return "s", 1.0
    if makespan < 3 * 3600:
        return "min", 60.0
    return "h", 3600.0


def draw(records: list[JobRecord], lines: list[tuple[int, ...]], summary: Summary, outputs: list[str]) -> None:
    """The chart: x = time since the first job started, y = slot; PNG/SVG by file suffix. SVG text
    stays text, so the title can be read back from the file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Patch

    plt.rcParams["svg.fonttype"] = "none"
    origin = min((r.start for r in records), default=0.0)
    unit, scale = time_unit(summary.makespan)
    height = min(12.0, 2.0 + 0.25 * summary.slots)
    figure, axes = plt.subplots(figsize=(10, height))
    bars: dict[str, list[tuple[int, float, float]]] = {}
    for record, taken in zip(records, lines):
        for line in taken:
            bars.setdefault(record.stage, []).append((line, (record.start - origin) / scale, record.seconds / scale))
    for stage, colour in STAGE_COLOURS.items():
        if stage in bars:  # one collection per stage: thousands of jobs draw in a second
            axes.add_collection(PolyCollection(
                [[(left, line - 0.4), (left + width, line - 0.4), (left + width, line + 0.4), (left, line + 0.4)]
                 for line, left, width in bars[stage]],
                facecolors=colour, edgecolors="none"))
    axes.set_xlim(0, summary.makespan / scale or 1)
    axes.set_ylim(-0.6, max(summary.slots, count_lines(lines)) - 0.4)
    axes.invert_yaxis()
    axes.set_xlabel(f"time since the first job started ({unit})")
    axes.set_ylabel("slot")
    if summary.slots > 40:
        axes.set_yticks([])
    else:
        axes.set_yticks(range(summary.slots))
    axes.set_title(summary.title(), fontsize=10)
    axes.legend(handles=[Patch(color=STAGE_COLOURS[s], label=s) for s in STAGE_COLOURS if s in bars],
                loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    figure.tight_layout()
    for path in outputs:
        figure.savefig(path, dpi=120)
    plt.close(figure)


def parse_threads(values: list[str]) -> dict[str, int]:
    """RULE=N pairs (the rules' `threads:`)."""
    threads = {}
    for value in values:
        rule, _, count = value.partition("=")
        if not rule or not count.isdigit():
            raise argparse.ArgumentTypeError(f"--threads wants RULE=N, got {value!r}")
        threads[rule] = int(count)  # 0: the job holds no slot
    return threads


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--benchmarks", required=True, help="the run's {output_dir}/benchmarks")
    parser.add_argument("--run-started", type=float, default=None, metavar="EPOCH",
                        help="draw only the jobs that ended after this moment (seconds since the epoch): "
                             "the run's own jobs, \"this run\" in the title; default: every benchmark file")
    parser.add_argument("--slots", type=int, default=None,
                        help="slots of the run (its --cores); default: the fewest that held the jobs")
    parser.add_argument("--threads", nargs="*", default=[], metavar="RULE=N",
                        help="threads of each rule (a job holds that many slots); default 1")
    parser.add_argument("--samples", type=int, default=None,
                        help="samples analysed, for samples/h (default: pairs, else samples, from the jobs)")
    parser.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                        help="seconds a job may seem to overlap the one before it on a slot")
    parser.add_argument("--png")
    parser.add_argument("--svg")
    parser.add_argument("--tsv", help="the job records, with the lines each job was drawn on")
    parser.add_argument("--summary", help="jobs, slots, makespan, utilisation, samples/h and the title")
    args = parser.parse_args(argv)
    try:
        threads = parse_threads(args.threads)
    except argparse.ArgumentTypeError as error:
        parser.error(str(error))
    records = read_benchmarks(args.benchmarks, threads, ended_after=args.run_started)
    if not records and args.run_started is None:
        print(f"timeline: no benchmark files under {args.benchmarks}", file=sys.stderr)
        return 1
    # A run that ran nothing before its timeline (the chart alone redrawn) gets an empty chart.
    if args.slots:
        records = cap_threads(records, args.slots)
    lines = assign_lines(records, args.tolerance)
    lines_used = count_lines(lines)
    slots = max(args.slots or 0, lines_used)
    if args.slots and lines_used > args.slots:
        print(f"timeline: the jobs overlap on {lines_used} slots, more than the {args.slots} given; "
              f"drawn and counted with {lines_used}", file=sys.stderr)
    summary = summarise(records, slots, args.samples, "this run" if args.run_started is not None else "")
    if args.tsv:
        write_jobs(args.tsv, records, lines)
    if args.summary:
        write_summary(args.summary, summary, lines_used)
    draw(records, lines, summary, [path for path in (args.png, args.svg) if path])
    print(summary.title())
    return 0


if __name__ == "__main__":
    sys.exit(main())
