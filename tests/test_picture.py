"""Pictures: explain --plot, notebook views, the docs script."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import matplotlib.pyplot as plt

from dmlops import Device, DmlError
from dmlops.cli import main
from dmlops.ops import JoinDesc, Slice1Desc, SliceDesc, SplitDesc
from dmlops.picture import MAX_CELLS, draw, html_table, repr_html, svg
from dmlops.tensor import BufferTensorDesc, DataType
from dmlops.worked_examples import WORKED_EXAMPLES


def _t(*sizes: int, dt: DataType = DataType.FLOAT32) -> BufferTensorDesc:
    return BufferTensorDesc(dt, sizes)


def _texts(fig: object) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]  # type: ignore[attr-defined]


def test_negative_stride_cells_are_numbered_in_output_order() -> None:
    example = WORKED_EXAMPLES[3]  # SLICE1 strides {1,1,-2,2}: output [[14,16],[6,8]]
    fig = draw(example.desc, values=[example.make_input()])
    texts = _texts(fig)
    assert {"14\n#0", "16\n#1", "6\n#2", "8\n#3"} <= set(texts)
    assert [t for t in texts if t in ("14", "16", "6", "8")] == ["14", "16", "6", "8"]
    plt.close(fig)


def test_split_marks_each_output_and_join_colours_by_source() -> None:
    fig = draw(SplitDesc(_t(1, 1, 6, 2), [_t(1, 1, 2, 2), _t(1, 1, 4, 2)], 2))
    assert "4\n#0→1" in _texts(fig) and "0\n#0→0" in _texts(fig)
    assert len(fig.axes[0].lines) == 1  # one cut line
    plt.close(fig)
    fig = draw(JoinDesc([_t(2, 1), _t(2, 2)], _t(2, 3), 1))
    out = fig.axes[2]
    assert [t.get_text() for t in out.texts] == [
        "0\nin0",
        "0\nin1",
        "1\nin1",
        "1\nin0",
        "2\nin1",
        "3\nin1",
    ]
    colours = {p.get_facecolor() for p in out.patches}
    assert len(colours) == 2
    plt.close(fig)


def test_an_invalid_descriptor_is_drawn_with_its_rule() -> None:
    desc = Slice1Desc(_t(1, 4), _t(1, 2), [0, 2], [1, 3], [1, 1])
    fig = draw(desc)
    assert "INVALID: SLICE1.InputWindowOffsets[1] is 2" in fig._suptitle.get_text().replace(
        "\n", " "
    )
    plt.close(fig)


def test_leading_dimensions_are_capped_with_a_note() -> None:
    fig = draw(SliceDesc(_t(9, 2, 2), _t(9, 1, 2), [0, 0, 0], [9, 1, 2], [1, 1, 1]))
    assert any("5 more" in t for t in _texts(fig))
    plt.close(fig)


def test_large_tensors_get_a_scaled_summary() -> None:
    big = Slice1Desc(_t(1, 64, 64), _t(1, 16, 32), [0, 8, 0], [1, 32, 64], [1, 2, -2])
    assert big.input_tensor.element_count > MAX_CELLS
    fig = draw(big)
    assert not fig.axes[0].texts or all("#" not in t for t in _texts(fig))
    assert any("window strides [1, 2, -2]" in t for t in _texts(fig))
    plt.close(fig)
    html = repr_html(big)
    assert "<svg" not in html and "InputWindowStrides" in html and "VALID at" in html


def test_notebook_views_of_descriptors_operators_and_plans() -> None:
    desc = WORKED_EXAMPLES[2].desc
    assert desc._repr_html_().startswith("<div><svg") or "<svg" in desc._repr_html_()
    op = Device("4_1").create_operator(desc)
    html = op._repr_html_()
    assert "<svg" in html and "strided copy" in html and "<td>" in html
    bad = SliceDesc(_t(4), _t(2), [0], [2], [0])
    assert "INVALID at DML_FEATURE_LEVEL_6_4" in html_table(bad)
    assert "SLICE.Strides[0]" in bad._repr_html_()
    assert svg(bad).startswith("<svg")


def test_explain_plot_writes_png_and_svg(tmp_path: Path) -> None:
    for name in ("a.png", "a.svg"):
        buf = io.StringIO()
        args = ["explain", "slice1", "--input-sizes", "1,1,4,4", "--window-offsets", "0,0,0,1"]
        args += ["--window-sizes", "1,1,4,3", "--window-strides", "1,1,-2,2"]
        with contextlib.redirect_stdout(buf):
            assert main([*args, "--plot", str(tmp_path / name)]) == 0
        assert "picture written" in buf.getvalue()
    assert (tmp_path / "a.png").read_bytes()[:4] == b"\x89PNG"
    assert b"<svg" in (tmp_path / "a.svg").read_bytes()
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf), contextlib.redirect_stdout(buf):
        assert main([*args, "--plot", str(tmp_path / "a.txt")]) != 0
    assert ".png, .svg or .pdf" in buf.getvalue()


def test_the_docs_pictures_are_current(tmp_path: Path) -> None:
    docs = Path(__file__).parent.parent / "docs"
    names = sorted(p.name for p in (docs / "pictures").glob("*.png"))
    assert [n for n in names if n.startswith("example_")] == [
        f"example_{k}.png" for k in range(1, 7)
    ]
    text = (docs / "operators.md").read_text()
    for name in names:
        assert f"pictures/{name}" in text
    assert np.all([(docs / "pictures" / n).stat().st_size > 5000 for n in names])


def test_without_matplotlib_plot_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    buf = io.StringIO()
    args = ["explain", "slice", "--input-sizes", "4", "--offsets", "1", "--sizes", "2"]
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        assert main([*args, "--strides", "1", "--plot", str(tmp_path / "a.png")]) != 0
    assert "pip install 'dmlops[plot]'" in buf.getvalue()
    desc = SliceDesc(_t(4), _t(2), [1], [2], [1])
    assert "<svg" not in desc._repr_html_() and "VALID at" in desc._repr_html_()


def test_explain_plot_draws_an_invalid_descriptor_too(tmp_path: Path) -> None:
    buf = io.StringIO()
    args = ["explain", "slice", "--input-sizes", "4", "--offsets", "3", "--sizes", "2"]
    with contextlib.redirect_stdout(buf):
        assert main([*args, "--strides", "1", "--plot", str(tmp_path / "bad.png")]) == 1
    assert "INVALID" in buf.getvalue() and (tmp_path / "bad.png").stat().st_size > 1000


def test_indexed_operators_are_drawn_from_their_index_values(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from dmlops.cli import main

    path = tmp_path / "gather.png"
    args = ["explain", "gather", "--input-sizes", "4,3", "--indices-sizes", "1,2"]
    assert main([*args, "--indices", "3,-4", "--plot", str(path)]) == 0
    assert path.stat().st_size > 1000
    assert main([*args, "--plot", str(path)]) == 1  # no values: refused by name


def test_element_sources_of_indexed_operators_follow_the_values(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from dmlops.cli import main
    from dmlops.ops import OneHotDesc, ReverseSubsequencesDesc
    from dmlops.sources import element_sources

    args = ["explain", "scatter_nd", "--input-sizes", "4,2", "--indices-sizes", "2,1"]
    assert main([*args, "--indices", "3,0"]) == 0
    text = capsys.readouterr().out
    assert "Output[3,1] = Updates[0,1]" in text and "Output[0,0] = Updates[1,0]" in text
    assert "Output[1,0] = Input[1,0]" in text
    i32, f32 = DataType.INT32, DataType.FLOAT32
    hot = OneHotDesc(
        BufferTensorDesc(i32, (2, 1)),
        BufferTensorDesc(f32, (1, 2)),
        BufferTensorDesc(f32, (2, 3)),
        1,
    )
    found = element_sources(hot, {0: np.array([[2], [-1]])})
    assert found[(0, (0, 2))] == (1, (0, 1)) and found[(0, (0, 0))] == (1, (0, 0))
    assert found[(0, (1, 2))] == (1, (0, 1))  # -1: the last position
    rev = ReverseSubsequencesDesc(
        BufferTensorDesc(f32, (1, 1, 3, 2)),
        BufferTensorDesc(DataType.UINT32, (1, 1, 1, 2)),
        BufferTensorDesc(f32, (1, 1, 3, 2)),
        2,
    )
    found = element_sources(rev, {1: np.array([3, 1]).reshape(1, 1, 1, 2)})
    assert found[(0, (0, 0, 0, 0))] == (0, (0, 0, 2, 0))
    assert found[(0, (0, 0, 0, 1))] == (0, (0, 0, 0, 1))
    with pytest.raises(DmlError, match="depends on the values of its IndicesTensor"):
        element_sources(hot)
