"""The package has no import cycles — module-level and function-level (lazy) imports alike;
only imports under ``if TYPE_CHECKING:`` (never run) are left out. A cycle makes the import
order matter and hides which stage depends on which (ARCHITECTURE.md: data flows one way)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "otelbridge"


def module_name(path: Path) -> str:
    parts = ["otelbridge", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(tree: ast.AST):
    """Every import node not under ``if TYPE_CHECKING:``, at any depth."""
    todo = [tree]
    while todo:
        node = todo.pop()
        for child in ast.iter_child_nodes(node):
            if _type_checking_only(child):
                todo.extend(child.orelse)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child
            todo.append(child)


def import_graph() -> dict[str, set[str]]:
    """module → the package's modules it imports (``from .x import y``: ``x``, and ``x.y``
    when that is a module)."""
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                if node.level:
                    base = f"{base}.{node.module}" if node.module else base
                else:
                    base = node.module or ""
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            graph[name].update(t for t in targets if t in files and t != name)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path ``[a, b, ..., a]``, or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_scan_sees_lazy_imports_and_finds_a_cycle():
    graph = import_graph()
    # a function-level import is an edge: the tee's process forks the decoder lazily
    assert "otelbridge.modes.live" in graph["otelbridge.source.feed"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles():
    cycle = find_cycle(import_graph())
    assert cycle is None, " -> ".join(cycle)
