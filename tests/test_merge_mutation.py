"""merge_mutation's result: the meta line names each tool as its `--version` prints it, for
genomon-smk's own tools without starting them (`--builtin-version-of`)."""

import subprocess
import sys

from genomon_smk.steps import merge_mutation
from genomon_smk.steps.merge_mutation import header_columns

MODULES = {"fisher": "fisher", "mutfilter": "mutfilter", "EBFilter": "ebfilter", "mutil": "mutil"}


def test_builtin_versions_are_what_the_tools_print(tmp_path):
    region = tmp_path / "r1.txt"
    region.write_text("\t".join(["x"] * len(header_columns(True, True))) + "\n")
    (tmp_path / "regions.txt").write_text(f"{region}\n")
    outputs = {}
    for option, tools in (("--builtin-version-of", list(MODULES)),
                          ("--version-of", [f"{sys.executable} -m genomon_smk.tools.{m}" for m in MODULES.values()])):
        out = tmp_path / f"{option}.txt"
        assert merge_mutation.main(["result", "--out", str(out), "--paired", "--panel", option, *tools,
                                    "--regions-file", str(tmp_path / "regions.txt")]) == 0
        outputs[option] = out.read_text().splitlines()
    version = outputs["--version-of"][0]
    printed = subprocess.run([sys.executable, "-m", "genomon_smk.tools.mutil", "--version"], capture_output=True,
                             text=True).stdout.strip()
    assert version.startswith("# Version: fisher-genomon_smk-") and printed in version.split()
    assert outputs["--builtin-version-of"][0] == version
    assert outputs["--builtin-version-of"][3:] == outputs["--version-of"][3:]
