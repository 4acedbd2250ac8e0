"""The documentation: generated operator pages current, every page in the site's navigation,
and the getting-started code runs as written."""

from __future__ import annotations

import contextlib
import io
import re
import sys
from pathlib import Path

import pytest

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


# pages whose every Python example runs on the CPU with what the core and test extras give
RUNNABLE = [
    "getting-started.md",
    "concepts.md",
    "guides/graphs.md",
    "guides/webnn.md",
    "operators/slice-grad.md",
    "operators/tile-padding.md",
    "operators/depth-space.md",
]


@pytest.mark.parametrize("page", RUNNABLE)
def test_page_examples_run_and_print_what_they_say(page: str) -> None:
    """Each example runs as written; a comment on a print call's line, or the comment lines
    right after it, state what it prints."""
    blocks = _python_blocks(DOCS / page)
    assert blocks
    for block in blocks:
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
