#!/usr/bin/env python3
"""The pipeline against its own tools run as a plain script, side by side in one run, on the
`bench` preset (5 Mb of GRCh37 chr20; tumor 40x, normal 30x, three panel normals 20x; 2x150) or
the `bench100` preset (the same genome; tumor 60x, normal 30x; 2x100).

    .venv/bin/python bench/pipeline_vs_script.py [--preset bench] [--workdir .test/PRESET] [--cores 2]
        [--stage bam mutation] [--rounds N] [--script-compression bammarkduplicates|samtools]

bam: the final tumor and normal BAMs. The script, per sample: `bwa mem -t CORES -K 10000000 -T 0
-R RG | bamsort SO=coordinate`, then `bammarkduplicates` (Genomon's tools and flags, the plain
way: bammarkduplicates compresses and indexes the final BAM at its default level). The pipeline
uses the same tools but compresses its region pieces and final BAMs with samtools (htslib's
libdeflate) at the same levels; `--script-compression samtools` gives the script the pipeline's
final compression too (`bammarkduplicates level=0 | samtools view -O bam,level=6 --write-index`),
so that the ratio counts the pipeline's overhead alone. The pipeline: `snakemake --profile
profiles/local --cores CORES` on the two final BAMs (+ index, md5) in a fresh output directory,
at the default config (8 chunks, 50 Mb regions, threads auto: on 2 cores 2 per map job, 1 per
markdup job).

mutation: on the pipeline's BAMs, the mutation stage (snakemake on the tumor's result files: fisher,
the filters, EBFilter against the panel, mutil, the VCFs) against a bare `samtools mpileup` of
tumor and normal with fisher's samtools filters, over the whole genome.

Prints both wall times, the ratio, the load average before each measurement and both sides' CPU
seconds (every process they started; load does not inflate it as it does the wall time) with
their ratio and Snakemake's own share of the pipeline's: compare
wall times of runs made with the machine otherwise idle. With --rounds N each side is measured N times, alternating,
and the best times are compared too: on a shared virtual machine the same bwa run varies by 10 %
from one minute to the next, and noise only ever adds time.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SAMPLES = ("tumor", "normal")
PANEL = ("pon1", "pon2", "pon3")
MPILEUP_FILTERS = "-q 20 -BQ0 -d 10000000 --ff UNMAP,SECONDARY,QCFAIL,DUP"


def run(command: list[str] | str, cwd: Path = REPO, env: dict[str, str] | None = None) -> float:
    """Wall seconds of a command, which must succeed (a string runs in bash)."""
    start = time.monotonic()
    shell = isinstance(command, str)
    result = subprocess.run(["bash", "-o", "pipefail", "-c", command] if shell else command, cwd=cwd,
                            capture_output=True, text=True, env=env)
    if result.returncode != 0:
        shown = command if shell else shlex.join(command)
        raise SystemExit(f"{shown} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return time.monotonic() - start


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def lanes(data: Path) -> dict[str, list[tuple[str, str]]]:
    """sample -> [(fq1, fq2)] from the generated samples.tsv (paths relative to it)."""
    rows = [line.split("\t") for line in (data / "samples.tsv").read_text().splitlines()[1:] if line.strip()]
    found: dict[str, list[tuple[str, str]]] = {}
    for sample, fq1, fq2, *_ in rows:
        found.setdefault(sample, []).append((str(data / fq1), str(data / fq2)))
    return found


def plain_script(sample: str, fastqs: list[tuple[str, str]], reference: Path, out: Path, cores: int,
                 compression: str = "bammarkduplicates") -> str:
    """The sample's final BAM by the pipeline's tools in two commands (lanes read in order);
    compression: which tool compresses and indexes the final BAM."""
    reads = " ".join(f"<(zcat -f {' '.join(shlex.quote(pair[end]) for pair in fastqs)})" for end in (0, 1))
    read_group = f"@RG\\tID:{sample}\\tSM:{sample}\\tPL:ILLUMINA\\tLB:{sample}"
    work = shlex.quote(str(out / sample))
    final = f"{sample}.markdup.bam"
    marking = f"bammarkduplicates I=sorted.bam M=metrics.txt markthreads={cores} tmpfile=markdup"
    if compression == "samtools":
        marking += (f" level=0 2>markdup.log | samtools view --no-PG -@ {cores} -O bam,level=6 --write-index"
                    f" -o {final}##idx##{final}.bai 2>samtools.log")
    else:
        marking += f" O={final} index=1 indexfilename={final}.bai 2>markdup.log"
    return (
        f"mkdir -p {work} && cd {work} && "
        f"bwa mem -t {cores} -K 10000000 -T 0 -R '{read_group}' {shlex.quote(str(reference))} {reads} 2>bwa.log"
        f" | bamsort SO=coordinate inputformat=sam level=1 inputthreads={cores} outputthreads={cores}"
        f" sortthreads={cores} tmpfile=bamsort >sorted.bam 2>bamsort.log"
        f" && {marking} && rm sorted.bam"
    )


def pipeline_config(data: Path, run_dir: Path) -> Path:
    config = yaml.safe_load((REPO / ".test" / "config" / "config.yaml").read_text())
    defaults = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    (run_dir / "pairs.tsv").write_text("tumor\tnormal\tpanel\ntumor\tnormal\tpanel1\n")
    for key in ("simple_repeat_db", "resources_dir"):  # the indexed reference, as the script's
        config.pop(key, None)
    config.update(reference=str(data / "ref" / "genome.fa"), samples=str(data / "samples.tsv"),
                  pairs=str(run_dir / "pairs.tsv"), output_dir=str(run_dir / "results"),
                  control_panels={"panel1": list(PANEL)}, split=defaults["split"], regions=defaults["regions"],
                  map=defaults["map"], markdup=defaults["markdup"])
    path = run_dir / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def slurm_probe(run_dir: Path) -> dict[str, str]:
    """The environment for snakemake. Every snakemake start loads the Slurm executor plugin,
    which runs `scontrol show config` (10 s timeout): milliseconds on a cluster, at once where
    Slurm is not installed, but seconds where the client is installed and no controller runs
    (as on this project's test machines). Such a wait is the machine's, not the pipeline's: it
    is measured, printed, and left out with an `scontrol` that fails at once."""
    start = time.monotonic()
    try:
        probe = subprocess.run(["scontrol", "show", "config"], capture_output=True, timeout=15)
        answered = probe.returncode == 0
    except (FileNotFoundError, subprocess.TimeoutExpired):
        answered = False
    seconds = time.monotonic() - start
    env = dict(os.environ)
    if not answered and seconds > 1:
        shim = run_dir / "no-slurm"
        shim.mkdir(parents=True, exist_ok=True)
        (shim / "scontrol").write_text("#!/bin/sh\nexit 1\n")
        (shim / "scontrol").chmod(0o755)
        env["PATH"] = f"{shim}:{env['PATH']}"
        print(f"scontrol found no Slurm controller after {seconds:.1f} s: left out of the snakemake runs", flush=True)
    return env


# `snakemake`, which also writes its own process's CPU seconds (not its jobs') to OWN_CPU_FILE at exit:
# the pipeline's CPU is its jobs' and Snakemake's own (scheduling, the benchmark and tier monitors).
SNAKEMAKE_OWN_CPU = """
import atexit, os, resource, sys
from snakemake.cli import main
def own_cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open(os.environ["OWN_CPU_FILE"], "w") as handle:
        handle.write(str(usage.ru_utime + usage.ru_stime))
atexit.register(own_cpu)
sys.argv[0] = "snakemake"
sys.exit(main())
"""
own_cpu_seconds: list[float] = []


def snakemake(config: Path, cores: int, targets: list[Path], env: dict[str, str]) -> float:
    """Wall seconds of the run; Snakemake's own CPU seconds are appended to own_cpu_seconds."""
    own_cpu_file = config.parent / "snakemake-own-cpu"
    wall = run([str(BIN / "python"), "-c", SNAKEMAKE_OWN_CPU, "--profile", "profiles/local", "--configfile",
                str(config), "--cores", str(cores), *map(str, targets)], env={**env, "OWN_CPU_FILE": str(own_cpu_file)})
    own_cpu_seconds.append(float(own_cpu_file.read_text()))
    return wall


def children_cpu() -> float:
    """CPU seconds (user + system) of every finished child process and their descendants so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measured(side) -> tuple[float, float]:
    """(wall, CPU) seconds of side(), which returns its wall seconds: the CPU is what its
    processes used, which the machine's load does not inflate as it does the wall time."""
    before = children_cpu()
    wall = side()
    return wall, children_cpu() - before


def compare(label: str, script: tuple[float, float], pipeline: tuple[float, float], loads: tuple[str, str],
            own_cpu: str = "") -> None:
    print(f"{label:<14} script {script[0]:7.1f} s (load {loads[0]})   pipeline {pipeline[0]:7.1f} s (load {loads[1]})"
          f"   ratio {pipeline[0] / script[0]:.2f}   CPU {script[1]:.1f} s / {pipeline[1]:.1f} s"
          f" ({pipeline[1] / script[1]:.3f}{own_cpu})", flush=True)


def rounds(label: str, count: int, script, pipeline) -> None:
    """Measure script() and pipeline() `count` times, alternating; print each round and the best."""
    scripts, pipelines = [], []
    for number in range(1, count + 1):
        before_script = load()
        scripts.append(measured(script))
        before_pipeline = load()
        pipelines.append(measured(pipeline))
        compare(f"{label} {number}/{count}", scripts[-1], pipelines[-1], (before_script, before_pipeline),
                f"; Snakemake's own process {own_cpu_seconds[-1]:.1f} s")
    if count > 1:
        # The best of each side: wall and CPU each the least of its rounds.
        compare(f"{label} best", (min(w for w, _ in scripts), min(c for _, c in scripts)),
                (min(w for w, _ in pipelines), min(c for _, c in pipelines)), ("-", "-"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", choices=("bench", "bench100"), default="bench", help="the data's shape")
    parser.add_argument("--workdir", help="where the data and the runs go [.test/PRESET]")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--stage", nargs="+", choices=("bam", "mutation"), default=["bam", "mutation"])
    parser.add_argument("--rounds", type=int, default=1, help="measurements of each side, alternating")
    parser.add_argument("--script-compression", choices=("bammarkduplicates", "samtools"), default="bammarkduplicates",
                        help="the tool that compresses and indexes the script's final BAMs [bammarkduplicates]")
    args = parser.parse_args()
    work = Path(args.workdir or REPO / ".test" / args.preset).resolve()
    data = work / "data"
    run([sys.executable, str(REPO / ".test" / "make_testdata.py"), str(data), "--preset", args.preset])
    reference = data / "ref" / "genome.fa"
    run_dir = work / "side_by_side"
    results = run_dir / "results"
    if "bam" in args.stage:
        shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    config = pipeline_config(data, run_dir)
    print(f"{args.preset} preset, {args.cores} cores, {os.cpu_count()} CPUs", flush=True)
    env = slurm_probe(run_dir)

    if "bam" in args.stage:
        sample_lanes = lanes(data)
        script_out = run_dir / "script"
        targets = [results / "bam" / s / f"{s}.markdup.bam{x}" for s in SAMPLES for x in ("", ".bai", ".md5")]

        def bam_pipeline() -> float:
            shutil.rmtree(results, ignore_errors=True)
            return snakemake(config, args.cores, targets, env)

        rounds("bam", args.rounds,
               lambda: sum(run(plain_script(s, sample_lanes[s], reference, script_out, args.cores, args.script_compression))
                           for s in SAMPLES),
               bam_pipeline)

    if "mutation" in args.stage:
        bams = [results / "bam" / s / f"{s}.markdup.bam" for s in SAMPLES]
        if not all(bam.exists() for bam in bams):
            raise SystemExit(f"no BAMs in {results / 'bam'}: run with --stage bam first")
        # The panel's BAMs first (they are inputs of the mutation stage, not part of it).
        snakemake(config, args.cores, [results / "bam" / s / f"{s}.markdup.bam" for s in PANEL], env)
        mutation = results / "mutation" / "tumor"
        targets = [mutation / f"tumor.genomon_mutation.result{x}" for x in (".txt", ".filt.txt", ".filt.vcf.gz", ".vcf.gz")]

        def mutation_pipeline() -> float:
            shutil.rmtree(mutation, ignore_errors=True)
            return snakemake(config, args.cores, targets, env)

        rounds("mutation", args.rounds,
               lambda: run(f"samtools mpileup {MPILEUP_FILTERS} -f {shlex.quote(str(reference))} "
                           f"{' '.join(shlex.quote(str(b)) for b in bams)} >/dev/null"),
               mutation_pipeline)


if __name__ == "__main__":
    main()
