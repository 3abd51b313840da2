"""Shared fixtures: the .test data set and one pipeline run on it, made once per test session."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")


@pytest.fixture(scope="session")
def testdata(tmp_path_factory):
    """The `test` preset of .test/make_testdata.py, generated into a session directory."""
    out = tmp_path_factory.mktemp("testdata")
    subprocess.run(
        [sys.executable, str(REPO / ".test" / "make_testdata.py"), str(out), "--preset", "test"],
        check=True,
        capture_output=True,
    )
    return out


def write_config(directory, testdata, **overrides):
    """A config for the test data (based on .test/config/config.yaml), with overrides, in directory."""
    config = yaml.safe_load((REPO / ".test" / "config" / "config.yaml").read_text())
    config.update(
        reference=str(testdata / "ref" / "genome.fa"),
        samples=str(testdata / "samples.tsv"),
        pairs=str(testdata / "pairs.tsv"),
        output_dir="results",
    )
    config.update(overrides)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def run_snakemake(config_path, *args, check=True):
    """Run the workflow from the repository root, as the README says."""
    command = [SNAKEMAKE, "--profile", "profiles/local", "--configfile", str(config_path), "--cores", "2", *args]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake failed ({result.returncode}):\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}")
    return result


@pytest.fixture(scope="session")
def pipeline_run(tmp_path_factory, testdata):
    """One full run of the workflow on the test data; returns its output directory."""
    run_dir = tmp_path_factory.mktemp("run")
    config = write_config(run_dir, testdata)
    run_snakemake(config)
    return run_dir / "results"


@pytest.fixture(scope="session")
def truth(testdata):
    return json.loads((testdata / "truth" / "meta.json").read_text())
