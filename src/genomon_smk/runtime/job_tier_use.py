"""Tier use reported by the jobs themselves: the peak size of each job's work directory.

The Snakemake process cannot see the node-local disks of other nodes, so with the config's
storage.monitor on, every job that works in a temp directory (workflow/scripts/job-work-dir.sh)
samples its size (du, at least 2 s and 20 times the last du's duration apart: at most about 5%
of the job's time) and appends one line to its log:
`genomon-smk tier-use<TAB>TIER<TAB>PEAK_BYTES`. After the run, this module sums those lines per
rule and tier: how many jobs, the largest peak of one job (what a node's local disk or a
`--llio localtmp-size` must hold per job) and the sum of the peaks (what the run wrote there).
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass

from genomon_smk.plan.storage_plan import human

MARKER = "genomon-smk tier-use"


@dataclass(frozen=True)
class RuleTierUse:
    rule: str
    tier: str
    jobs: int
    max_peak_bytes: int
    total_peak_bytes: int


def records_in_log(text: str) -> list[tuple[str, int]]:
    """The (tier, peak bytes) records of one job log; the last one per attempt is appended last."""
    records = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[0] == MARKER and fields[2].isdigit():
            records.append((fields[1], int(fields[2])))
    return records


def collect(log_dir: str) -> list[RuleTierUse]:
    """Per rule (the log directory's first level) and tier, from the last record of each job log
    (the attempt that made the output, should an earlier attempt's line have stayed)."""
    peaks: dict[tuple[str, str], list[int]] = defaultdict(list)
    for root, _, files in os.walk(log_dir):
        rule = os.path.relpath(root, log_dir).split(os.sep)[0]
        for name in files:
            try:
                with open(os.path.join(root, name), errors="replace") as log:
                    records = records_in_log(log.read())
            except OSError:
                continue
            if records:
                tier, peak = records[-1]
                peaks[rule, tier].append(peak)
    return [
        RuleTierUse(rule, tier, len(values), max(values), sum(values))
        for (rule, tier), values in sorted(peaks.items())
    ]


def write_tsv(uses: list[RuleTierUse], path: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as out:
        out.write("rule\ttier\tjobs\tmax_job_peak_bytes\tsum_job_peak_bytes\n")
        for use in uses:
            out.write(f"{use.rule}\t{use.tier}\t{use.jobs}\t{use.max_peak_bytes}\t{use.total_peak_bytes}\n")


def table(uses: list[RuleTierUse], measured: bool = True) -> str:
    if not measured:
        return "Job work directories: not measured (config storage.monitor is off)"
    lines = [
        "Job work directories (each job's own peak, measured on its node):",
        f"  {'rule':<24}{'tier':<12}{'jobs':>6}{'largest':>12}{'sum':>12}",
    ]
    for use in uses:
        lines.append(
            f"  {use.rule:<23} {use.tier:<12}{use.jobs:>6}{human(use.max_peak_bytes):>12}{human(use.total_peak_bytes):>12}"
        )
    return "\n".join(lines)
