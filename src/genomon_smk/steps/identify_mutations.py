"""Identify mutations in one region of one pair, as Genomon chains its tools:

pair:       fisher comparison [-> hotspotCall -> mutil merge_hotspot] -> mutfilter realignment -> indel
            -> breakpoint -> simplerepeat -> EBFilter
tumor only: fisher single -> mutfilter realignment -> simplerepeat -> EBFilter

hotspotCall only with a hotspot database (on the database's rows in the region: Genomon's
per-interval `<db>.<i>` file), simplerepeat only with a simple-repeat database (otherwise its two
columns are `---`), EBFilter only with a control panel. Each tool is a command line (genomon-smk's own or upstream's), run
with its Genomon options; the header-less "anno" tables pass through files in a work directory,
and the result is moved into place only when every step succeeded. genomon-smk's own tools run
in this process (the same code as their command lines: each process would import pysam, numpy
and scipy again, about a second of a job's CPU); upstream's run as commands.

Deliberate differences from upstream Genomon (docs/differences.md): fisher gets the region's
intervals with ``-L`` (Genomon: ``-R`` per interval), EBFilter ``--loption`` without
``--region``, realignment no ``--blat_path``; without a simple-repeat database the two columns
are ``---`` (Genomon requires one); each tool's output stays in the work directory.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Callable

from genomon_smk.plan.hotspot import write_region_db

TOOLS = ("fisher", "mutfilter", "EBFilter")
# The tools the hotspot call adds (with --hotspot-db).
HOTSPOT_TOOLS = ("hotspotCall", "mutil")
# The steps whose Genomon options the job passes on (--STEP-options).
OPTION_STEPS = ("fisher", "hotspot", "realignment", "indel", "breakpoint", "eb")
# `python -m MODULE` of genomon-smk's own tools -> the module whose main(argv) it runs.
OWN_TOOL_MAINS = {
    "genomon_smk.tools.fisher": "genomon_smk.tools.fisher",
    "genomon_smk.tools.mutfilter": "genomon_smk.tools.mutfilter.cli",
    "genomon_smk.tools.ebfilter": "genomon_smk.tools.ebfilter",
    "genomon_smk.tools.hotspot": "genomon_smk.tools.hotspot",
    "genomon_smk.tools.mutil": "genomon_smk.tools.mutil",
}


@dataclass(frozen=True)
class Chain:
    """What one identify-mutations job works on."""

    tumor: str
    reference: str
    region_file: str
    work: str
    tools: dict[str, list[str]]
    normal: str | None = None
    panel: tuple[str, ...] = ()
    simple_repeat_db: str | None = None
    # The region's rows of the hotspot database (pairs with a normal only).
    hotspot_db: str | None = None
    options: dict[str, list[str]] = field(default_factory=dict)

    def path(self, name: str) -> str:
        return os.path.join(self.work, name)


def filter_commands(chain: Chain) -> list[list[str]]:
    """fisher and the filters that need the BAMs, ending in filtered.txt."""
    tool, option, path = chain.tools, chain.options.get, chain.path
    if not chain.normal:
        return [
            [*tool["fisher"], "single", "-1", chain.tumor, "-r", chain.reference, "-s", "samtools",
             "-L", chain.region_file, "-o", path("fisher.txt"), *option("fisher", [])],
            [*tool["mutfilter"], "realignment", "-t", path("fisher.txt"), "-1", chain.tumor,
             "-r", chain.reference, "-o", path("filtered.txt"), *option("realignment", [])],
        ]
    calls = "fisher.txt"
    hotspot = []
    if chain.hotspot_db:
        calls = "fisher_hotspot.txt"
        hotspot = [
            [*tool["hotspotCall"], *option("hotspot", []), chain.tumor, chain.normal, path("hotspot.txt"),
             chain.hotspot_db],
            [*tool["mutil"], "merge_hotspot", "-i", path("hotspot.txt"), "-f", path("fisher.txt"),
             "-o", path(calls), "--hotspot_header"],
        ]
    return [
        [*tool["fisher"], "comparison", "-1", chain.tumor, "-2", chain.normal, "-r", chain.reference,
         "-s", "samtools", "-L", chain.region_file, "-o", path("fisher.txt"), *option("fisher", [])],
        *hotspot,
        [*tool["mutfilter"], "realignment", "-t", path(calls), "-1", chain.tumor, "-2", chain.normal,
         "-r", chain.reference, "-o", path("realignment.txt"), *option("realignment", [])],
        [*tool["mutfilter"], "indel", "-t", path("realignment.txt"), "-2", chain.normal, "-s", "samtools",
         "-o", path("indel.txt"), *option("indel", [])],
        [*tool["mutfilter"], "breakpoint", "-t", path("indel.txt"), "-2", chain.normal,
         "-o", path("filtered.txt"), *option("breakpoint", [])],
    ]


def simple_repeat_command(chain: Chain) -> list[str]:
    return [*chain.tools["mutfilter"], "simplerepeat", "-t", chain.path("filtered.txt"),
            "-S", chain.simple_repeat_db, "-o", chain.path("annotated.txt")]


def ebfilter_command(chain: Chain) -> list[str]:
    return [*chain.tools["EBFilter"], "-f", "anno", "--loption", *chain.options.get("eb", []),
            chain.path("annotated.txt"), chain.tumor, chain.path("panel.txt"), chain.path("result.txt")]


def commands(chain: Chain) -> list[list[str]]:
    """Every tool command line of the chain, in order."""
    return (filter_commands(chain) + ([simple_repeat_command(chain)] if chain.simple_repeat_db else [])
            + ([ebfilter_command(chain)] if chain.panel else []))


def without_simple_repeats(source: str, destination: str) -> None:
    """The two simplerepeat columns as `---` on every row, as when no repeat is found."""
    with open(source) as rows, open(destination, "w") as out:
        for row in rows:
            out.write(row.rstrip("\n") + "\t---\t---\n")


def own_tool(command: list[str]) -> tuple[Callable[[list[str]], int], list[str]] | None:
    """(main, argv) when the command is `... python -m <one of genomon-smk's tools> ARGS`."""
    for index, token in enumerate(command[:-1]):
        if token == "-m" and command[index + 1] in OWN_TOOL_MAINS:
            return importlib.import_module(OWN_TOOL_MAINS[command[index + 1]]).main, command[index + 2 :]
    return None


def run_in_process(main: Callable[[list[str]], int], argv: list[str]) -> int:
    """main(argv)'s exit status, as its command line would give it."""
    for handler in logging.root.handlers[:]:  # each tool configures logging as its own process would
        logging.root.removeHandler(handler)
        handler.close()
    try:
        return main(argv) or 0
    except SystemExit as exit:
        if isinstance(exit.code, str):
            print(exit.code, file=sys.stderr)
            return 1
        return exit.code or 0


