"""The few lines a run (and a dry run) ends with: per pair the calls the final filter kept and
removed and the SV junctions, where the results, MultiQC and the report are, and every warning
the plan printed at the start (which has scrolled away by then), naming a pair whose filtered
result is empty after a warning about it; after a failed run, each failed job, its logs and how
to resume; and when jobs rerun because input files were replaced, why Snakemake's hint to use
`--rerun-triggers mtime` is not the way out. The console's line per job is the logger plugin's
(plugins/snakemake-logger-plugin-genomon), which prints these lines after Snakemake's last.

Read by the main Snakemake process only, from the finished files: it never fails a run (a file
it cannot read is shown as such).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

from genomon_smk.steps.mutation_summary import read_calls
from genomon_smk.steps.sv_result import read_rows


@dataclass(frozen=True)
class PairFiles:
    """A pair's final files (absolute paths); sv_filtered None: no SV detection for it."""

    tumor: str
    result: str  # result.txt: every call before mutil filter
    filtered: str  # result.filt.txt
    sv_filtered: str | None = None


@dataclass(frozen=True)
class PlanWarning:
    """A warning of the plan; tumors: the pairs it is about (their empty results are named)."""

    text: str
    tumors: frozenset[str] = frozenset()


def count_calls(path: str) -> int | None:
    """Rows of a Genomon mutation result; None when it is missing or unreadable."""
    try:
        with open(path) as handle:
            return sum(1 for _ in read_calls(handle))
    except (OSError, ValueError):
        return None


def count_junctions(path: str) -> int | None:
    """Rows of a GenomonSV result; None when it is missing or unreadable."""
    try:
        return len(read_rows(path))
    except (OSError, ValueError):
        return None


def shown(count: int | None) -> str:
    return "-" if count is None else str(count)


def relative(path: str, output_dir: str) -> str:
    return os.path.relpath(path, output_dir) if path.startswith(output_dir + os.sep) else path


def pair_table(pairs: list[PairFiles], kept_calls: dict[str, int | None], output_dir: str) -> list[str]:
    """One line per pair: calls kept (kept_calls, by tumor) and removed by mutil filter, SV
    junctions kept, the result."""
    width = max([len("pair")] + [len(pair.tumor) for pair in pairs])
    lines = [f"  {'pair':<{width}}  {'kept':>6}  {'removed':>7}  {'SVs':>5}  filtered result"]
    for pair in pairs:
        kept, everything = kept_calls[pair.tumor], count_calls(pair.result)
        removed = everything - kept if kept is not None and everything is not None else None
        svs = count_junctions(pair.sv_filtered) if pair.sv_filtered else None
        lines.append(
            f"  {pair.tumor:<{width}}  {shown(kept):>6}  {shown(removed):>7}  {shown(svs):>5}  "
            f"{relative(pair.filtered, output_dir)}"
        )
    return lines


def empty_after_warning(kept_calls: dict[str, int | None], warnings: list[PlanWarning]) -> list[str]:
    """Pairs whose filtered result has no call (kept_calls, by tumor) although a warning was
    about them."""
    warned = set().union(*(warning.tumors for warning in warnings)) if warnings else set()
    return [
        f"  {tumor}: no call kept by the final filter, as a warning above foresaw"
        for tumor, kept in kept_calls.items()
        if tumor in warned and kept == 0
    ]


def place_lines(places: dict[str, str], output_dir: str) -> list[str]:
    """`  label: place` per place, aligned, paths relative to the output directory."""
    width = max((len(label) for label in places), default=0)
    return [f"  {label + ':':<{width + 1}} {relative(place, output_dir)}" for label, place in places.items()]


def empty_signature_results(paths: list[str], output_dir: str) -> list[str]:
    """A line per pmsignature result this run left empty (Genomon's empty JSON: too few mutations
    for its K), which the job only logs."""
    empty = []
    for path in paths:
        try:
            with open(path) as handle:
                if json.load(handle).get("id") == []:
                    empty.append(relative(path, output_dir))
        except (OSError, ValueError):
            continue  # not made by this run, or unreadable: not this summary's to judge
    if not empty:
        return []
    return [f"genomon-smk: {len(empty)} pmsignature result(s) empty, too few mutations for their K"
            " (the job logs say how many were left):"] + [f"  {path}" for path in empty]


# Under this share of its reads mapped, a sample is named at the end of the run: reads of another
# genome or build, or the wrong files, whose calls would look like a clean sample's (human
# whole-genome reads map 95-99 %).
LOW_MAPPED_FRACTION = 0.8
FLAGSTAT_LINE = re.compile(r"(\d+) \+ (\d+) (in total|primary|mapped|primary mapped)(?: \(|$)")


def mapped_fraction(flagstat: str) -> float | None:
    """Primary reads mapped / primary reads of a `samtools flagstat` file (mapped / in total
    from a samtools without the primary lines); None when missing or empty."""
    counts: dict[str, int] = {}
    try:
        with open(flagstat) as handle:
            for line in handle:
                match = FLAGSTAT_LINE.match(line.rstrip("\n"))
                if match:
                    counts.setdefault(match.group(3), int(match.group(1)) + int(match.group(2)))
    except OSError:
        return None
    reads, mapped = ((counts.get("primary"), counts["primary mapped"]) if "primary mapped" in counts
                     else (counts.get("in total"), counts.get("mapped")))
    return mapped / reads if reads and mapped is not None else None


