"""Paths the pipeline cannot take, refused when the run is planned rather than found by a job.

Measured with the pinned tools (biobambam2 2.0.185, samtools 1.16, bwa 0.7.17): spaces, quotes,
`$`, `&`, `;`, `=`, `,`, `:`, `#`, `*`, `[`, `\\` and non-ASCII letters all work once quoted,
and the rules quote every path (bammarkduplicates, which cuts its O=, M= and I= values at
whitespace whatever the quoting, runs in its work directory with relative names). What no
quoting rescues is refused here, naming the config key:

- control characters (newline, tab, ...): file lists (`samtools cat -b`, the EBFilter panel
  list) hold one path per line, the TSV reports one per field, and bammarkduplicates fails;
- braces: Snakemake reads `{name}` in a file pattern as a wildcard (a WildcardError far from
  the cause);
- `$NAME` left after the environment was expanded: the variable is not set, and the path would
  name a directory called `$NAME`.

Places that each job's shell expands (storage.paths.node_local and .cache may say
`"${TMPDIR:-/tmp}"`) are shell syntax on purpose, inside double quotes: variables expand there,
but what would run a command or end the quotes (`$(`, a backquote, `"`, `\\`) is refused, since a
config value is never code.
"""

from __future__ import annotations

import re

CONTROL = re.compile(r"[\x00-\x1f\x7f]")
UNSET_VARIABLE = re.compile(r"\$(\w+|\{[^}]*\})")
# In a double-quoted word: what runs a command ($(...), `...`) or ends the quotes (", \).
RUNS_IN_SHELL = re.compile(r'\$\(|[`"\\]')


def describe(char: str) -> str:
    names = {"\n": "a newline", "\t": "a tab", "\r": "a carriage return"}
    return names.get(char, f"the control character {char!r}")


def path_problems(key: str, path: str, expanded_by_job: bool = False) -> list[str]:
    """What makes `path` (the value of config `key`) unusable; empty when it is fine."""
    problems = []
    control = CONTROL.search(path)
    if control:
        problems.append(
            f"config {key}: {path!r} holds {describe(control.group())}, which file lists and "
            "bammarkduplicates cannot take in a path; rename the directory"
        )
    if expanded_by_job:
        code = RUNS_IN_SHELL.search(path)
        if code:
            problems.append(
                f"config {key}: {path!r} holds {code.group()!r}: a place the job's shell expands "
                "may name variables ($NAME, ${NAME:-default}) but run no command and hold no "
                "quote or backslash"
            )
        return problems
    unset = UNSET_VARIABLE.search(path)
    if unset:
        problems.append(
            f"config {key}: {path!r} names the environment variable {unset.group()}, which is "
            "not set; set it or write the path out"
        )
    elif "{" in path or "}" in path:
        problems.append(
            f"config {key}: {path!r} holds a brace, which Snakemake reads as a wildcard in a "
            "file name; rename the directory"
        )
    return problems