def execute(command: list[str]) -> None:
    print("+", shlex.join(command), file=sys.stderr, flush=True)
    tool = own_tool(command)
    if tool is None:
        subprocess.run(command, check=True)
        return
    status = run_in_process(*tool)
    sys.stdout.flush()
    sys.stderr.flush()
    if status:
        raise subprocess.CalledProcessError(status, command)


def run(chain: Chain, output: str) -> None:
    """Run the chain in its (existing) work directory, then move its result to `output`; a
    failing tool raises CalledProcessError."""
    for command in filter_commands(chain):
        execute(command)
    if chain.simple_repeat_db:
        execute(simple_repeat_command(chain))
    else:
        without_simple_repeats(chain.path("filtered.txt"), chain.path("annotated.txt"))
    result = chain.path("annotated.txt")
    if chain.panel:
        with open(chain.path("panel.txt"), "w") as listing:
            listing.writelines(f"{bam}\n" for bam in chain.panel)
        execute(ebfilter_command(chain))
        result = chain.path("result.txt")
    shutil.move(result, output)  # the work directory may be on another file system


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tumor", required=True)
    parser.add_argument("--normal", help="matched normal BAM; without it, tumor-only (fisher single)")
    parser.add_argument("--panel", nargs="*", default=[], help="control-panel BAMs; without them, no EBFilter")
    parser.add_argument("--reference", required=True)
    parser.add_argument("--intervals", required=True, help="the region's samtools intervals, comma-separated")
    parser.add_argument("--simple-repeat-db", default="", help="Genomon's simple-repeat database (bgzip + tabix)")
    parser.add_argument("--hotspot-db", default="",
                        help="Genomon's hotspot database: hotspotCall on its rows in the region (pairs only)")
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--tools", nargs="+", required=True, metavar="NAME=COMMAND",
                        help=f"the command line of each of {', '.join(TOOLS)}")
    for step in OPTION_STEPS:
        parser.add_argument(f"--{step}-options", default="",
                            help=f"{step}'s options, one string (give it as --{step}-options=...)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tools = dict(item.split("=", 1) for item in args.tools)
    hotspot = bool(args.hotspot_db and args.normal)
    missing = [name for name in TOOLS + (HOTSPOT_TOOLS if hotspot else ()) if name not in tools]
    if missing:
        raise SystemExit(f"identify_mutations: no --tools entry for {', '.join(missing)}")
    region_file = os.path.join(args.work_dir, "region.txt")
    os.makedirs(args.work_dir, exist_ok=True)
    with open(region_file, "w") as out:
        out.write(args.intervals + "\n")
    hotspot_db = os.path.join(args.work_dir, "hotspot_db.txt") if hotspot else None
    if hotspot_db:
        write_region_db(args.hotspot_db, args.intervals.split(","), hotspot_db)
    chain = Chain(
        tumor=args.tumor,
        normal=args.normal or None,
        panel=tuple(bam for bam in args.panel if bam),
        reference=args.reference,
        region_file=region_file,
        work=args.work_dir,
        tools={name: shlex.split(command) for name, command in tools.items()},
        simple_repeat_db=args.simple_repeat_db or None,
        hotspot_db=hotspot_db,
        options={step: shlex.split(getattr(args, f"{step}_options")) for step in OPTION_STEPS},
    )
    try:
        run(chain, args.output)
    except subprocess.CalledProcessError as error:
        print(f"identify_mutations: {shlex.join(error.cmd)} failed with exit status {error.returncode}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
