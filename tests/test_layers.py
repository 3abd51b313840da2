"""The package's layers import downward only: tools <- plan <- steps <- runtime, with the shared
file helpers (genomon_smk.fileio) and the package root below them all. A module importing a layer
above its own (e.g. a step importing runtime bookkeeping, the planner importing a step) fails."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "genomon_smk"
LAYERS = ["genomon_smk", "tools", "plan", "steps", "runtime"]  # lowest first


def layer(module: str) -> int:
    """The layer of `genomon_smk.X` and `genomon_smk.X.Y` (a subpackage itself is its layer: `import
    genomon_smk.runtime` and `from genomon_smk import runtime` are imports of that layer); the root's
    own modules, fileio included, are the lowest."""
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) >= 2 and parts[1] in LAYERS else 0


def imported_modules(path: Path, module: str) -> set[str]:
    """The genomon_smk modules a file imports, anywhere in it (relative imports resolved)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: -node.level]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.add(name)
            found |= {f"{name}.{alias.name}" for alias in node.names}
    return {name for name in found if name.startswith("genomon_smk.") and name.count(".") >= 1}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_layers_import_downward_only():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        for name in imported_modules(path, module):
            if layer(name) > layer(module):
                upward.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    assert not upward, "\n".join(upward)


def test_an_upward_import_of_a_whole_layer_is_caught(tmp_path):
    """`import genomon_smk.runtime` and `from genomon_smk import runtime` in the plan layer are
    upward imports as much as `from genomon_smk.runtime.console import X`."""
    source = tmp_path / "planner.py"
    for line in ("import genomon_smk.runtime", "from genomon_smk import runtime",
                 "from genomon_smk.runtime import console", "from .. import runtime"):
        source.write_text(line + "\n")
        names = imported_modules(source, "genomon_smk.plan.planner")
        assert max(layer(name) for name in names) > layer("genomon_smk.plan.planner"), line
    source.write_text("from genomon_smk import fileio\nimport genomon_smk.tools\n")
    assert max(layer(name) for name in imported_modules(source, "genomon_smk.plan.planner")) < layer("genomon_smk.plan")


def test_every_subpackage_is_a_layer():
    assert {path.parent.name for path in PACKAGE.glob("*/__init__.py")} == set(LAYERS[1:])


def test_the_package_root_has_no_entry_point_shims():
    """Each module at the root is shared code (fileio) or the version: a `python -m` name lives
    with its code (genomon_smk.plan.planner, genomon_smk.plan.timeline, genomon_smk.steps.X)."""
    assert sorted(path.name for path in PACKAGE.glob("*.py")) == ["__init__.py", "fileio.py"]
