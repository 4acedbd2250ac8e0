"""The documentation: generated operator pages current, every page in the site's navigation,
and the getting-started code runs as written."""

from __future__ import annotations

import contextlib
import doctest
import importlib
import importlib.util
import io
import re
import sys
from pathlib import Path

import pytest

from conftest import HAS_CUDA, HAS_WEBGPU

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_generated_operator_pages_are_current() -> None:
    sys.path.insert(0, str(DOCS))
    try:
        import gen_operator_pages
    finally:
        sys.path.remove(str(DOCS))
    for path, text in gen_operator_pages.render().items():
        assert path.read_text() == text, f"run python docs/gen_operator_pages.py ({path.name})"


def test_every_page_is_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    listed = set(re.findall(r":\s+([\w/.-]+\.md)\s*$", nav, re.MULTILINE))
    assert pages == listed


def _python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.DOTALL)


def test_getting_started_code_runs() -> None:
    blocks = _python_blocks(DOCS / "getting-started.md")
    assert blocks
    namespace: dict[str, object] = {}
    exec(compile(blocks[0], "getting-started.md", "exec"), namespace)
    out = namespace["out"]
    assert out.tolist() == [[[[2.0, 4.0], [10.0, 12.0]]]]  # type: ignore[attr-defined]


PAGES = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if _python_blocks(p))
OPTIONAL = {"cupy", "torch", "dask", "onnx", "wgpu", "jax", "matplotlib"}


def _why_it_cannot_run(block: str) -> str | None:
    """Why this machine cannot run an example (a missing extra or device), or None."""
    for module in re.findall(r"^\s*(?:import|from)\s+(\w+)", block, re.MULTILINE):
        if module in OPTIONAL and importlib.util.find_spec(module) is None:
            return f"needs {module}"
    if "import cupy" in block and not HAS_CUDA:
        return "needs a CUDA GPU"
    if ("webgpu" in block) and not HAS_WEBGPU:
        return "needs a WebGPU adapter"
    return None


def test_every_page_with_code_is_checked() -> None:
    assert {"getting-started.md", "guides/onnx.md", "guides/gpu.md", "operators/slice1.md"} <= set(
        PAGES
    )


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_run_and_print_what_they_say(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each example runs as written (in an empty folder, for the files it writes); a comment on
    a print call's line, or the comment lines right after it, state what it prints."""
    monkeypatch.chdir(tmp_path)
    blocks = _python_blocks(DOCS / page)
    reasons = [_why_it_cannot_run(block) for block in blocks]
    if all(reasons):
        pytest.skip(", ".join(sorted({r for r in reasons if r})))
    for block, reason in zip(blocks, reasons):
        if reason:
            continue
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(block, page, "exec"), {})
        said: list[str] = []
        after_print = False
        for line in block.splitlines():
            if line.startswith("print(") and "# " in line:  # what it prints, then notes
                said.append(line.split("# ", 1)[1].split(" (")[0])
            elif line.startswith("# ") and after_print:
                said.append(line[2:])
                continue
            after_print = line.startswith("print(")
        for text in said:
            assert text in printed.getvalue(), text


DOCTEST_MODULES = ["dmlops.functional", "dmlops.webnn", "dmlops.dask.moves", "dmlops.torch.block"]


@pytest.mark.parametrize("module_name", DOCTEST_MODULES)
def test_docstring_examples_run(module_name: str) -> None:
    if module_name.startswith("dmlops.dask"):
        pytest.importorskip("dask")
    if module_name == "dmlops.torch.block":
        pytest.importorskip("torch")
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = [t for t in finder.find(module) if t.examples]
    assert tests, f"{module_name} has no docstring examples"
    for test in tests:
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_every_functional_operator_has_a_docstring_example() -> None:
    import dmlops.functional as functional

    operators = ["slice", "slice1", "slice_grad", "split", "join", "tile", "padding"]
    operators += ["depth_to_space", "space_to_depth"]
    for name in operators:
        assert ">>> " in (getattr(functional, name).__doc__ or ""), name
