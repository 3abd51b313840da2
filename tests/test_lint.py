"""Workflow hygiene: Snakemake's linter, snakefmt, log and benchmark on every rule, env files."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import RUN_DIR, write_config
from genomon_smk.plan.rules import BATCH_RULES, SETUP_TARGET, TARGET_RULE

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
RULE_FILES = sorted((REPO / "workflow").rglob("*.smk")) + [REPO / "workflow" / "Snakefile"]


@pytest.mark.fast  # the fast lane's lint (tests/conftest.py, the two lanes)
@pytest.mark.parametrize("inputs", ["indexed", "bare"])
def test_snakemake_lint_is_clean(tmp_path, testdata, inputs):
    """Linted with the indexed reference, and with bare inputs (the set-up rules exist only when
    they have something to build), both pmsignature modes and the gene annotation (the test
    genome's genes)."""
    bare = dict(reference=str(testdata / "bare" / "genome.fa.gz"), resources_dir=str(tmp_path / "resources"),
                simple_repeat_db=str(testdata / "bare" / "simpleRepeat.txt.gz"),
                pmsignature={"annotation": str(REPO / ".test" / "config-genomon-sheet" / "genes.gtf")},
                pmsignature_ind={"enable": True}, pmsignature_full={"enable": True},
                gene_annotation=str(testdata / "genes.gtf"))
    config = write_config(tmp_path, testdata, **(bare if inputs == "bare" else {}))
    result = subprocess.run(
        [str(BIN / "snakemake"), "--lint", "--configfile", str(config)],
        cwd=RUN_DIR, capture_output=True, text=True,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "Congratulations, your workflow is in a good condition!" in output, output


def test_snakefmt_check_is_clean():
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")  # snakefmt runs shfmt from PATH
    result = subprocess.run([str(BIN / "snakefmt"), "--check", "workflow"], cwd=REPO, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_is_clean():
    """ruff (its rules: pyproject.toml) on the package, the tests, the benchmarks, the test-data
    generator and the PJM executor plugin."""
    result = subprocess.run([str(BIN / "ruff"), "check", "--no-cache", "src", "tests", "bench", ".test", "plugins"],
                            cwd=REPO,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def rule_blocks():
    """(file, rule, body with the rule's indentation removed), rules inside `if` blocks included."""
    for path in RULE_FILES:
        text = path.read_text()
        for match in re.finditer(r"^( *)rule (\w+):\n((?:\1    .*\n|\n)+)", text, flags=re.M):
            indent = match.group(1)
            body = "".join(line.removeprefix(indent) for line in match.group(3).splitlines(True))
            yield path.name, match.group(2), body


def test_every_rule_but_the_targets_has_log_benchmark_and_conda_env():
    rules = list(rule_blocks())
    assert len(rules) >= 8 and {"reference_bwa_index", "simple_repeat_db"} <= {name for _, name, _ in rules}
    for filename, name, body in rules:
        if name in (TARGET_RULE, SETUP_TARGET) or name in BATCH_RULES:
            continue
        for directive in ("log:", "benchmark:", "conda:"):
            assert f"\n    {directive}" in "\n" + body, f"{filename}: rule {name} has no {directive}"


def test_conda_env_files_are_valid_and_pinned():
    envs = sorted((REPO / "envs").glob("*.yaml"))
    referenced = set()
    for path in RULE_FILES:
        referenced |= set(re.findall(r'"\.\./\.\./envs/([\w.-]+\.yaml)"', path.read_text()))
    assert referenced == {p.name for p in envs}
    for path in envs:
        env = yaml.safe_load(path.read_text())
        assert "bioconda" in env["channels"]
        for dependency in env["dependencies"]:
            # A pip section (Genomon's SV tools are on PyPI only) pins each package with ==.
            for package in dependency["pip"] if isinstance(dependency, dict) else [dependency]:
                assert "=" in package, f"{path.name}: {package} is not pinned"


def test_documented_example_config_matches_the_schema():
    import jsonschema

    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    example = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    jsonschema.Draft202012Validator(schema).validate(example)
    documented = (REPO / "config" / "README.md").read_text()
    for key in schema["properties"]:
        assert f"`{key}" in documented, f"config/README.md does not document {key}"
