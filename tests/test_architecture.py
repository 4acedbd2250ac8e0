"""The layering holds: no dmlops module imports, directly or through others (lazy imports
inside functions included), a module that imports it back."""

from __future__ import annotations

import ast
from pathlib import Path

import dmlops

ROOT = Path(dmlops.__file__).parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
            # `from . import x` of a module x imports x, not its package's other names
            found.update(subs if len(subs) == len(node.names) else [target, *subs])
    return {m for m in found if m in modules and m != name}


def import_cycles() -> list[list[str]]:
    """Each set of modules that import one another (strongly connected, more than one)."""
    modules = _modules()
    edges = {m: _imports(m, p, modules) for m, p in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                cycles.append(sorted(part))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return cycles


def test_no_import_circles() -> None:
    assert import_cycles() == []


def test_the_cycle_finder_finds_a_cycle(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    pkg = tmp_path / "dmlops"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from . import b\n")
    (pkg / "b.py").write_text("from .a import f\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", pkg)
    assert import_cycles() == [["dmlops.a", "dmlops.b"]]


def test_moved_modules_keep_their_old_names() -> None:
    """`dmlops.torch_block` and the torch wing's other old names import the module at its
    new place, the same object; no module file remains at the old place."""
    import importlib

    from dmlops._moved import MOVED

    for old, new in MOVED.items():
        assert not (ROOT / f"{old.split('.')[-1]}.py").exists(), old
        if importlib.util.find_spec("torch") is None:  # (the wing imports torch)
            continue
        assert importlib.import_module(old) is importlib.import_module(new)
    assert not list(ROOT.glob("torch_*.py"))
