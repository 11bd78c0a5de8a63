"""The house's rules, checked on the source: imports point one way, and nobody reaches for private names.

Every ``import`` counts (at the top of a module or inside a function), except under
``if TYPE_CHECKING:``. A cycle is reported with its modules, so the test says where to cut.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("agent", "pipeline", "profiles", "schemas", "skills", "ui")
#: Layers, top to bottom: a module may import its own layer's or lower layers' modules only.
LAYERS = [("app", "ui"), ("agent",), ("profiles", "schemas", "skills"), ("pipeline",)]


def project_modules() -> dict[str, Path]:
    out = {"app": REPO / "app.py"}
    for pkg in PACKAGES:
        for path in (REPO / pkg).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """(module, names, is_from) of every import outside ``if TYPE_CHECKING:`` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], False
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, [a.name for a in node.names], True
        stack.extend(ast.iter_child_nodes(node))


def import_graph() -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """Module -> the project modules it imports; and (importer, module, name) of private names imported."""
    modules = project_modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    private = []
    for name, path in modules.items():
        for module, names, is_from in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            targets = [f"{module}.{n}" for n in names if f"{module}.{n}" in modules] if is_from else []
            if module in modules:
                targets.append(module)
            graph[name].update(t for t in targets if t != name)
            if module in modules:
                private += [(name, module, n) for n in names if n.startswith("_") and not n.startswith("__")]
    return graph, private


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _layer(module: str) -> int:
    top = module.split(".")[0]
    return next(i for i, names in enumerate(LAYERS) if top in names)


def test_no_import_cycles_among_project_modules():
    found = cycles(import_graph()[0])
    assert found == [], "import cycles (cut one edge of each):\n" + "\n".join(" <-> ".join(c) for c in found)


def test_imports_point_down_the_layers():
    graph, _ = import_graph()
    upward = [f"{a} -> {b}" for a, targets in graph.items() for b in targets if _layer(b) < _layer(a)]
    assert upward == [], "imports that point up (app/ui -> agent -> profiles/schemas/skills -> pipeline):\n" + \
        "\n".join(sorted(upward))


def test_no_module_imports_another_modules_private_names():
    _, private = import_graph()
    assert private == [], "\n".join(f"{a} imports {n} from {b}" for a, b, n in sorted(private))


def test_the_cycle_finder_finds_a_cycle():
    """The checker itself can fail: a two-module loop and a three-module loop are found, a chain is not."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": set()}) == [["a", "b"]]
    assert cycles({"x": {"y"}, "y": {"z"}, "z": {"x"}}) == [["x", "y", "z"]]
