"""No rerun for where the software is (issue 34): Snakemake reruns a job whose params, code or
input paths changed since it ran, so no path of the interpreter or of the checkout may be in
them. Starting the second day with `.venv/bin/python -m snakemake` instead of
`.venv/bin/snakemake` reran all 43 jobs, as would moving or re-cloning the checkout. A dry run of
the finished default run (with its own Snakemake records) plans nothing either way."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import MADE_IN, REPO, SNAKEMAKE

pytestmark = pytest.mark.workflow


def dry_run(command, scenario_root, **kwargs):
    """A dry run of the default scenario from the directory it ran in (its .snakemake/)."""
    cwd = Path((scenario_root / "config" / MADE_IN).read_text())
    result = subprocess.run([*command, "--profile", "profiles/local", "--configfile",
                             str(scenario_root / "config" / "config.yaml"), "--cores", "2", "-n", *kwargs.get("args", [])],
                            cwd=cwd, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout + result.stderr


def test_python_m_snakemake_reruns_nothing(pipeline_run, scenario_root):
    # Another spelling of the same interpreter than the `snakemake` script's #! line names.
    python = Path(sys.executable).parent / "python"
    assert Path(SNAKEMAKE).read_text().splitlines()[0] != f"#!{python}"
    output = dry_run([str(python), "-m", "snakemake"], scenario_root)
    assert "Nothing to be done" in output, output[-3000:]


def test_another_checkout_reruns_nothing(pipeline_run, scenario_root, tmp_path):
    """The workflow's files copied elsewhere (a moved or re-cloned checkout) run the finished run."""
    checkout = tmp_path / "elsewhere"
    checkout.mkdir()
    shutil.copytree(REPO / "workflow", checkout / "workflow")
    for name in ("src", "profiles", "envs", "config", ".venv-sv", ".venv"):
        if (REPO / name).exists():
            (checkout / name).symlink_to(REPO / name)
    output = dry_run([SNAKEMAKE, "--snakefile", str(checkout / "workflow" / "Snakefile")], scenario_root)
    assert "Nothing to be done" in output, output[-3000:]
