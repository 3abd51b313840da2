"""`genomon-smk` helper command (subcommands are added by the modules that need them)."""

import sys


def main(argv=None):
    print("genomon-smk: no subcommand given", file=sys.stderr)
    return 2
