"""A cohort too large for one Snakemake DAG on a login node, run in batches with one command:

    .venv/bin/python -m genomon_smk.plan.batches [--batches N | --max-jobs J] -- SNAKEMAKE ARGS

e.g. `-- --profile profiles/slurm --configfile my/config.yaml`. For i = 1..N it runs
`snakemake SNAKEMAKE ARGS cohort_results --batch cohort_results=i/N`: Snakemake's own batching
over the rule that names every per-sample and per-pair result (workflow/rules/batches.smk), each
batch planning only the jobs of 1/N of those files; then `snakemake SNAKEMAKE ARGS
--allowed-rules <the cohort's end stages>` makes the cohort-level files (post-analysis,
pmsignature, paplot, MultiQC, the timeline) from the batches' results, a DAG of a few jobs.
Rerunning the command resumes: each batch's finished jobs are skipped by Snakemake itself.
Without --batches, N follows from the stage plan's job count (the workflow's parse, no DAG) and
--max-jobs (docs/usage.md: memory per planned job)."""

from __future__ import annotations

import argparse
import math
import re
import subprocess
import sys
from pathlib import Path

from genomon_smk.plan.rules import BATCH_TARGET, FACTS, SETUP_RULES, TARGET_RULE

SNAKEFILE = Path(__file__).resolve().parents[3] / "workflow" / "Snakefile"
# The cohort-level end stages: one job per run (or per pmsignature K), reading the batches' results.
END_STAGES = ("post analysis", "pmsignature", "paplot")
END_RULES = (
    *(rule.name for rule in FACTS.values() if rule.stage in END_STAGES),
    "multiqc",
    "sv_multiqc_tables",
    "utilisation_timeline",
)
# About 14 KB of Snakemake's memory per planned job (a 262,017-job dry run peaked at 3.7 GB):
# 400,000 jobs a batch, ~6 GB, leaves half of a 12 GiB login node. A batch's files are Snakemake's
# sorted slice of the results, so its DAG may reach into two slices' samples: twice the share.
DEFAULT_MAX_JOBS = 400_000


def snakemake(args: list[str]) -> list[str]:
    """A snakemake command line of this interpreter, with the workflow's Snakefile unless given."""
    given = any(arg in ("-s", "--snakefile") or arg.startswith("--snakefile=") for arg in args)
    return [sys.executable, "-m", "snakemake", *([] if given else ["--snakefile", str(SNAKEFILE)]), *args]


def planned_jobs(args: list[str]) -> int:
    """The run's job count from the stage plan the workflow prints when parsed (--list-rules: no DAG)."""
    result = subprocess.run(snakemake([*args, "--list-rules"]), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    total = re.search(r"^  total \(with rule all\) +(\d+)", result.stderr, flags=re.M)
    if result.returncode or not total:
        sys.stderr.write(result.stderr)
        raise SystemExit(result.returncode or 1)
    return int(total.group(1))


def batch_count(jobs: int, max_jobs: int) -> int:
    """Batches whose DAGs stay under max_jobs each (a batch may reach two shares' jobs)."""
    return max(1, math.ceil(2 * jobs / max_jobs))


def commands(args: list[str], batches: int) -> list[list[str]]:
    """The batches' Snakemake commands, then the end stages' run."""
    # The target first: after the user's arguments a --configfile (nargs +) would take it.
    runs = [snakemake([BATCH_TARGET, *args, "--batch", f"{BATCH_TARGET}={i}/{batches}"])
            for i in range(1, batches + 1)]
    allowed = [*END_RULES, *sorted(SETUP_RULES), TARGET_RULE]
    return [*runs, snakemake([*args, "--allowed-rules", *allowed])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m genomon_smk.plan.batches",
                                     description=__doc__.split("\n\n")[0],
                                     epilog="Arguments after -- go to every snakemake run (--configfile, --profile, ...).")
    parser.add_argument("--batches", type=int, help="the number of batches (default: from --max-jobs)")
    parser.add_argument("--max-jobs", type=int, default=DEFAULT_MAX_JOBS,
                        help="jobs one batch may plan (default %(default)s: ~6 GB of Snakemake's memory)")
    parser.add_argument("--print", action="store_true", help="print the commands, run nothing")
    args, rest = parser.parse_known_args(argv)
    snakemake_args = [arg for arg in rest if arg != "--"]
    batches = args.batches or batch_count(planned_jobs(snakemake_args), args.max_jobs)
    for number, command in enumerate(commands(snakemake_args, batches), start=1):
        step = f"batch {number}/{batches}" if number <= batches else "the cohort's end stages"
        print(f"genomon-smk batches: {step}: {' '.join(command[1:])}", file=sys.stderr, flush=True)
        if args.print:
            continue
        returncode = subprocess.run(command).returncode
        if returncode:
            print(f"genomon-smk batches: {step} failed (exit {returncode}); rerun the same command to resume",
                  file=sys.stderr)
            return returncode
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
