"""The package's import graph: no circle between modules, no arrow from a lower layer to a
higher one. Every import counts, also those inside functions and under ``TYPE_CHECKING``."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import searchsync

ROOT = Path(searchsync.__file__).parent

# Lowest first. A module may import from its own layer (without a circle) and from lower ones.
LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(layer.split())
    for layer in (
        "__init__ clock types errors naming duration exit_codes version gc_tuning time_zones",
        "config",
        "events projection",
        "examples search mysql",
        "observability",
        "kafka",
        "writer dlq",
        "stream",
        "ops relay watch",
        "resources",
        "app",
        "runtime read",
        "cli __main__ devtools",
    )
)

# Circles another change still has to break, each with its reason; empty when none is left.
ALLOWED_CIRCLES: frozenset[frozenset[str]] = frozenset()


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(name: str, path: Path) -> Iterator[str]:
    """Every ``searchsync`` name `path` (module `name`) imports, relative imports resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def graph() -> dict[str, set[str]]:
    mods = modules()

    def owner(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        for target in imported(name, path):
            found = owner(target)
            if found is not None and found != name and not name.startswith(found + "."):
                edges[name].add(found)
    return edges


def circles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = {stack.pop()}
            while v not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else "__init__"
    for rank, names in enumerate(LAYERS):
        if top in names:
            return rank
    raise AssertionError(f"{module}: its top-level name {top!r} is in no layer of LAYERS")


def test_no_module_imports_itself_back_through_a_circle() -> None:
    found = [sorted(c) for c in circles(graph()) if c not in ALLOWED_CIRCLES]
    assert found == []


def test_no_arrow_points_up_a_layer() -> None:
    upward = sorted(
        f"{a} -> {b}" for a, targets in graph().items() for b in targets if layer(b) > layer(a)
    )
    assert upward == []


def test_the_graph_sees_the_imports() -> None:
    edges = graph()
    assert "searchsync.config" in edges["searchsync.cli"]
    assert "searchsync.errors" in edges["searchsync.config._core"]
    assert "searchsync.ops.rebuild.catchup" in edges["searchsync.ops.rebuild.runner"]
