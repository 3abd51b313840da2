#!/usr/bin/env python3
"""Time `snakemake -n` on cohort-sized configs (a GRCh37-shaped reference, placeholder inputs).

    .venv/bin/python bench/dryrun_scale.py                       # 1, 10, 100 pairs; default and paper granularity
    .venv/bin/python bench/dryrun_scale.py --pairs 1 10 --granularity paper
    .venv/bin/python bench/dryrun_scale.py --pairs 100 --granularity default --chunks 8 32 64
    .venv/bin/python bench/dryrun_scale.py --pairs 100 --granularity default --profile /tmp/dag.prof  # cProfile
    .venv/bin/python bench/dryrun_scale.py --stage-plan-only --pairs 1000 10000 --granularity paper
    .venv/bin/python bench/dryrun_scale.py --pairs 1000 --granularity default --chunks 64 --batches 4

Granularities: `default` = the config schema's defaults (split.chunks, regions.max_length and
regions.pack_bp on GRCh37's 25 primary contigs); `paper` = the Fugaku paper's 2712 chunks per
sample and 87 regions. Prints, per configuration: pairs, samples, chunks per sample, regions,
jobs in the DAG (Snakemake's count, checked against genomon_smk.plan.stage_plan's prediction), wall
seconds, CPU seconds (user + system: steadier than wall time on a shared machine), peak RSS of
the dry run and the load average during it. Configurations whose predicted DAG exceeds
--max-jobs (300,000) are not run; their predicted job count is printed instead.

`stage plan s` is the whole cohort's stage plan without Snakemake's DAG: `python -m
genomon_smk.plan.stage_plan --configfile` on the cohort's config (the workflow's parse, as
`snakemake --list-rules` runs it: the config, the sheets and the plans; wall seconds, peak MB in
`plan MB`); with --stage-plan-only nothing else runs, and for a configuration over --max-jobs the
hypothetical cohort's table (`--pairs`, no sheet; also shown after the config's) is timed
instead, which takes well under a second.

--batches N adds, per configuration, the dry runs of a cohort run in N batches
(genomon_smk.plan.batches: `snakemake -n cohort_results --batch cohort_results=i/N`): batch i's
jobs, wall and CPU seconds and peak MB, for i = 1..N-1 (the last batch checks that the earlier
ones' files exist, which a dry run does not make: in a real run it plans the same share).

Inputs are placeholders (a FASTQ record per file, a sparse GRCh37-shaped FASTA): a dry run reads
only what the checks before any job read.

`job start s` is a cluster job's own start at that cohort size: the command an executor runs in
the job (`python -m snakemake --target-jobs split_fastq:sample=tumor000 --allowed-rules
split_fastq --mode remote ...`, Snakemake's job arguments), here with -n so that it stops once
its job is planned: the Snakefile's parse and the job's DAG, what every job pays before its tool
starts (wall and CPU seconds, `job CPU s`, each the best of --job-starts tries). In both the dry
run and the job the Slurm executor plugin's `scontrol` probe is left out with an `scontrol` that
fails at once (on this machine it waits ~9 s for a controller that does not run; milliseconds
on a cluster).
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
from genomon_smk.plan.reference import reference_files, sequence_bytes  # noqa: E402
from genomon_smk.plan.regions import derive_regions  # noqa: E402
from genomon_smk.plan.stage_plan import GRCH37, CohortShape, total_jobs  # noqa: E402

PAPER_CHUNKS, PAPER_REGIONS, PAPER_PACK_BP = 2712, 87, 1_000_000


@dataclass(frozen=True)
class Granularity:
    name: str
    chunks: int
    max_length: int
    pack_bp: int

    def shape(self, pairs: int) -> CohortShape:
        """The cohort's DAG shape: `pairs` tumor/normal pairs, every sample in one pair; every pair
        gets SV detection (the default: its tumor parsed, no panel)."""
        regions = derive_regions(GRCH37, self.max_length, self.pack_bp)
        mutation = sum(1 for region in regions if not region.is_unmapped)
        # SV detection runs for every pair by default: GenomonSV parses each tumor (not the normal);
        # so does pmsignature's ind mode (K = 2..6, its background still to build in a dry run),
        # and the gene annotation of each pair's mutations (GRCh37: annot_utils' hg19 genes).
        return CohortShape(2 * pairs, pairs, self.chunks, len(regions), mutation, sv_samples=pairs, sv_pairs=pairs,
                           pmsignature_ind=5, to_build=frozenset({"pmsignature_background"}), annotated=True)


@dataclass(frozen=True)
class Measurement:
    jobs: int
    wall: float
    cpu: float
    peak_mb: float
    load: float


# What an executor puts on a job's command line (snakemake_interface_executor_plugins
# RealExecutor.format_job_exec), for the first split job; -n stops it once the job is planned.
JOB_ARGS = [
    "--target-jobs", "split_fastq:sample=tumor000", "--allowed-rules", "split_fastq", "--cores", "2",
    "--attempt", "1", "--force-use-threads", "--force", "--target-files-omit-workdir-adjustment",
    "--max-inventory-time", "0", "--nocolor", "--notemp", "--no-hooks", "--nolock", "--ignore-incomplete",
    "--rerun-triggers", "mtime", "params", "input", "software-env", "--mode", "remote", "-n",
]


def no_scontrol(directory: Path) -> dict[str, str]:
    """An environment whose `scontrol` fails at once (see the module's docstring)."""
    shim = directory / "no-scontrol"
    shim.mkdir(exist_ok=True)
    (shim / "scontrol").write_text("#!/bin/sh\nexit 1\n")
    (shim / "scontrol").chmod(0o755)
    return dict(os.environ, PATH=f"{shim}{os.pathsep}{os.environ['PATH']}")


def job_start(config: Path, tries: int) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of a cluster job's own Snakemake until its job is
    planned, the best of tries each."""
    env = no_scontrol(config.parent)
    walls, cpus = [], []
    for _ in range(tries):
        with tempfile.TemporaryFile("w+") as out:
            start = time.monotonic()
            process = subprocess.Popen(
                [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "workflow" / "Snakefile"),
                 *JOB_ARGS, "--configfiles", str(config)],
                cwd=config.parent, stdout=out, stderr=subprocess.STDOUT, text=True, env=env,
            )
            _, status, usage = os.wait4(process.pid, 0)
            walls.append(time.monotonic() - start)
            cpus.append(usage.ru_utime + usage.ru_stime)
            out.seek(0)
            output = out.read()
        if os.waitstatus_to_exitcode(status) != 0 or "split_fastq        1" not in output:
            raise SystemExit(f"the job's snakemake failed for {config}:\n{output[-4000:]}")
    return min(walls), min(cpus)


def schema_defaults() -> tuple[int, int, int]:
    """split.chunks, regions.max_length and regions.pack_bp as the config schema defaults them."""
    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    properties = schema["properties"]
    regions = properties["regions"]["properties"]
    return (
        properties["split"]["properties"]["chunks"]["default"],
        regions["max_length"]["default"],
        regions["pack_bp"]["default"],
    )


def max_length_for(regions: int, pack_bp: int) -> int:
    """The contig cut length that gives `regions` regions (incl. unmapped) on GRCh37."""
    low, high = 1_000_000, 250_000_000
    while low < high:
        middle = (low + high) // 2
        if len(derive_regions(GRCH37, middle, pack_bp)) > regions:
            low = middle + 1
        else:
            high = middle
    return low


def granularities() -> dict[str, Granularity]:
    chunks, max_length, pack_bp = schema_defaults()
    return {
        "default": Granularity("default", chunks, max_length, pack_bp),
        "paper": Granularity("paper", PAPER_CHUNKS, max_length_for(PAPER_REGIONS, PAPER_PACK_BP), PAPER_PACK_BP),
    }


def one_read(name: str) -> bytes:
    """A gzipped FASTQ of one record, named after its file: every file holds its own data (the
    workflow refuses the same reads given for two samples)."""
    return gzip.compress(f"@{name}\nACGT\n+\nIIII\n".encode(), mtime=0)


def write_placeholder_reference(fasta: Path) -> None:
    """A GRCh37-shaped FASTA, .fai and bwa .ann that pass the workflow's reference checks (headers
    where the .fai places them, the .ann's contigs), the sequences left as holes of a sparse file
    (no disk used, never read by a dry run): the indexed reference a cohort's run would name."""
    fai_lines, ann_lines, offset = [], [], 0
    with open(fasta, "wb") as handle:
        for name, length in GRCH37:
            header = f">{name}\n".encode()
            handle.seek(offset)
            handle.write(header)
            offset += len(header)
            fai_lines.append(f"{name}\t{length}\t{offset}\t60\t61\n")
            ann_lines.append(f"0 {name} (null)\n{offset} {length} 0\n")
            offset += sequence_bytes(length, 60, 61)
            handle.seek(offset - 1)
            handle.write(b"\n")  # the sequence's last line end: the next header starts a line
    Path(f"{fasta}.fai").write_text("".join(fai_lines))
    total = sum(length for _, length in GRCH37)
    Path(f"{fasta}.ann").write_text(f"{total} {len(GRCH37)} 11\n" + "".join(ann_lines))


def write_inputs(directory: Path, pairs: int, granularity: Granularity) -> Path:
    """A GRCh37-shaped placeholder reference (FASTA, .fai, bwa index), one lane per sample, `pairs`
    tumor/normal pairs and a config; returns the config's path."""
    reference = directory / "ref" / "GRCh37.fa"
    reference.parent.mkdir(parents=True)
    for path in reference_files(str(reference)):
        Path(path).touch()
    write_placeholder_reference(reference)
    (directory / "fastq").mkdir()
    rows, pair_rows = [], []
    for index in range(pairs):
        for role in ("tumor", "normal"):
            sample = f"{role}{index:03d}"
            for mate in (1, 2):
                # One record: a lane without reads is refused before any job.
                (directory / "fastq" / f"{sample}_R{mate}.fastq.gz").write_bytes(one_read(f"{sample}_R{mate}"))
            rows.append(f"{sample}\tfastq/{sample}_R1.fastq.gz\tfastq/{sample}_R2.fastq.gz\n")
        pair_rows.append(f"tumor{index:03d}\tnormal{index:03d}\t\n")
    (directory / "samples.tsv").write_text("sample\tfq1\tfq2\n" + "".join(rows))
    (directory / "pairs.tsv").write_text("tumor\tnormal\tpanel\n" + "".join(pair_rows))
    config = directory / "config.yaml"
    config.write_text(yaml.safe_dump({
        "reference": "ref/GRCh37.fa", "samples": "samples.tsv", "pairs": "pairs.tsv", "output_dir": "results",
        "split": {"chunks": granularity.chunks},
        "regions": {"max_length": granularity.max_length, "pack_bp": granularity.pack_bp},
    }))
    return config


def jobs_in(stdout: str) -> int:
    """The `total` of Snakemake's Job stats table."""
    return next(int(line.split()[1]) for line in stdout.splitlines() if line.startswith("total"))


def dry_run(config: Path, profile: str | None = None, target: str | None = None, batch: str | None = None) -> Measurement:
    """Run `snakemake -n` (optionally under cProfile) and measure that process alone: os.wait4
    gives the rusage of exactly this child, so runs do not mix their peaks."""
    snakemake = [sys.executable, "-m", "snakemake"]
    if profile:
        snakemake = [sys.executable, "-m", "cProfile", "-o", profile, "-m", "snakemake"]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.monotonic()
        process = subprocess.Popen(
            [*snakemake, *([target] if target else []), "-n", "--quiet", "rules", "--cores", "2",
             *(["--batch", batch] if batch else []), "--configfile", str(config)],
            cwd=REPO, stdout=out, stderr=err, text=True, env=no_scontrol(config.parent),
        )
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.monotonic() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        load = os.getloadavg()[1]  # the last 5 minutes: what the run competed with
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if process.returncode != 0:
        raise SystemExit(f"snakemake -n failed for {config}:\n{stdout[-2000:]}{stderr[-3000:]}")
    return Measurement(jobs_in(stdout), wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, load)


def stage_plan(config: Path) -> tuple[float, float, int]:
    """Wall seconds, peak MB and the total of the stage plan of the cohort's config, printed
    without Snakemake's DAG (python -m genomon_smk.plan.stage_plan --configfile)."""
    with tempfile.TemporaryFile("w+") as err:
        start = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", "genomon_smk.plan.stage_plan", "--configfile", str(config), "--", "--cores", "2"],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=err, text=True, env=no_scontrol(config.parent),
        )
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.monotonic() - start
        err.seek(0)
        stderr = err.read()
    total = re.search(r"^  total \(with rule all\) +(\d+)", stderr, flags=re.M)
    if os.waitstatus_to_exitcode(status) != 0 or not total:
        raise SystemExit(f"the stage plan failed for {config}:\n{stderr[-3000:]}")
    return wall, usage.ru_maxrss / 1024, int(total.group(1))


