"""No module-level import cycle inside the serde, inbox, cli and testing packages.

tests/test_architecture.py checks the direction between packages; this checks the
modules inside these four. ``from pausepoint.serde import messages`` runs the
package's ``__init__`` first, so it counts as importing ``pausepoint.serde`` (that is
how ``serde/registry`` and ``serde/__init__`` used to import each other). Imports
inside functions and under ``if TYPE_CHECKING:`` do not run at import time: skipped.
"""

from __future__ import annotations

import ast
import pathlib

import pausepoint

PACKAGE = pathlib.Path(pausepoint.__file__).parent
CHECKED = ("serde", "inbox", "cli", "testing")


def _module_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is imported (not in functions, not TYPE_CHECKING)."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
            stack.extend([*node.body, *node.orelse])
        elif isinstance(node, ast.If):
            stack.extend(node.orelse)
        elif isinstance(node, ast.Try):
            stack.extend([*node.body, *node.orelse, *node.finalbody])
            stack.extend(s for h in node.handlers for s in h.body)
    return found


def module_edges(package: str, root: pathlib.Path = PACKAGE) -> dict[str, set[str]]:
    """``{module: modules of the same package it imports at module level}``.

    Module names are relative to the package; ``__init__`` is the package itself.
    """
    base = f"{root.name}.{package}"
    folder = root / package
    names = {p.stem for p in folder.glob("*.py")}
    edges: dict[str, set[str]] = {name: set() for name in names}
    for name in names:
        tree = ast.parse((folder / f"{name}.py").read_text(encoding="utf-8"))
        for node in _module_level_imports(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif node.module == base:  # from the package: its __init__, and submodules
                targets = [base, *(f"{base}.{a.name}" for a in node.names)]
            else:
                targets = [node.module or ""]
            for target in targets:
                if target == base:
                    edges[name].add("__init__")
                elif target.startswith(f"{base}.") and target[len(base) + 1 :] in names:
                    edges[name].add(target[len(base) + 1 :])
        edges[name].discard(name)
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str]:
    """One cycle as the modules along it (first repeated at the end), or ``[]``."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return []

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_no_module_cycle_inside_these_packages():
    cycles = {p: c for p in CHECKED if (c := find_cycle(module_edges(p)))}
    assert cycles == {}


def test_the_check_sees_a_cycle_through_the_package_init(tmp_path):
    root = tmp_path / "pausepoint"
    (root / "serde").mkdir(parents=True)
    files = {
        "__init__.py": "from pausepoint.serde.registry import TypeRegistry\n",
        "registry.py": "from pausepoint.serde import messages\n",
        "messages.py": "if TYPE_CHECKING:\n    from pausepoint.serde import registry\n",
    }
    for name, text in files.items():
        (root / "serde" / name).write_text(text)
    edges = module_edges("serde", root)
    assert edges == {
        "__init__": {"registry"},
        "registry": {"__init__", "messages"},
        "messages": set(),
    }
    assert find_cycle(edges) == ["__init__", "registry", "__init__"]
    (root / "serde" / "registry.py").write_text("from pausepoint.serde.messages import x\n")
    assert find_cycle(module_edges("serde", root)) == []
