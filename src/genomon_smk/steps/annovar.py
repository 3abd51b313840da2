"""The user's own ANNOVAR on a pair's merged calls, as Genomon v2.6 runs it (annotation.tool:
annovar): ``table_annovar.pl --outfile PREFIX {table_annovar_params} INPUT {humandb}`` on the
header-less rows (all Genomon columns from the 6th on travel in ANNOVAR's Otherinfo), then
Genomon's column handling: the header is ANNOVAR's up to (not including) ``Otherinfo`` or
``Otherinfo1`` (ANNOVAR from 2019Oct24 names them Otherinfo1..N), then the calls' own column names
from the 6th on; the rows as ANNOVAR wrote them (missing values empty: Genomon passes no
-nastring). The calls' ``#`` meta lines are kept.

``python -m genomon_smk.steps.annovar --annovar-dir D --humandb H --buildver B --params P
--work W CALLS RESULT``

Deliberate differences from upstream Genomon (docs/differences.md): ANNOVAR runs once per pair on
the merged calls (Genomon: once per interval region before the merge); the same columns.

Untested against a real ANNOVAR (licensed; not installable here): the tests run a stand-in
table_annovar.pl that writes a recorded multianno layout.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys

OTHERINFO = ("Otherinfo", "Otherinfo1")


def read_calls(path: str) -> tuple[list[str], list[str], list[str]]:
    """(meta lines, header fields, data lines) of a Genomon mutation result."""
    meta, header, rows = [], None, []
    with open(path) as handle:
        for line in handle:
            text = line.rstrip("\r\n")
            if header is None and text.startswith("#"):
                meta.append(text)
            elif header is None:
                header = text.split("\t")
            elif text:
                rows.append(text)
    if header is None:
        raise ValueError(f"{path}: no header line")
    return meta, header, rows


def merged_header(multianno_header: list[str], calls_header: list[str]) -> list[str]:
    """Genomon's: ANNOVAR's columns before Otherinfo/Otherinfo1, then the calls' from the 6th on."""
    cut = next((index for index, name in enumerate(multianno_header) if name in OTHERINFO), None)
    if cut is None:
        raise ValueError("the multianno header has no Otherinfo column: table_annovar_params needs --otherinfo "
                         f"(header: {' '.join(multianno_header)})")
    return multianno_header[:cut] + calls_header[5:]


def run_table_annovar(annovar_dir: str, humandb: str, params: str, input_path: str, prefix: str) -> None:
    command = [os.path.join(annovar_dir, "table_annovar.pl"), "--outfile", prefix, *shlex.split(params),
               input_path, humandb]
    print("+", shlex.join(command), file=sys.stderr, flush=True)
    subprocess.run(command, check=True)


def annotate(calls: str, result: str, annovar_dir: str, humandb: str, buildver: str, params: str,
             work: str) -> int:
    """Write result from calls through ANNOVAR; the rows written."""
    meta, header, rows = read_calls(calls)
    input_path = os.path.join(work, "calls.avinput")
    with open(input_path, "w") as out:
        out.writelines(row + "\n" for row in rows)
    prefix = os.path.join(work, "annovar")
    run_table_annovar(annovar_dir, humandb, params, input_path, prefix)
    multianno = f"{prefix}.{buildver}_multianno.txt"
    with open(multianno) as handle:
        lines = [line.rstrip("\r\n") for line in handle]
    if not lines:
        raise ValueError(f"{multianno} is empty")
    titles = merged_header(lines[0].split("\t"), header)
    annotated = [line for line in lines[1:] if line]
    if len(annotated) != len(rows):
        raise ValueError(f"{multianno} has {len(annotated)} rows, the calls {len(rows)}")
    for number, line in enumerate(annotated, start=2):
        if len(line.split("\t")) != len(titles):
            raise ValueError(f"{multianno} line {number} has {len(line.split(chr(9)))} fields, the merged header "
                             f"{len(titles)} (an empty cell of the calls swallowed by ANNOVAR's whitespace split?)")
    partial = f"{result}.partial"
    with open(partial, "w") as out:
        out.writelines(line + "\n" for line in [*meta, "\t".join(titles), *annotated])
    os.replace(partial, result)
    return len(annotated)


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m genomon_smk.steps.annovar", description=__doc__.split("\n\n")[0])
    parser.add_argument("--annovar-dir", required=True, help="ANNOVAR's directory (table_annovar.pl)")
    parser.add_argument("--humandb", required=True, help="ANNOVAR's database directory")
    parser.add_argument("--buildver", required=True, help="the multianno file's build (-buildver)")
    parser.add_argument("--params", required=True, help="table_annovar.pl's options (Genomon's table_annovar_params)")
    parser.add_argument("--work", required=True, help="a directory for ANNOVAR's files")
    parser.add_argument("calls")
    parser.add_argument("result")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        rows = annotate(args.calls, args.result, args.annovar_dir, args.humandb, args.buildver, args.params, args.work)
    except (OSError, ValueError, subprocess.CalledProcessError) as error:
        print(f"genomon_smk.steps.annovar: {error}", file=sys.stderr)
        return 1
    print(f"{rows} calls annotated by ANNOVAR into {args.result}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
