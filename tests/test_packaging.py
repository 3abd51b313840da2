"""The package installs by itself: every module it imports from outside the standard library is
one of pyproject.toml's dependencies (`pip install .` into a fresh venv brings it), and
requirements.txt pins nothing that neither the package, the workflow nor a pinned tool needs."""

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import REPO

# Import names whose distribution is named otherwise.
DISTRIBUTION_OF = {"yaml": "pyyaml"}
# What the workflow (not the package) runs: Snakemake's own modules and the tools it calls.
WORKFLOW_ONLY = {"snakemake", "snakemake_interface_logger_plugins"}


def third_party_imports(root: Path) -> dict[str, str]:
    """Top-level modules imported anywhere under root that are not the standard library nor the
    package itself: module -> the first file importing it."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "genomon_smk":
                    found.setdefault(top, str(path.relative_to(REPO)))
    return found


def declared_dependencies() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return {dependency.split("[")[0].split("=")[0].split(">")[0].split("<")[0].strip().lower()
            for dependency in project["dependencies"]}


def test_every_module_the_package_imports_is_a_declared_dependency():
    imports = third_party_imports(REPO / "src" / "genomon_smk")
    missing = {module: where for module, where in imports.items()
               if DISTRIBUTION_OF.get(module, module).lower() not in declared_dependencies()
               and module not in WORKFLOW_ONLY}
    assert missing == {}


def test_the_pins_are_of_what_is_used():
    pins = {line.split("==")[0].strip().lower() for line in (REPO / "requirements.txt").read_text().splitlines()
            if "==" in line and not line.startswith("#")}
    assert declared_dependencies() - {"pyyaml"} <= pins  # pyyaml comes with Snakemake
    assert "snakemake-storage-plugin-fs" not in pins  # nothing stores through it


@pytest.mark.slow  # builds the package with pip (its build backend from the index): a few seconds
def test_pip_install_dot_leaves_nothing_in_the_checkout(tmp_path):
    """`pip install .` builds in a temporary directory: no build/ nor *.egg-info left beside
    the sources (setuptools left both)."""
    source = tmp_path / "genomon-smk"
    shutil.copytree(REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy2(REPO / "pyproject.toml", source)
    before = sorted(str(path.relative_to(source)) for path in source.rglob("*"))
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(tmp_path / "target"),
                             "."], cwd=source, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert (tmp_path / "target" / "genomon_smk" / "plan" / "rules.py").is_file()
    assert (tmp_path / "target" / "bin" / "fisher").is_file()
    after = sorted(str(path.relative_to(source)) for path in source.rglob("*") if "__pycache__" not in path.parts)
    assert after == [name for name in before if "__pycache__" not in name]
