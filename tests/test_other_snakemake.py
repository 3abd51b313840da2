"""The workflow on another Snakemake 9 release from PyPI: the oldest it supports (min_version in
rules/config.smk, pyproject.toml's range), where the planning optimisations are off
(genomon_smk.plan.snakemake_patches): the pair scenario's mutation calls, made from the default
run's BAMs, equal those of the pinned Snakemake's run.

The release is installed once into its own venv under the user's cache directory (pip's cache
makes it a matter of seconds); that venv holds only Snakemake and what its release needs beyond
this venv, and reads everything else (the project, its plugins, pysam, ...) from this venv."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import (PAIR_SAMPLES, REPO, result_rows, reuse_mapped_samples, scenario_output, scenario_variant)

OTHER_SNAKEMAKE = "9.17.3"


def other_snakemake() -> Path:
    """The `snakemake` command of OTHER_SNAKEMAKE's venv, made if missing."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "genomon-smk"
    venv = cache / f"snakemake-{OTHER_SNAKEMAKE}"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # This venv's packages (the editable project and plugins included) after the release's own:
    # written every time, as the checkout (and so this venv) may have moved since.
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    ours = sysconfig.get_paths()["purelib"]
    (Path(purelib) / "zz-genomon-smk-base.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    command = venv / "bin" / "snakemake"
    version = subprocess.run([str(command), "--version"], capture_output=True, text=True) if command.exists() else None
    if version is None or version.returncode != 0 or version.stdout.strip() != OTHER_SNAKEMAKE:
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"snakemake=={OTHER_SNAKEMAKE}"], check=True,
                       capture_output=True)
    return command


def test_the_other_release_is_the_oldest_supported_one():
    config = (REPO / "workflow" / "rules" / "config.smk").read_text()
    oldest = OTHER_SNAKEMAKE.rsplit(".", 1)[0]
    assert f'min_version("{oldest}")' in config
    assert f'"snakemake>={oldest},<10"' in (REPO / "pyproject.toml").read_text()


@pytest.mark.slow
@pytest.mark.workflow
def test_another_snakemake_release_runs_unpatched_and_calls_the_same_mutations(tmp_path, scenario_root, request):
    snakemake = other_snakemake()
    pipeline_run, pair_run = request.getfixturevalue("pipeline_run"), request.getfixturevalue("pair_run")
    config = scenario_variant(scenario_root, "config-pair", tmp_path)
    results = tmp_path / "results"
    reuse_mapped_samples(pipeline_run, results, PAIR_SAMPLES)
    names = [f"mutation/tumor/tumor.genomon_mutation.result{suffix}" for suffix in (".txt", ".filt.txt")]
    ran = subprocess.run(
        [str(snakemake), "--snakefile", str(REPO / "workflow" / "Snakefile"), "--profile", str(REPO / "profiles" / "local"),
         "--configfile", str(config), "--cores", "2", *(str(results / name) for name in names)],
        cwd=tmp_path, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-4000:]
    assert f"genomon-smk: Snakemake {OTHER_SNAKEMAKE} plans unpatched" in ran.stderr
    assert "genomon-smk: the results are in" in ran.stderr  # the console plugin's closing lines
    assert scenario_output(scenario_root, "config-pair") == pair_run
    for name in names:
        rows = result_rows(results / name)
        assert len(rows) > 1 and rows == result_rows(pair_run / name), name
