"""The package's layers import downward only: tools <- plan <- steps <- runtime, with the shared
file helpers (genomon_smk.fileio) and the package root below them all. A module importing a layer
above its own (e.g. a step importing runtime bookkeeping, the planner importing a step) fails."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "genomon_smk"
LAYERS = ["genomon_smk", "tools", "plan", "steps", "runtime"]  # lowest first


def layer(module: str) -> int:
    """The layer of `genomon_smk.X...` (the root's own modules, fileio included, are the lowest)."""
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 2 and parts[1] in LAYERS else 0


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


def test_every_subpackage_is_a_layer():
    assert {path.parent.name for path in PACKAGE.glob("*/__init__.py")} == set(LAYERS[1:])


def test_the_package_root_has_no_entry_point_shims():
    """Each module at the root is shared code (fileio) or the version: a `python -m` name lives
    with its code (genomon_smk.plan.planner, genomon_smk.plan.timeline, genomon_smk.steps.X)."""
    assert sorted(path.name for path in PACKAGE.glob("*.py")) == ["__init__.py", "fileio.py"]
