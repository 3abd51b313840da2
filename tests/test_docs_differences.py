"""docs/differences.md stays honest: every module whose docstring says "Deliberate difference(s)
from upstream Genomon" is named there, every module a difference table names carries that
sentence, and every module, function and file the page names exists. Source files are read with
ast, nothing is imported (no install needed)."""

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
DOC = REPO / "docs" / "differences.md"
MARKER = re.compile(r"deliberate differences? from upstream genomon", re.IGNORECASE)
# `genomon_smk.tools.fisher`, `genomon_smk.tools.fisher.pair_calls`, `...Class.method`
NAME = re.compile(r"`(genomon_smk(?:\.\w+)*)`")
# `workflow/rules/sv.smk`, `tests/test_fisher.py`, `requirements-sv.txt`, ...
PATH = re.compile(r"`((?:src|workflow|tests|config|envs|bin|docs)/[\w./-]+|requirements[\w-]*\.txt)`")
AREAS = ("## Mutation tools", "## SV detection", "## Pipeline and outputs")


def module_file(dotted: str) -> Path | None:
    base = SRC.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def resolve(name: str) -> tuple[str, Path, list[str]] | None:
    """(module, its file, the attribute path after it) of a dotted name: the longest prefix that
    is a module of src/."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        path = module_file(".".join(parts[:cut]))
        if path is not None:
            return ".".join(parts[:cut]), path, parts[cut:]
    return None


def defines(scope: list[ast.stmt], attributes: list[str]) -> bool:
    """Whether the statements define the attribute path (functions, classes, their methods,
    module-level names)."""
    for attribute in attributes:
        found = None
        for node in scope:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == attribute:
                found = node
            elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attribute for t in node.targets):
                found = node
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == attribute:
                found = node
        if found is None:
            return False
        scope = found.body if isinstance(found, ast.ClassDef) else []
    return True


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def marked_modules() -> dict[str, Path]:
    """Modules of src/ whose docstring carries the marker sentence."""
    marked = {}
    for path in sorted((SRC / "genomon_smk").rglob("*.py")):
        docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
        if MARKER.search(" ".join(docstring.split())):
            marked[module_name(path)] = path
    return marked


def table_lines(text: str) -> list[str]:
    """The rows of the difference tables (the area sections), header and rule lines left out."""
    rows = []
    for area in AREAS:
        start = text.index(area)
        end = text.find("\n## ", start + 1)
        section = text[start:end if end != -1 else None]
        rows += [line for line in section.splitlines()
                 if line.startswith("|") and not line.startswith(("| what", "|---"))]
    return rows


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text()


def test_every_marked_module_is_named(doc):
    marked = marked_modules()
    # The marker is in the docstrings of the tools and steps that differ; far fewer would mean it
    # was dropped or reworded, and this test would check nothing.
    assert len(marked) >= 15, sorted(marked)
    named_modules = {resolved[0] for name in NAME.findall(doc) if (resolved := resolve(name))}
    missing = sorted(set(marked) - named_modules)
    assert missing == [], f"modules saying 'Deliberate difference from upstream Genomon' not named in {DOC.name}: {missing}"


def test_every_named_module_function_and_file_exists(doc):
    names = NAME.findall(doc)
    assert len(names) >= 40
    unknown = []
    for name in sorted(set(names)):
        resolved = resolve(name)
        if resolved is None:
            unknown.append(name)
            continue
        _, path, attributes = resolved
        if attributes and not defines(ast.parse(path.read_text()).body, attributes):
            unknown.append(name)
    assert unknown == [], f"{DOC.name} names what the code does not define: {unknown}"
    paths = PATH.findall(doc)
    assert paths
    assert [p for p in paths if not (REPO / p).exists()] == []


def test_every_module_of_a_difference_table_carries_the_marker(doc):
    marked = marked_modules()
    rows = table_lines(doc)
    assert len(rows) >= 25
    unmarked = sorted({resolved[0] for row in rows for name in NAME.findall(row)
                       if (resolved := resolve(name)) and resolved[0] not in marked})
    assert unmarked == [], f"modules in {DOC.name}'s tables whose docstring lacks the marker: {unmarked}"


def test_one_table_per_area_with_five_columns(doc):
    for area in AREAS:
        start = doc.index(area)
        end = doc.find("\n## ", start + 1)
        rows = [line for line in doc[start:end].splitlines() if line.startswith("| ")]
        assert len(rows) >= 3, area
        header = rows[0]
        assert header == "| what | upstream | genomon-smk (code) | why | results differ |", area
        for row in rows:
            cells = re.split(r"(?<!\\)\|", row.strip())[1:-1]
            assert len(cells) == 5, row


def test_the_docs_link_the_page():
    for page in ("README.md", "docs/usage.md", "config/README.md"):
        assert "differences.md" in (REPO / page).read_text(), page
    assert "One deliberate difference from upstream" not in (REPO / "docs" / "usage.md").read_text()


def test_the_checks_can_fail(tmp_path):
    """The resolver rejects a function that does not exist and a module that does not; the
    marker is found in a docstring that has it."""
    assert resolve("genomon_smk.tools.fisher.pair_calls") is not None
    _, path, attributes = resolve("genomon_smk.tools.fisher.no_such_function")
    assert not defines(ast.parse(path.read_text()).body, attributes)
    assert defines(ast.parse(path.read_text()).body, ["pair_calls"])
    assert resolve("genomon_smk_nothing.fisher") is None
    assert MARKER.search("Deliberate difference from upstream Genomon (docs/differences.md): x")