def low_mapping_lines(flagstats: dict[str, str], output_dir: str) -> list[str]:
    """The samples (-> their flagstat file) whose reads mostly did not map, named with their share."""
    low = {sample: fraction for sample, path in flagstats.items()
           if (fraction := mapped_fraction(path)) is not None and fraction < LOW_MAPPED_FRACTION}
    if not low:
        return []
    return [f"genomon-smk: {len(low)} sample(s) with under {LOW_MAPPED_FRACTION:.0%} of their reads mapped "
            "(reads of another genome or build, or the wrong files?):"] + [
        f"  {sample}: {fraction:.1%} mapped ({relative(flagstats[sample], output_dir)})" for sample, fraction in low.items()]


def summary(
    output_dir: str,
    pairs: list[PairFiles],
    places: dict[str, str],
    warnings: list[PlanWarning],
    dry_run: bool,
    signatures: tuple[str, ...] = (),
    flagstats: dict[str, str] | None = None,
) -> str:
    """The closing lines. places: what else to point at (label -> path or command), in order;
    signatures: the pmsignature results (JSON) of the run; flagstats: sample -> its `samtools
    flagstat` file (QC), for the samples whose reads mostly did not map."""
    head = "will be written to" if dry_run else "are in"
    lines = [f"genomon-smk: the results {head} {output_dir}"]
    # A run of some targets lists the pairs that have a result; the others are counted.
    made: list[PairFiles] = []
    waiting: list[str] = []
    if not dry_run:
        for pair in pairs:
            if os.path.exists(pair.filtered):
                made.append(pair)
            else:
                waiting.append(pair.tumor)
    # Each filtered result read once: for the table and for the pairs left empty.
    kept_calls = {pair.tumor: count_calls(pair.filtered) for pair in made}
    if made:
        lines += pair_table(made, kept_calls, output_dir)
    if waiting:
        shown_names = ", ".join(waiting[:5]) + (", ..." if len(waiting) > 5 else "")
        lines.append(f"  {len(waiting)} other pair(s) without a result yet (not among this run's targets): {shown_names}")
        # Snakemake's report needs every result of the workflow.
        places = {label: place for label, place in places.items() if label != "report"}
    if pairs and dry_run:
        lines.append(
            f"  {len(pairs)} pair(s): mutation/<tumor>/<tumor>.genomon_mutation.result.filt.txt"
            + (", sv/<tumor>/<tumor>.genomonSV.result.filt.txt" if any(p.sv_filtered for p in pairs) else "")
        )
    if not dry_run:  # what this run made (a run of some targets may not have made the report)
        places = {label: place for label, place in places.items() if not os.path.isabs(place) or os.path.exists(place)}
    lines += place_lines(places, output_dir)
    if warnings:
        lines.append(f"genomon-smk: {len(warnings)} warning(s) of the plan, repeated:")
        lines += [f"  {line}" for warning in warnings for line in warning.text.splitlines()]
    lines += empty_after_warning(kept_calls, warnings)
    if not dry_run:
        lines += empty_signature_results(list(signatures), output_dir)
        lines += low_mapping_lines(flagstats or {}, output_dir)
    return "\n".join(lines)


def failure_summary(output_dir: str, failed_jobs: dict[str, list[str]], places: dict[str, str],
                    interrupted: bool = False) -> str:
    """The closing lines of a failed run: each failed job (rule: its logs) and how to go on.
    failed_jobs: rule and job id ("map_reads #12") -> the job's log files; empty when they are
    not known here (Snakemake's error messages above name them). interrupted: the run was
    stopped on the user's request (Ctrl-C, SIGINT), and its failed jobs are the ones it stopped."""
    if interrupted:
        stopped = f": {len(failed_jobs)} running job(s) stopped" if failed_jobs else ""
        lines = [f"genomon-smk: the run was stopped on request (Ctrl-C, SIGINT){stopped}"]
    elif failed_jobs:
        lines = [f"genomon-smk: the run failed: {len(failed_jobs)} job(s) failed"]
    else:
        lines = ["genomon-smk: the run failed (Snakemake's error messages above name the failed jobs)"]
    for job, logs in failed_jobs.items():
        lines.append(f"  {job}: " + (", ".join(relative(log, output_dir) for log in logs) or "no log"))
    lines.append(
        "  Run the same command again to go on: finished results are kept; the stopped jobs and what"
        " needs them run (partial outputs of the stopped jobs were removed)." if interrupted else
        "  Fix the cause and run the same command again: finished results are kept; the failed jobs"
        " and what needs them run again (partial outputs of the failed jobs were removed)."
    )
    lines += place_lines(places, output_dir)
    return "\n".join(lines)


def replaced_input_note(samples: list[str], dry_run: bool) -> list[str]:
    """Lines for the jobs that (will) rerun because a sample's input files were replaced (their
    fingerprint is a param of the sample's first job, genomon_smk.plan.input_identity): Snakemake
    then advises `--rerun-triggers mtime`, which would switch that protection off."""
    if not samples:
        return []
    names = sorted(set(samples))
    shown_names = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
    verb = "will rerun" if dry_run else "reran"
    return [
        f"genomon-smk: {len(names)} sample(s) {verb} from their first step because their input files were "
        f"replaced: {shown_names}.",
        f"  Snakemake's hint {'above' if dry_run else 'for such reruns'}, '--rerun-triggers mtime', would turn off"
        " the check that found it:",
        "  a file replaced by `cp -p` or `rsync -a` keeps an old date, and its sample would keep the results of"
        " the old file. Keep the profile's rerun triggers.",
        "  If the new files hold the same reads, the rerun gives the same results; to skip it on purpose, clear"
        " the recorded params of those samples' first outputs with `snakemake --cleanup-metadata FILE...`.",
    ]
