"""The documentation: generated operator pages current, every page in the site's navigation,
and the getting-started code runs as written."""

from __future__ import annotations

import re
import sys
from pathlib import Path

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


def test_concepts_code_runs_and_prints_what_it_says() -> None:
    import contextlib
    import io

    for block in _python_blocks(DOCS / "concepts.md")[:2]:
        printed = io.StringIO()
        namespace: dict[str, object] = {}
        with contextlib.redirect_stdout(printed):
            exec(compile(block, "concepts.md", "exec"), namespace)
        for line in (ln for ln in block.splitlines() if ln.startswith("# ")):
            assert line[2:] in printed.getvalue()
        if "t" in namespace:
            assert namespace["t"].total_tensor_size_in_bytes == 56  # type: ignore[attr-defined]
