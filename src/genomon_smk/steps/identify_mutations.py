"""Identify mutations in one region of one pair, as Genomon chains its tools:

pair:       fisher comparison [-> hotspotCall -> mutil merge_hotspot] -> mutfilter realignment -> indel
            -> breakpoint -> simplerepeat -> EBFilter
tumor only: fisher single -> mutfilter realignment -> simplerepeat -> EBFilter

hotspotCall only with a hotspot database (on the database's rows in the region: Genomon's
per-interval `<db>.<i>` file), simplerepeat only with a simple-repeat database (otherwise its two
columns are `---`), EBFilter only with a control panel. `steps()` is the chain as one ordered
list of steps, each a Genomon tool's arguments (with its Genomon options) or the driver's own
work; the header-less "anno" tables pass through files in a work directory, and the result is
moved into place only when every step succeeded. The tool choice (`--tools builtin` or
`upstream`, the config's `mutation_tools`) says how a step's tool runs: genomon-smk's own tools
in this process (the same code as their command lines, imported once per job: each process
would import pysam, numpy and scipy again, about a second of a job's CPU); upstream's as
commands (`--upstream NAME=COMMAND`, else NAME on PATH).

Deliberate differences from upstream Genomon (docs/differences.md): fisher gets the region's
intervals with ``-L`` (Genomon: ``-R`` per interval), EBFilter ``--loption`` without
``--region``, realignment no ``--blat_path``; without a simple-repeat database the two columns
are ``---`` (Genomon requires one); each tool's output stays in the work directory; with
``--tumor-mapped-here``, fisher screens the tumor's reads with an edit only (the same rows).
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
import tempfile
from dataclasses import dataclass, field
from typing import Callable

# The tools share this process, and numpy loads OpenBLAS once, at fisher's import: EBFilter's
# per-site fits need it single-threaded (tools/ebfilter.py, ~13x slower per fit otherwise), and
# its own setting would come too late.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from genomon_smk.plan.hotspot import write_region_db  # noqa: E402
from genomon_smk.steps.reference_cache import METHODS as STAGING_METHODS  # noqa: E402
from genomon_smk.steps.reference_cache import staged_fasta  # noqa: E402

CHOICES = ("builtin", "upstream")
# Each Genomon tool of the chain -> the module of genomon-smk's own whose main(argv) is that tool.
BUILTIN_MAINS = {
    "fisher": "genomon_smk.tools.fisher",
    "hotspotCall": "genomon_smk.tools.hotspot",
    "mutil": "genomon_smk.tools.mutil",
    "mutfilter": "genomon_smk.tools.mutfilter.cli",
    "EBFilter": "genomon_smk.tools.ebfilter",
}
# The steps whose Genomon options the job passes on (--STEP-options).
OPTION_STEPS = ("fisher", "hotspot", "realignment", "indel", "breakpoint", "eb")


@dataclass(frozen=True)
class Chain:
    """What one identify-mutations job works on."""

    tumor: str
    reference: str
    region_file: str
    work: str
    normal: str | None = None
    panel: tuple[str, ...] = ()
    simple_repeat_db: str | None = None
    # The region's rows of the hotspot database (pairs with a normal only).
    hotspot_db: str | None = None
    options: dict[str, list[str]] = field(default_factory=dict)
    # fisher screens the tumor's reads with an edit only (the BAM's NM tags are bwa's; builtin fisher).
    screen_edited_reads: bool = False

    def path(self, name: str) -> str:
        return os.path.join(self.work, name)

    @property
    def result(self) -> str:
        return self.path("result.txt" if self.panel else "annotated.txt")


@dataclass(frozen=True)
class Step:
    """One step of the chain: `tool` run with `argv`, or (tool None) the driver's own `work`."""

    name: str
    tool: str | None
    argv: tuple[str, ...] = ()
    work: Callable[[], None] | None = None

    def show(self) -> str:
        return shlex.join([self.tool, *self.argv]) if self.tool else self.name


