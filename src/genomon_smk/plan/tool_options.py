"""The free-text options of the project's own mutation tools checked before any job runs: each
options key is parsed by its tool's own command line parser, with the arguments the workflow
adds, so a misspelt or malformed option (`--min_dpeth 8`, `--min_depth eight`) is refused with
its config file and line instead of failing every identify_mutations job of the cohort hours
later. Upstream tools (mutation_tools: upstream) are not checked: their parsers are not ours.

A message names the user's own words, never the placeholders put around them (the positional
files go first, so argparse's "unrecognized arguments" lists only what the user wrote), and an
options string nested in another (`-S`/`--samtools_params`, samtools mpileup's options, which the
tool splits again) is checked the same way: it must split, hold no shell syntax, and give
mpileup no stray word that it would open as a BAM file."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import shlex

from genomon_smk.plan.config_check import shell_syntax, shell_syntax_message

# What the workflow passes besides the options (files are placeholders: only the words count).
FISHER_PAIR = ["comparison", "-1", "T.bam", "-2", "N.bam", "-r", "ref.fa", "-o", "out"]
FISHER_SINGLE = ["single", "-1", "T.bam", "-r", "ref.fa", "-o", "out"]
REALIGNMENT = ["realignment", "-t", "in", "-1", "T.bam", "-2", "N.bam", "-r", "ref.fa", "-o", "out"]
INDEL = ["indel", "-t", "in", "-2", "N.bam", "-o", "out"]
BREAKPOINT = ["breakpoint", "-t", "in", "-2", "N.bam", "-o", "out"]
MUTIL_FILTER = ["filter", "-i", "in", "-o", "out"]
HOTSPOT_POSITIONALS = ["T.bam", "N.bam", "out", "db"]


# key path -> (the tool's module in genomon_smk.tools, argv before the options, argv after them);
# a module's build_parser() is its command line, imported only when checked.
CHECKED: dict[tuple[str, ...], tuple[str, list[str], list[str]]] = {
    ("fisher_mutation_call", "pair_params"): ("fisher", FISHER_PAIR, []),
    ("fisher_mutation_call", "single_params"): ("fisher", FISHER_SINGLE, []),
    ("realignment_filter", "params"): ("mutfilter.cli", REALIGNMENT, []),
    ("indel_filter", "params"): ("mutfilter.cli", INDEL, []),
    ("breakpoint_filter", "params"): ("mutfilter.cli", BREAKPOINT, []),
    ("mutation_util", "pair_params"): ("mutil", MUTIL_FILTER, []),
    ("mutation_util", "single_params"): ("mutil", MUTIL_FILTER, []),
    ("hotspot_call", "params"): ("hotspot", HOTSPOT_POSITIONALS, []),
}


def tool_parser(module: str) -> argparse.ArgumentParser:
    return importlib.import_module(f"genomon_smk.tools.{module}").build_parser()


# The options that hold another tool's options as one string (the tools split it again).
NESTED_OPTIONS = {"samtools_params": ("-S", "--samtools_params", "samtools mpileup")}


def parse_problem(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """argparse's own complaint about argv (its last line, e.g. `fisher comparison: error:
    unrecognized arguments: --min_dpeth 8`), or None when it parses."""
    problem, _ = parse(parser, argv)
    return problem


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[str | None, argparse.Namespace | None]:
    """(argparse's complaint or None, the parsed options or None)."""
    complaint = io.StringIO()
    try:
        with contextlib.redirect_stderr(complaint), contextlib.redirect_stdout(io.StringIO()):
            return None, parser.parse_args(argv)
    except SystemExit as stop:
        if stop.code:
            lines = complaint.getvalue().strip().splitlines()
            return (lines[-1] if lines else f"refused by {parser.prog}"), None
        return "asks the tool for its help or version instead of running it", None


def nested_problem(option: str, tool: str, text: str) -> str | None:
    """Why a nested options string (the value of `option`, `tool`'s options) cannot be given to
    that tool, or None. A word that is neither an option nor the value right after one would
    be read by mpileup as one more BAM file to open."""
    try:
        words = shlex.split(text)
    except ValueError as error:
        return f"{option} {text!r}: cannot be split into {tool} options ({error}); balance its quotes"
    if (word := shell_syntax(words)) is not None:
        return f"{option} {text!r}: " + shell_syntax_message(word, text)
    for previous, word in zip([""] + words, words):
        if not word.startswith("-") and not previous.startswith("-"):
            return (f"{option} {text!r}: {word!r} is not a {tool} option nor an option's value "
                    f"({tool} would open it as one more BAM file)")
    return None


def tool_option_problems(values: dict[tuple[str, ...], object]) -> list[tuple[tuple[str, ...], str]]:
    """(key path, why) for each checked options value its tool does not take. values: key path ->
    the config's value (None or a value that cannot be split: left to the config check)."""
    problems = []
    for path, (module, before, after) in CHECKED.items():
        text = values.get(path)
        if not isinstance(text, str):
            continue
        try:
            words = shlex.split(text)
        except ValueError:
            continue
        problem, parsed = parse(tool_parser(module), [*before, *words, *after])
        if problem:
            problems.append((path, f"{problem} in {text!r} (the options are checked with the tool's own parser)"))
            continue
        for name, (short, long, tool) in NESTED_OPTIONS.items():
            value = getattr(parsed, name, None)
            if isinstance(value, str) and (problem := nested_problem(f"{short}/{long}", tool, value)):
                problems.append((path, problem))
    return problems
