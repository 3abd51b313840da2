#!/usr/bin/env python3
"""Mutation-calling accuracy on the `bench` preset, against the generator's truth.

    .venv/bin/python bench/accuracy.py [--workdir .test/bench] [--cores 2]

Generates the bench data (5 Mb of GRCh37 chr20, tumor 40x, normal 30x, three panel normals 20x),
runs the whole workflow with the panel, then the mutation stage again without it (the BAMs are
reused), and prints precision, recall and F1 for SNVs and indels per VAF bin: in `result.txt`
(before `mutil filter`) and after filtering with Genomon's thresholds (`--eb_pval 4.0`) and with
the small-panel threshold the .test config uses (`--eb_pval 0.8`).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import pysam
import yaml

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
FILTERS = {
    "mutil eb 4.0": "--fish_pval 1.0 --realign_pval 1.0 --eb_pval 4.0 --tcount 4 --ncount 2",
    "mutil eb 0.8": "--fish_pval 1.0 --realign_pval 1.0 --eb_pval 0.8 --tcount 4 --ncount 2",
    "mutil no eb": "--fish_pval 1.0 --realign_pval 1.0 --tcount 4 --ncount 2",
}


def run(command: list[str]) -> None:
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")


def snakemake(config: Path, cores: int, *targets: str) -> None:
    run([str(BIN / "snakemake"), "--profile", "profiles/local", "--configfile", str(config), "--cores", str(cores), *targets])


def truth(data: Path) -> list[tuple[str, int, str, float]]:
    """(chrom, Genomon Start, SNV|INDEL, VAF) of the somatic truth (with the subclonal SNVs planted at
    hotspot database sites, generator version 5); deletions start after the anchor."""
    sites = []
    files = [data / "truth" / f"{name}.vcf.gz" for name in ("somatic", "hotspot")]
    for record in (record for path in files if path.exists() for record in pysam.VariantFile(str(path))):
        ref, alt = record.ref, record.alts[0]
        start = record.pos + 1 if len(ref) > len(alt) else record.pos
        sites.append((record.chrom, start, "SNV" if len(ref) == len(alt) == 1 else "INDEL", record.info["VAF"]))
    return sites


def calls(result: Path) -> set[tuple[str, int, str]]:
    with open(result) as handle:
        rows = [line.rstrip("\n").split("\t") for line in handle if not line.startswith("#")]
    return {(r[0], int(r[1]), "INDEL" if "-" in (r[3], r[4]) else "SNV") for r in rows[1:]}


def scores(called: set, sites: list, kind: str, vaf: float | None) -> tuple[float, float, float]:
    """Precision over every call of the kind (any truth VAF counts as right); recall within the bin."""
    truth_all = {(c, s, k) for c, s, k, _ in sites if k == kind}
    truth_bin = {(c, s, k) for c, s, k, v in sites if k == kind and (vaf is None or abs(v - vaf) < 1e-6)}
    mine = {call for call in called if call[2] == kind}
    precision = len(mine & truth_all) / len(mine) if mine else 0.0
    recall = len(mine & truth_bin) / len(truth_bin) if truth_bin else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def mutil(result: Path, params: str, out: Path) -> Path:
    run([sys.executable, "-m", "genomon_smk.tools.mutil", "filter", "-i", str(result), "-o", str(out), *params.split()])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", default=str(REPO / ".test" / "bench"))
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    work = Path(args.workdir).resolve()
    data = work / "data"
    run([sys.executable, str(REPO / ".test" / "make_testdata.py"), str(data), "--preset", "bench"])
    base = yaml.safe_load((REPO / ".test" / "config" / "config.yaml").read_text())
    base.update(reference=str(data / "ref" / "genome.fa"), samples=str(data / "samples.tsv"), output_dir="results")
    for key in ("simple_repeat_db", "resources_dir"):  # the indexed reference: nothing to set up
        base.pop(key, None)
    base["regions"] = {"max_length": 2_000_000, "pack_bp": 0}
    base["split"] = {"chunks": 8}
    runs = {}
    for name, pairs in (("panel", "tumor\tnormal\tpanel1\n"), ("no panel", "tumor\tnormal\t\n")):
        run_dir = work / name.replace(" ", "_")
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "pairs.tsv").write_text("tumor\tnormal\tpanel\n" + pairs)
        if name == "no panel" and not (run_dir / "results" / "bam").exists():
            for name in ("bam", "reference"):  # the BAMs and the staged-reference manifest they were made with
                shutil.copytree(runs["panel"] / name, run_dir / "results" / name, copy_function=shutil.copy2)
        config = dict(base, pairs=str(run_dir / "pairs.tsv"))
        (run_dir / "config.yaml").write_text(yaml.safe_dump(config))
        snakemake(run_dir / "config.yaml", args.cores)
        runs[name] = run_dir / "results"
    sites = truth(data)
    print(f"{'run':<9} {'stage':<13} {'type':<6} {'VAF':>5} {'precision':>9} {'recall':>7} {'F1':>6}")
    for name, results in runs.items():
        result = results / "mutation" / "tumor" / "tumor.genomon_mutation.result.txt"
        stages = {"result.txt": calls(result)}
        # Without a panel there is no EB column, and mutil ignores thresholds of absent columns.
        for label, params in FILTERS.items() if name == "panel" else [("mutil no eb", FILTERS["mutil no eb"])]:
            stages[label] = calls(mutil(result, params, work / f"{name.replace(' ', '_')}.{label.replace(' ', '_')}.txt"))
        for stage, called in stages.items():
            for kind in ("SNV", "INDEL"):
                for vaf in (0.4, 0.12, None):
                    p, r, f = scores(called, sites, kind, vaf)
                    label = "all" if vaf is None else f"{vaf:.2f}"
                    print(f"{name:<9} {stage:<13} {kind:<6} {label:>5} {p:>9.3f} {r:>7.3f} {f:>6.3f}")


if __name__ == "__main__":
    main()