def hypothetical_plan(shape: CohortShape) -> float:
    """Seconds to print the stage plan of a cohort of this shape (no config, no sheet, no DAG)."""
    start = time.monotonic()
    with open(os.devnull, "w") as devnull:
        subprocess.run([sys.executable, "-m", "genomon_smk.plan.stage_plan", "--pairs", str(shape.pairs),
                        "--chunks", str(shape.chunks), "--regions", str(shape.regions)],
                       cwd=REPO, stdout=devnull, check=True)
    return time.monotonic() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--granularity", nargs="+", choices=["default", "paper"], default=["default", "paper"])
    parser.add_argument("--chunks", type=int, nargs="+",
                        help="chunks per sample to try instead of the granularity's (its regions kept)")
    parser.add_argument("--max-jobs", type=int, default=300_000,
                        help="skip configurations whose predicted DAG is larger (default %(default)s)")
    parser.add_argument("--profile", help="write a cProfile of the (single) dry run to this file")
    parser.add_argument("--job-starts", type=int, default=3,
                        help="time a cluster job's own start this many times, the best kept (0: not)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--stage-plan-only", action="store_true",
                        help="only the stage plan without the DAG (no dry run, no job start)")
    parser.add_argument("--batches", type=int, help="also dry-run the cohort's batches 1..N-1 of N")
    args = parser.parse_args(argv)
    header = ("granularity", "pairs", "samples", "chunks", "regions", "jobs", "wall s", "CPU s", "peak MB", "load",
              "job start s", "job CPU s", "stage plan s", "plan MB")
    if args.markdown:
        print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    else:
        print("".join(f"{name:>15}" for name in header))
    by_name = granularities()
    runs = [
        (name, replace(by_name[name], chunks=chunks) if chunks else by_name[name], pairs)
        for name in args.granularity
        for chunks in (args.chunks or [None])
        for pairs in args.pairs
    ]
    for name, granularity, pairs in runs:
        shape = granularity.shape(pairs)
        predicted = total_jobs(shape)
        cells = [name, pairs, shape.samples, shape.chunks, shape.regions]
        batch_rows = []
        if args.stage_plan_only:
            with tempfile.TemporaryDirectory() as tmp:
                config = write_inputs(Path(tmp), pairs, granularity)
                wall, peak, planned = stage_plan(config)
            cells += [f"{planned} (plan)", "", "", "", f"{os.getloadavg()[1]:.1f}", "", "",
                      f"{wall:.1f}; {hypothetical_plan(shape):.2f} no sheet", f"{peak:.0f}"]
        elif predicted > args.max_jobs:
            cells += [f"{predicted} (predicted)", "not run", "", "", "", "", "",
                      f"{hypothetical_plan(shape):.2f} (no sheet)", ""]
        else:
            with tempfile.TemporaryDirectory() as tmp:
                config = write_inputs(Path(tmp), pairs, granularity)
                result = dry_run(config, args.profile)
                start = job_start(config, args.job_starts) if args.job_starts else None
                wall, peak, _ = stage_plan(config)
                for index in range(1, args.batches or 0):
                    batch = dry_run(config, target="cohort_results", batch=f"cohort_results={index}/{args.batches}")
                    batch_rows.append((index, batch))
            if result.jobs != predicted:
                print(f"WARNING: Snakemake planned {result.jobs} jobs, the stage plan predicts {predicted}",
                      file=sys.stderr)
            cells += [result.jobs, f"{result.wall:.1f}", f"{result.cpu:.1f}", f"{result.peak_mb:.0f}",
                      f"{result.load:.1f}", *(f"{seconds:.1f}" for seconds in start or ())] + ([] if start else ["", ""])
            cells += [f"{wall:.1f}", f"{peak:.0f}"]
        if args.markdown:
            print("| " + " | ".join(str(cell) for cell in cells) + " |", flush=True)
        else:
            print("".join(f"{cell!s:>15}" for cell in cells), flush=True)
        for index, batch in batch_rows:
            row = [f"{name} batch {index}/{args.batches}", pairs, shape.samples, shape.chunks, shape.regions,
                   batch.jobs, f"{batch.wall:.1f}", f"{batch.cpu:.1f}", f"{batch.peak_mb:.0f}", f"{batch.load:.1f}",
                   "", "", "", ""]
            if args.markdown:
                print("| " + " | ".join(str(cell) for cell in row) + " |", flush=True)
            else:
                print("".join(f"{cell!s:>15}" for cell in row), flush=True)


if __name__ == "__main__":
    main()