def steps(chain: Chain) -> list[Step]:
    """The chain, in order."""
    option, path = chain.options.get, chain.path

    def tool(name: str, tool: str, *argv: str, options: str | None = None) -> Step:
        return Step(name, tool, (*argv, *option(options, [])) if options else argv)

    if chain.normal:
        calls = "fisher_hotspot.txt" if chain.hotspot_db else "fisher.txt"
        chosen = [
            tool("fisher", "fisher", "comparison", "-1", chain.tumor, "-2", chain.normal, "-r", chain.reference,
                 "-s", "samtools", "-L", chain.region_file, "-o", path("fisher.txt"),
                 *(["--screen_edited_reads"] if chain.screen_edited_reads else []), options="fisher"),
        ]
        if chain.hotspot_db:
            chosen += [
                Step("hotspotCall", "hotspotCall", (*option("hotspot", []), chain.tumor, chain.normal,
                                                    path("hotspot.txt"), chain.hotspot_db)),
                tool("merge_hotspot", "mutil", "merge_hotspot", "-i", path("hotspot.txt"), "-f", path("fisher.txt"),
                     "-o", path(calls), "--hotspot_header"),
            ]
        chosen += [
            tool("realignment", "mutfilter", "realignment", "-t", path(calls), "-1", chain.tumor, "-2", chain.normal,
                 "-r", chain.reference, "-o", path("realignment.txt"), options="realignment"),
            tool("indel", "mutfilter", "indel", "-t", path("realignment.txt"), "-2", chain.normal, "-s", "samtools",
                 "-o", path("indel.txt"), options="indel"),
            tool("breakpoint", "mutfilter", "breakpoint", "-t", path("indel.txt"), "-2", chain.normal,
                 "-o", path("filtered.txt"), options="breakpoint"),
        ]
    else:
        chosen = [
            tool("fisher", "fisher", "single", "-1", chain.tumor, "-r", chain.reference, "-s", "samtools",
                 "-L", chain.region_file, "-o", path("fisher.txt"), options="fisher"),
            tool("realignment", "mutfilter", "realignment", "-t", path("fisher.txt"), "-1", chain.tumor,
                 "-r", chain.reference, "-o", path("filtered.txt"), options="realignment"),
        ]
    if chain.simple_repeat_db:
        chosen.append(tool("simplerepeat", "mutfilter", "simplerepeat", "-t", path("filtered.txt"),
                           "-S", chain.simple_repeat_db, "-o", path("annotated.txt")))
    else:
        chosen.append(Step("no simple-repeat database: --- in its columns", None,
                           work=lambda: without_simple_repeats(path("filtered.txt"), path("annotated.txt"))))
    if chain.panel:
        chosen.append(Step("EBFilter", "EBFilter", ("-f", "anno", "--loption", *option("eb", []),
                                                    path("annotated.txt"), chain.tumor, path("panel.txt"),
                                                    path("result.txt"))))
    return chosen


def without_simple_repeats(source: str, destination: str) -> None:
    """The two simplerepeat columns as `---` on every row, as when no repeat is found."""
    with open(source) as rows, open(destination, "w") as out:
        for row in rows:
            out.write(row.rstrip("\n") + "\t---\t---\n")


class ToolFailed(Exception):
    def __init__(self, step: Step, status: int):
        super().__init__(f"{step.show()} failed with exit status {status}")
        self.step, self.status = step, status


@dataclass(frozen=True)
class Tools:
    """How the chain's tools run: `builtin`, genomon-smk's own in this process; `upstream`,
    Genomon's commands (`commands` NAME -> command words; default NAME, found on PATH)."""

    choice: str = "builtin"
    commands: dict[str, list[str]] = field(default_factory=dict)

    def run(self, step: Step) -> None:
        print("+", step.show(), file=sys.stderr, flush=True)
        if step.tool is None:
            step.work()
            return
        if self.choice == "builtin":
            status = run_in_process(importlib.import_module(BUILTIN_MAINS[step.tool]).main, list(step.argv))
            sys.stdout.flush()
            sys.stderr.flush()
        else:
            try:
                status = subprocess.run([*self.commands.get(step.tool, [step.tool]), *step.argv]).returncode
            except FileNotFoundError as missing:
                print(missing, file=sys.stderr)
                status = 127
        if status:
            raise ToolFailed(step, status)


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


