"""What a cluster run was charged, per rule, next to the utilisation timeline: node-hours from the
scheduler's accounting (PJM: the `pjstat -S` / `pjsub -S` statistics or `pjstat -H -v`; Slurm:
`sacct`), beside the busy core-hours the timeline measured (its jobs TSV), so the stage plan's
node-hour figures can be compared with what was charged. Parsers are pure functions over the
commands' text (tested on captured text); the command line reads files or asks the scheduler.

    python -m genomon_smk.plan.accounting --timeline RESULTS/qc/timeline/timeline.jobs.tsv \\
        (--pjm-stats .snakemake/pjm-logs/*.stats | --pjstat-history FILE | --sacct FILE |
         --query pjm | --query slurm [--slurm-run-id UUID]) [--out charged.tsv]

A scheduler without accounting (the test Slurm runs with AccountingStorageType=none, where
sacct fails) is reported as such: the timeline's figures are printed alone.
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
from dataclasses import dataclass

# Job names: the PJM plugin submits `smk-NAME` (a rule, or a group of jobs packed on a node); the
# Slurm plugin comments each job `rule_NAME` or `rule_NAME_wildcards_...`.
PJM_NAME = re.compile(r"^smk-(?P<rule>.+)$")
SLURM_COMMENT = re.compile(r"^rule_(?P<rule>.+?)(?:_wildcards_.*)?$")


@dataclass(frozen=True)
class Charge:
    """One finished cluster job as its scheduler accounts it."""

    job_id: str
    rule: str  # the rule or job group ("?" when the scheduler does not say)
    seconds: float  # elapsed
    nodes: int
    cpus: int | None = None  # allocated (Slurm); PJM gives whole nodes
    state: str = ""

    @property
    def node_hours(self) -> float:
        return self.nodes * self.seconds / 3600


def clock_seconds(text: str) -> float | None:
    """`[D-]HH:MM:SS` (PJM, sacct's Elapsed), `MM:SS`, or `HH:MM:SS (N)` (PJM statistics: N is
    the seconds) as seconds; None for `-` or text that is none of these."""
    text = text.strip()
    inner = re.search(r"\((\d+)\)\s*$", text)
    if inner:
        return float(inner.group(1))
    match = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)(?:\.\d+)?", text)
    if not match:
        return float(text) if re.fullmatch(r"\d+(\.\d+)?", text) else None
    days, hours, minutes, seconds = (int(group or 0) for group in match.groups())
    return float(((days * 24 + hours) * 60 + minutes) * 60 + seconds)


def leading_int(text: str, default: int = 1) -> int:
    match = re.match(r"\s*(\d+)", text or "")
    return int(match.group(1)) if match else default


def rule_of(name: str, pattern: re.Pattern) -> str:
    match = pattern.match(name.strip())
    return match.group("rule") if match else "?"


# --- PJM


def parse_pjm_statistics(text: str) -> list[Charge]:
    """Job statistics as `pjstat -S` prints them and `pjsub -S` writes them (` KEY : VALUE`
    lines, a job's block starting at `JOB ID`), one or more jobs. A job without an elapsed time
    (still queued) is left out."""
    blocks: list[dict[str, str]] = []
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = " ".join(key.split())
        if key == "JOB ID":
            blocks.append({})
        if blocks:
            blocks[-1].setdefault(key, value.strip())
    charges = []
    for block in blocks:
        seconds = clock_seconds(block.get("ELAPSE TIME (USE)", "-"))
        if seconds is None:
            continue
        nodes = leading_int(block.get("NODE NUM (USE)") or block.get("NODE NUM (REQUIRE)", "1"))
        charges.append(Charge(block["JOB ID"], rule_of(block.get("JOB NAME", ""), PJM_NAME), seconds, nodes,
                              state=block.get("STATE", "")))
    return charges


def parse_pjstat_history(text: str) -> list[Charge]:
    """`pjstat -H -v`'s table (Fugaku's columns; JOB_ID, JOB_NAME, ST, ELAPSE_TIM and
    NODE_REQUIRE are read by name from the header)."""
    lines = [line for line in text.splitlines() if line.strip()]
    header_at = next((i for i, line in enumerate(lines) if line.split()[:1] == ["JOB_ID"]), None)
    if header_at is None:
        return []
    # Fixed-width columns, cut where the header's names start: values may hold blanks
    # (START_DATE is `11/27 21:19:30`).
    header = lines[header_at]
    starts = [match.start() for match in re.finditer(r"\S+", header)]
    columns = header.split()
    charges = []
    for line in lines[header_at + 1:]:
        row = {name: line[start:end].strip() for name, start, end in
               zip(columns, starts, starts[1:] + [max(len(line), starts[-1]) + 1])}
        seconds = clock_seconds(row.get("ELAPSE_TIM", "-"))
        if "JOB_ID" not in row or seconds is None:
            continue
        charges.append(Charge(row["JOB_ID"], rule_of(row.get("JOB_NAME", ""), PJM_NAME), seconds,
                              leading_int(row.get("NODE_REQUIRE", "1")), state=row.get("ST", "")))
    return charges


# --- Slurm

SACCT_FIELDS = ("JobIDRaw", "JobName", "Comment", "State", "ElapsedRaw", "NNodes", "AllocCPUS")


def sacct_command(run_id: str | None = None) -> list[str]:
    """sacct for the allocations (not their steps) of one Snakemake run (the Slurm plugin names
    every job of a run by its run id, logged as `SLURM run ID: ...`), or of the last day."""
    command = ["sacct", "--allocations", "--parsable2", f"--format={','.join(SACCT_FIELDS)}"]
    return command + (["--name", run_id] if run_id else ["--starttime", "now-1days"])


def parse_sacct(text: str) -> list[Charge]:
    """`sacct --parsable2` output with its header line (any field order; JobIDRaw or JobID,
    ElapsedRaw or Elapsed, NNodes, AllocCPUS, Comment); job steps (ids with a dot) are left out."""
    rows = list(csv.DictReader(text.splitlines(), delimiter="|"))
    charges = []
    for row in rows:
        job_id = row.get("JobIDRaw") or row.get("JobID") or ""
        if not job_id or "." in job_id:
            continue
        seconds = clock_seconds(row.get("ElapsedRaw") or row.get("Elapsed") or "-")
        if seconds is None:
            continue
        cpus = row.get("AllocCPUS")
        charges.append(Charge(job_id, rule_of(row.get("Comment") or "", SLURM_COMMENT), seconds,
                              leading_int(row.get("NNodes", "1")), int(cpus) if cpus and cpus.isdigit() else None,
                              (row.get("State") or "").split()[0] if row.get("State") else ""))
    return charges


# --- beside the timeline


@dataclass
class RuleFigures:
    rule: str
    timeline_jobs: int = 0
    core_hours: float = 0.0  # busy: the jobs' wall time x threads, from their benchmarks
    charged_jobs: int = 0
    node_hours: float = 0.0
    cpu_hours: float | None = None


def read_timeline_jobs(path: str) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def by_rule(timeline_rows: list[dict[str, str]], charges: list[Charge]) -> list[RuleFigures]:
    """Per rule (or job group): the timeline's jobs and busy core-hours beside the charged jobs
    and node-hours. A group job's charge stays under its group's name (its jobs are the
    timeline's rows of the group's rules)."""
    figures: dict[str, RuleFigures] = {}
    for row in timeline_rows:
        entry = figures.setdefault(row["rule"], RuleFigures(row["rule"]))
        entry.timeline_jobs += 1
        entry.core_hours += float(row["seconds"]) * int(row.get("threads") or 1) / 3600
    for charge in charges:
        entry = figures.setdefault(charge.rule, RuleFigures(charge.rule))
        entry.charged_jobs += 1
        entry.node_hours += charge.node_hours
        if charge.cpus is not None:
            entry.cpu_hours = (entry.cpu_hours or 0.0) + charge.cpus * charge.seconds / 3600
    return sorted(figures.values(), key=lambda f: (-f.node_hours, f.rule))


COLUMNS = ("rule", "timeline_jobs", "busy_core_hours", "charged_jobs", "charged_node_hours", "charged_cpu_hours")


def table_rows(figures: list[RuleFigures]) -> list[tuple[str, ...]]:
    rows = [(f.rule, str(f.timeline_jobs), f"{f.core_hours:.4f}", str(f.charged_jobs), f"{f.node_hours:.4f}",
             "-" if f.cpu_hours is None else f"{f.cpu_hours:.4f}") for f in figures]
    total = ("total", str(sum(f.timeline_jobs for f in figures)), f"{sum(f.core_hours for f in figures):.4f}",
             str(sum(f.charged_jobs for f in figures)), f"{sum(f.node_hours for f in figures):.4f}",
             "-" if all(f.cpu_hours is None for f in figures)
             else f"{sum(f.cpu_hours or 0.0 for f in figures):.4f}")
    return rows + [total]


def format_table(figures: list[RuleFigures]) -> str:
    rows = [COLUMNS, *table_rows(figures)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in
                               enumerate(zip(row, widths))) for row in rows) + "\n"


def query(kind: str, run_id: str | None = None) -> tuple[list[Charge], str]:
    """Ask the scheduler: (charges, "") or ([], why there are none)."""
    command = sacct_command(run_id) if kind == "slurm" else ["pjstat", "-H", "-v"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as error:
        return [], f"{command[0]} could not run: {error}"
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        return [], (f"{' '.join(command[:2])} failed (exit {done.returncode}: {detail[-1] if detail else 'no message'}):"
                    " no accounting on this cluster (Slurm: AccountingStorageType=none)")
    charges = parse_sacct(done.stdout) if kind == "slurm" else parse_pjstat_history(done.stdout)
    return charges, "" if charges else f"{command[0]} listed no finished job of this run"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeline", help="the timeline's jobs TSV (qc/timeline/timeline.jobs.tsv)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--pjm-stats", nargs="+", metavar="FILE", help="pjsub -S / pjstat -S statistics files")
    source.add_argument("--pjstat-history", metavar="FILE", help="saved `pjstat -H -v` output")
    source.add_argument("--sacct", metavar="FILE", help=f"saved `sacct --parsable2 --format={','.join(SACCT_FIELDS)}`")
    source.add_argument("--query", choices=("pjm", "slurm"), help="ask the scheduler now")
    parser.add_argument("--slurm-run-id", help="with --query slurm: the run's id (`SLURM run ID:` in its log)")
    parser.add_argument("--out", help="also write the table as TSV")
    args = parser.parse_args(argv)

    note = ""
    if args.pjm_stats:
        charges = [c for path in args.pjm_stats for c in parse_pjm_statistics(open(path).read())]
    elif args.pjstat_history:
        charges = parse_pjstat_history(open(args.pjstat_history).read())
    elif args.sacct:
        charges = parse_sacct(open(args.sacct).read())
    else:
        charges, note = query(args.query, args.slurm_run_id)
    timeline = read_timeline_jobs(args.timeline) if args.timeline else []
    figures = by_rule(timeline, charges)
    if note:
        print(f"[accounting] {note}; the timeline's figures alone:", file=sys.stderr)
    sys.stdout.write(format_table(figures))
    if args.out:
        with open(args.out, "w") as handle:
            handle.write("\t".join(COLUMNS) + "\n")
            handle.writelines("\t".join(row) + "\n" for row in table_rows(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
