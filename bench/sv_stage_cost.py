#!/usr/bin/env python3
"""The SV stage's cost on the `bench` preset: each step the workflow runs for a tumor/normal pair
with a panel of three normals, timed, and what it finds against the planted SVs.

    .venv/bin/python bench/sv_stage_cost.py [--workdir .test/bench/sv]

Makes the `bench` preset (5 Mb of GRCh37 chr20; tumor 40x with 32 planted SVs, normal 30x,
three normals 20x) and its BAMs unless they are there (bench/sv_parse_speed.py's; the tumor's
is shared with it), then runs the commands of rules/sv.smk with the config's defaults
(workflow/schemas/config.schema.yaml): `GenomonSV parse` of the tumor and each panel member,
`GenomonSV merge` of the panel, `GenomonSV filt` (matched normal, merged panel, --thread_num 1,
--genome_id hg19 by UCSC names as the preset's contigs are chr1..chr3) and `sv_utils filter`.
Prints wall and CPU seconds and peak memory per step, the stage's total, and recall/precision
of the filtered junctions (both breakpoints within 50 bp of a planted SV's).
Run it on an idle machine; config/README.md ("SV detection", cost) quotes the figures.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import yaml

from sv_parse_speed import REPO, run, sample_bam, work_dir

SV_TOOLS = REPO / ".venv-sv" / "bin"
PANEL = ("pon1", "pon2", "pon3")
TOLERANCE = 50


def sv_defaults() -> dict:
    """The config schema's defaults of sv_filt (the options the workflow passes by default)."""
    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    return {key: spec.get("default") for key, spec in schema["properties"]["sv_filt"]["properties"].items()}


def measured(command: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak resident MB) of a command, from GNU time."""
    result = run(["/usr/bin/time", "-f", "%e %U %S %M", *command])
    wall, user, system, rss_kb = result.stderr.strip().splitlines()[-1].split()
    return float(wall), float(user) + float(system), int(rss_kb) / 1024


def filtered_junctions(path: Path) -> list[dict[str, str]]:
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t"))


def found(call: dict[str, str], sv: dict[str, str]) -> bool:
    """Both breakpoints of a junction within TOLERANCE of a planted SV's, either order."""
    ends = [(call["Chr_1"], int(call["Pos_1"])), (call["Chr_2"], int(call["Pos_2"]))]
    planted = [(sv["chrom_1"], int(sv["pos_1"])), (sv["chrom_2"], int(sv["pos_2"]))]
    near = [[a[0] == b[0] and abs(a[1] - b[1]) <= TOLERANCE for b in planted] for a in ends]
    return (near[0][0] and near[1][1]) or (near[0][1] and near[1][0])


def main() -> None:
    work = work_dir(__doc__)
    bams = {sample: sample_bam(work, sample) for sample in ("tumor", "normal", *PANEL)}
    reference = work / "data" / "ref" / "genome.fa"
    stage = work / "stage"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir()
    options = sv_defaults()
    annotation = ["--genome_id", options["genome_id"]]  # the preset's contigs: UCSC names, no --grc
    genomon_sv, sv_utils = str(SV_TOOLS / "GenomonSV"), str(SV_TOOLS / "sv_utils")
    steps = []
    for sample in ("tumor", *PANEL):
        steps.append((f"sv_parse {sample} ({bams[sample].stat().st_size / 1e6:.0f} MB BAM)",
                      [genomon_sv, "parse", str(bams[sample]), str(stage / sample)]))
    control_info = stage / "panel.control_info.txt"
    control_info.write_text("".join(f"{name}\t{stage / name}\n" for name in PANEL))
    merged = stage / "panel.merged.junction.control.bedpe.gz"
    steps.append(("sv_merge_control (3 normals)", [genomon_sv, "merge", str(control_info), str(merged)]))
    steps.append(("sv_filt (thread_num 1)", [
        genomon_sv, "filt", str(bams["tumor"]), str(stage / "tumor"), str(reference),
        "--matched_control_bam", str(bams["normal"]), "--non_matched_control_junction", str(merged),
        "--matched_control_label", "normal", "--thread_num", "1", *options["params"].split(), *annotation]))
    result = stage / "tumor.genomonSV.result.txt"
    filtered = stage / "tumor.genomonSV.result.filt.txt"
    steps.append(("sv_utils_filter", [sv_utils, "filter", str(result), str(filtered),
                                      *options["sv_utils_params"].split(), *annotation]))
    print(f"SV stage on the bench preset ({work}): tumor/normal pair, panel of {len(PANEL)}")
    print(f"  {'step':<40}{'wall s':>8}{'CPU s':>8}{'peak MB':>9}")
    total_wall = total_cpu = 0.0
    for name, command in steps:
        wall, cpu, rss = measured(command)
        total_wall, total_cpu = total_wall + wall, total_cpu + cpu
        print(f"  {name:<40}{wall:>8.1f}{cpu:>8.1f}{rss:>9.0f}")
    print(f"  {'whole stage, one job after another':<40}{total_wall:>8.1f}{total_cpu:>8.1f}")
    with open(work / "data" / "truth" / "somatic_sv.tsv") as handle:
        truth = list(csv.DictReader(handle, delimiter="\t"))
    calls = filtered_junctions(filtered)
    hits = [sv for sv in truth if any(found(call, sv) for call in calls)]
    true_calls = sum(1 for call in calls if any(found(call, sv) for sv in truth))
    missed = {}
    for sv in truth:
        if sv not in hits:
            missed[sv["type"]] = missed.get(sv["type"], 0) + 1
    print(f"  filtered junctions: {len(calls)} ({true_calls} at planted SVs); planted SVs found: "
          f"{len(hits)} of {len(truth)} (missed: {missed or 'none'})")


if __name__ == "__main__":
    main()