def run(chain: Chain, output: str, tools: Tools) -> None:
    """Run the chain in its (existing) work directory, then move its result to `output`; a
    failing tool raises ToolFailed."""
    if chain.panel:
        with open(chain.path("panel.txt"), "w") as listing:
            listing.writelines(f"{bam}\n" for bam in chain.panel)
    for step in steps(chain):
        tools.run(step)
    shutil.move(chain.result, output)  # the work directory may be on another file system


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tumor", required=True)
    parser.add_argument("--normal", help="matched normal BAM; without it, tumor-only (fisher single)")
    parser.add_argument("--panel", nargs="*", default=[], help="control-panel BAMs; without them, no EBFilter")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--reference", help="reference FASTA")
    where.add_argument("--staged-reference", metavar="MANIFEST",
                       help="the reference's staging manifest: its staged copy on this node "
                            "(`reference_cache ensure`, in this process)")
    parser.add_argument("--cache", help="with --staged-reference, the cache directory")
    parser.add_argument("--staging", choices=STAGING_METHODS, default="copy",
                        help="with --staged-reference, how the reference is staged")
    parser.add_argument("--intervals", required=True, help="the region's samtools intervals, comma-separated")
    parser.add_argument("--simple-repeat-db", default="", help="Genomon's simple-repeat database (bgzip + tabix)")
    parser.add_argument("--hotspot-db", default="",
                        help="Genomon's hotspot database: hotspotCall on its rows in the region (pairs only)")
    parser.add_argument("--tumor-mapped-here", action="store_true",
                        help="the tumor's BAM is this pipeline's bwa mapping against this reference, so its "
                             "NM tags count every edit: fisher screens the reads with one only")
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--tools", choices=CHOICES, default="builtin",
                        help="genomon-smk's own tools (in this process) or upstream Genomon's (commands)")
    parser.add_argument("--upstream", nargs="*", default=[], metavar="NAME=COMMAND",
                        help=f"with --tools upstream, the command of any of {', '.join(BUILTIN_MAINS)} "
                             "(default: the name, on PATH)")
    for step in OPTION_STEPS:
        parser.add_argument(f"--{step}-options", default="",
                            help=f"{step}'s options, one string (give it as --{step}-options=...)")
    return parser.parse_args(argv)


def staged_reference(manifest: str, cache: str | None, method: str) -> str:
    """The FASTA's staged path on this node (copied first if it is not there): what
    `python -m genomon_smk.steps.reference_cache ensure` prints, without its interpreter."""
    if method == "copy" and not cache:
        raise SystemExit("identify_mutations: --staged-reference needs --cache")
    return staged_fasta(manifest, cache, method)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        reference = args.reference or staged_reference(args.staged_reference, args.cache, args.staging)
    except OSError as error:
        print(f"identify_mutations: the staged reference: {error}", file=sys.stderr)
        return 1
    upstream = dict(item.split("=", 1) for item in args.upstream)
    unknown = sorted(set(upstream) - set(BUILTIN_MAINS))
    if unknown:
        raise SystemExit(f"identify_mutations: --upstream names no tool {', '.join(unknown)} "
                         f"(the tools: {', '.join(BUILTIN_MAINS)})")
    region_file = os.path.join(args.work_dir, "region.txt")
    os.makedirs(args.work_dir, exist_ok=True)
    # The tools' temporaries (fisher's site BED, EBFilter's pileup lists; upstream's through
    # TMPDIR) in the job's work directory on its tier, not the system /tmp.
    tempfile.tempdir = args.work_dir
    os.environ["TMPDIR"] = args.work_dir
    with open(region_file, "w") as out:
        out.write(args.intervals + "\n")
    hotspot_db = os.path.join(args.work_dir, "hotspot_db.txt") if args.hotspot_db and args.normal else None
    if hotspot_db:
        write_region_db(args.hotspot_db, args.intervals.split(","), hotspot_db)
    chain = Chain(
        tumor=args.tumor,
        normal=args.normal or None,
        panel=tuple(bam for bam in args.panel if bam),
        reference=reference,
        region_file=region_file,
        work=args.work_dir,
        simple_repeat_db=args.simple_repeat_db or None,
        hotspot_db=hotspot_db,
        options={step: shlex.split(getattr(args, f"{step}_options")) for step in OPTION_STEPS},
        screen_edited_reads=args.tumor_mapped_here and args.tools == "builtin",
    )
    try:
        run(chain, args.output, Tools(args.tools, {name: shlex.split(command) for name, command in upstream.items()}))
    except ToolFailed as error:
        print(f"identify_mutations: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
