"""Pictures of what an operator does: grids of cells for small tensors, scaled boxes for large.

Each input and output tensor is drawn as grids of its last two dimensions (leading
dimensions as small multiples, at most `MAX_PANELS` per tensor). Input cells show the
element's logical index; a copied input cell is coloured by the output it goes to and
numbered in that output's order (so negative strides read backwards); an output cell
shows the input index it receives and is coloured by its source input. SLICE and SLICE1
windows are outlined, SPLIT and JOIN pieces separated by thick cut lines. An invalid
descriptor is drawn from its fields with the rule it breaks as the title.
Needs matplotlib (`pip install 'dmlops[plot]'`).
"""

from __future__ import annotations

import html
import io
import itertools
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import DmlError
from .ops import JoinDesc, OperatorDesc, SliceDesc, SliceGradDesc, SplitDesc
from .ops._base import set_html_view
from .ops.slice1 import WindowDesc
from .sources import element_sources
from .tensor import BufferTensorDesc, FeatureLevel

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["draw", "svg", "html_table", "repr_html", "MAX_CELLS", "MAX_PANELS"]

MAX_CELLS = 2048  # more cells than this in all tensors together: a scaled summary instead
MAX_PANELS = 4  # leading-dimension slices drawn per tensor
_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948")
_INSTALL = "pictures need matplotlib: pip install 'dmlops[plot]'"


_FILL_FACE = "#e8e8e8"  # cells an operator sets to a constant


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise DmlError(_INSTALL) from e
    return plt


def _verdict(desc: OperatorDesc, level: FeatureLevel) -> str | None:
    try:
        desc.validate(level)
    except DmlError as e:
        return str(e)
    return None


def _grid(sizes: Sequence[int]) -> tuple[list[tuple[int, ...]], int, int]:
    """Leading-dimension slices, rows and columns of a tensor's picture."""
    if len(sizes) == 1:
        return [()], 1, sizes[0]
    leading = list(itertools.islice(np.ndindex(*sizes[:-2]), MAX_PANELS + 1))
    return [tuple(int(i) for i in t) for t in leading], sizes[-2], sizes[-1]


def _coord(lead: tuple[int, ...], r: int, c: int, rank: int) -> tuple[int, ...]:
    return (c,) if rank == 1 else (*lead, r, c)


def _flat(sizes: Sequence[int], coord: tuple[int, ...]) -> int:
    return int(np.ravel_multi_index(coord, tuple(sizes)))


def _window(desc: OperatorDesc) -> tuple[list[int], list[int]] | None:
    """Offsets and sizes of the read window of SLICE / SLICE1 (input coordinates)."""
    if isinstance(desc, WindowDesc):  # SLICE1; SLICE_GRAD's window is in its output
        return list(desc.input_window_offsets), list(desc.input_window_sizes)
    if isinstance(desc, SliceDesc):
        spans = [1 + (n - 1) * max(s, 0) for n, s in zip(desc.sizes, desc.strides, strict=True)]
        return list(desc.offsets), spans
    return None


def _cuts(desc: OperatorDesc) -> tuple[int, list[int]] | None:
    """Axis and boundaries of SPLIT's outputs in its input / JOIN's inputs in its output."""
    if isinstance(desc, SplitDesc):
        pieces = [t.sizes[desc.axis] for t in desc.output_tensors]
    elif isinstance(desc, JoinDesc):
        pieces = [t.sizes[desc.axis] for t in desc.input_tensors]
    else:
        return None
    return desc.axis, list(itertools.accumulate(pieces))[:-1]


def _small(desc: OperatorDesc) -> bool:
    tensors = [t for _, t in desc.input_fields() + desc.output_fields()]
    return sum(t.element_count for t in tensors) <= MAX_CELLS and all(
        len(t.sizes) >= 1 for t in tensors
    )


def _title(desc: OperatorDesc, level: FeatureLevel, error: str | None) -> str:
    head = f"{desc.operator_type.removeprefix('DML_OPERATOR_')} at {level.dml_name}"
    fields = "  ".join(
        f"{key} {{{', '.join(map(str, value))}}}" if isinstance(value, (list, tuple)) else
        f"{key} {value}"
        for key, value in desc._field_items()
        if not isinstance(value, BufferTensorDesc)
        and not (isinstance(value, list) and value and isinstance(value[0], BufferTensorDesc))
    )  # fmt: skip
    head = f"{head}\n{fields}" if fields else head
    return f"{head}\nINVALID: {error}" if error else head


def draw(
    desc: OperatorDesc,
    path: str | Path | None = None,
    feature_level: FeatureLevel | int | str | None = None,
    values: Sequence[np.ndarray[Any, Any]] | None = None,
) -> Figure:
    """A matplotlib Figure of the operator; saved to path (PNG, SVG, PDF by extension) if given.

    Cells show the logical element index, or the element of `values` (one array per input,
    shaped as the input tensor) when given; an indexed operator is drawn from the values of
    its index input (which source element lands where) and needs them.
    """
    plt = _pyplot()
    level = FeatureLevel.parse(feature_level)
    error = _verdict(desc, level)
    inputs = [t for _, t in desc.input_fields()]
    outputs = [t for _, t in desc.output_fields()]
    if _small(desc):
        fig = _draw_cells(plt, desc, inputs, outputs, error, values)
    else:
        fig = _draw_summary(plt, desc, inputs, outputs)
    width = max(40, int(fig.get_figwidth() * 11))
    title = "\n".join(
        textwrap.fill(line, width) for line in _title(desc, level, error).splitlines()
    )
    lines = title.count("\n") + 1
    fig.suptitle(title, color="#b00020" if error else "black", fontsize=10)
    fig.subplots_adjust(top=max(0.25, 1 - (0.2 * lines + 0.6) / fig.get_figheight()))
    if path is not None:
        fig.savefig(str(path), bbox_inches="tight", dpi=130)
    return fig


def _draw_cells(
    plt: Any,
    desc: OperatorDesc,
    inputs: list[BufferTensorDesc],
    outputs: list[BufferTensorDesc],
    error: str | None,
    values: Sequence[np.ndarray[Any, Any]] | None,
) -> Figure:
    def shown(k: int, coord: tuple[int, ...]) -> str:
        if values is None:
            return str(_flat(inputs[k].sizes, coord))
        v = np.asarray(values[k]).reshape(inputs[k].sizes)[coord]
        return f"{v:g}" if isinstance(v, np.floating) else str(v)

    known = {} if values is None else dict(enumerate(values))
    try:
        mapping = {} if error else element_sources(desc, known)
    except (DmlError, IndexError, ValueError):
        mapping = {}
    order: dict[tuple[int, tuple[int, ...]], tuple[int, int]] = {}
    for (o, oc), (i, ic) in mapping.items():
        if i >= 0:
            order[(i, ic)] = (o, _flat(outputs[o].sizes, oc))
    windowed = "output" if isinstance(desc, SliceGradDesc) else "input"
    many = len(outputs) > 1
    tensors = [("input", k, t) for k, t in enumerate(inputs)]
    tensors += [("output", k, t) for k, t in enumerate(outputs)]
    columns = []
    for role, k, t in tensors:
        leads, rows, cols = _grid(t.sizes)
        columns.append((role, k, t, leads, rows, cols))
    width = sum(max(2.0, 0.45 * c[5] + 0.8) for c in columns)
    height = max(min(len(c[3]), MAX_PANELS) * (0.45 * c[4] + 0.7) for c in columns) + 1.2
    fig = plt.figure(figsize=(min(width, 24), min(height, 20)))
    ratios = [max(2.0, 0.45 * c[5] + 0.8) for c in columns]
    grid = fig.add_gridspec(1, len(columns), width_ratios=ratios)
    window = _window(desc)
    cuts = _cuts(desc)
    for slot, (role, k, t, leads, rows, cols) in enumerate(columns):
        ax = fig.add_subplot(grid[0, slot])
        ax.set_aspect("equal")
        ax.axis("off")
        name = desc.input_fields()[k][0] if role == "input" else desc.output_fields()[k][0]
        ax.set_title(f"{name}\n{list(t.sizes)} {t.data_type.name}", fontsize=8)
        panels = leads[:MAX_PANELS]
        y0 = 0.0
        for lead in panels:
            if lead:
                label = f"[{', '.join(map(str, lead))}, :, :]"
                ax.text(0, -y0 + 0.15, label, fontsize=6, va="bottom")
            rank = len(t.sizes)
            for r in range(rows):
                for c in range(cols):
                    coord = _coord(lead, r, c, rank)
                    x, y = c, -(y0 + r + 1)
                    face, label = "white", ""
                    if role == "input":
                        hit = order.get((k, coord))
                        label = shown(k, coord)
                        if hit is not None:
                            face = _COLOURS[hit[0] % len(_COLOURS)]
                            label += f"\n#{hit[1]}" + (f"→{hit[0]}" if many else "")
                    else:
                        src = mapping.get((k, coord))
                        if src is not None and src[0] < 0:
                            face, label = _FILL_FACE, desc.fill_text(src[0], src[1])
                        elif src is not None:
                            face = _COLOURS[(src[0] if len(inputs) > 1 else k) % len(_COLOURS)]
                            label = shown(src[0], src[1])
                            if len(inputs) > 1:
                                label += f"\nin{src[0]}"
                    ax.add_patch(
                        plt.Rectangle((x, y), 1, 1, facecolor=face, edgecolor="#555", lw=0.5)
                    )
                    ax.text(
                        x + 0.5, y + 0.5, label, ha="center", va="center", fontsize=6,
                        color="#333" if face in ("white", _FILL_FACE) else "white",
                    )  # fmt: skip
            if role == windowed and window is not None and not (k and window):
                _outline(plt, ax, window, lead, rank, y0, rows, cols, bool(error))
            if cuts is not None:
                axis, bounds = cuts
                if (role == "input") == isinstance(desc, SplitDesc):
                    _cut_lines(ax, t.sizes, axis, bounds, y0, rows, cols)
            y0 += rows + 1.0
        if len(leads) > MAX_PANELS:
            more = int(np.prod(t.sizes[:-2])) - MAX_PANELS
            ax.text(0, -y0, f"… {more} more [{', '.join(':' * 1 for _ in t.sizes[:-2])}]"
                    " slices not drawn", fontsize=6, color="#b00020")  # fmt: skip
        ax.set_xlim(-0.5, cols + 1.5)
        ax.set_ylim(-(y0 + 1), 1.0)
    return fig  # type: ignore[no-any-return]


def _outline(
    plt: Any,
    ax: Any,
    window: tuple[list[int], list[int]],
    lead: tuple[int, ...],
    rank: int,
    y0: float,
    rows: int,
    cols: int,
    invalid: bool,
) -> None:
    offsets, spans = window
    if rank >= 3:
        inside = all(o <= i < o + s for i, o, s in zip(lead, offsets[:-2], spans[:-2], strict=True))
        if not inside:
            return
    r0, h = (0, 1) if rank == 1 else (offsets[-2], spans[-2])
    c0, w = offsets[-1], spans[-1]
    colour = "#b00020" if invalid else "black"
    ax.add_patch(
        plt.Rectangle(
            (c0, -(y0 + r0 + h)), w, h, fill=False, edgecolor=colour, lw=2.0, linestyle="--"
        )
    )
    ax.set_xlim(-0.5, max(cols, c0 + w) + 0.5)


def _cut_lines(
    ax: Any, sizes: Sequence[int], axis: int, bounds: list[int], y0: float, rows: int, cols: int
) -> None:
    rank = len(sizes)
    for b in bounds:
        if axis == rank - 1:
            ax.plot([b, b], [-y0, -(y0 + rows)], color="black", lw=2.5)
        elif rank >= 2 and axis == rank - 2:
            ax.plot([0, cols], [-(y0 + b), -(y0 + b)], color="black", lw=2.5)


def _draw_summary(
    plt: Any, desc: OperatorDesc, inputs: list[BufferTensorDesc], outputs: list[BufferTensorDesc]
) -> Figure:
    """Boxes scaled by the last two dimensions, windows and cuts drawn, strides written."""
    fields = desc.input_fields() + desc.output_fields()
    fig, axes = plt.subplots(1, len(fields), figsize=(3.2 * len(fields), 4.6), squeeze=False)
    scale = max(max(t.sizes[-1], t.sizes[-2] if len(t.sizes) > 1 else 1) for _, t in fields)
    window = _window(desc)
    cuts = _cuts(desc)
    for slot, (name, t) in enumerate(fields):
        ax = axes[0][slot]
        ax.set_aspect("equal")
        ax.axis("off")
        h = t.sizes[-2] if len(t.sizes) > 1 else 1
        w = t.sizes[-1]
        is_input = slot < len(inputs)
        colour = _COLOURS[(slot if is_input else slot - len(inputs)) % len(_COLOURS)]
        ax.add_patch(plt.Rectangle((0, -h), w, h, facecolor=colour, alpha=0.35, edgecolor="k"))
        lines = [name, f"Sizes {list(t.sizes)}", t.data_type.name]
        if t.strides is not None:
            lines.append(f"Strides {list(t.strides)}")
        ax.set_title("\n".join(lines), fontsize=7)
        windowed = (slot == len(inputs)) if isinstance(desc, SliceGradDesc) else slot == 0
        if window is not None and windowed:
            offsets, spans = window
            r0, hh = (0, 1) if len(t.sizes) == 1 else (offsets[-2], spans[-2])
            ax.add_patch(
                plt.Rectangle(
                    (offsets[-1], -(r0 + hh)), spans[-1], hh, fill=False, lw=2, linestyle="--"
                )
            )
            ax.text(0, -h - scale * 0.08, _steps_text(desc), fontsize=7, va="top")
        if cuts is not None and is_input == isinstance(desc, SplitDesc):
            _cut_lines(ax, t.sizes, cuts[0], cuts[1], 0.0, h, w)
            if cuts[0] < len(t.sizes) - 2:
                ax.text(0, -h - scale * 0.08, f"cut along axis {cuts[0]}", fontsize=7, va="top")
        ax.set_xlim(-scale * 0.05, scale * 1.05)
        ax.set_ylim(-scale * 1.25, scale * 0.05)
    return fig  # type: ignore[no-any-return]


def _steps_text(desc: OperatorDesc) -> str:
    if isinstance(desc, WindowDesc):
        return f"window strides {list(desc.input_window_strides)}"
    if isinstance(desc, SliceDesc):
        return f"strides {list(desc.strides)}"
    return ""


def svg(desc: OperatorDesc, feature_level: FeatureLevel | int | str | None = None) -> str:
    """The picture as SVG text."""
    plt = _pyplot()
    fig = draw(desc, None, feature_level)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.find("<svg") :]


def html_table(desc: OperatorDesc, feature_level: FeatureLevel | int | str | None = None) -> str:
    """A compact table of the descriptor's fields (DirectML names) and its verdict."""
    level = FeatureLevel.parse(feature_level)
    error = _verdict(desc, level)
    rows = []
    for key, value in desc._field_items():
        if isinstance(value, BufferTensorDesc):
            text = f"{value.data_type.name} Sizes {list(value.sizes)}"
            if value.strides is not None:
                text += f" Strides {list(value.strides)}"
        elif isinstance(value, list) and value and isinstance(value[0], BufferTensorDesc):
            text = "; ".join(f"{v.data_type.name} {list(v.sizes)}" for v in value)
        else:
            text = str(list(value) if isinstance(value, tuple) else value)
        rows.append(
            f"<tr><td><code>{html.escape(key)}</code></td><td>{html.escape(text)}</td></tr>"
        )
    verdict = (
        f"<b style='color:#b00020'>INVALID at {level.dml_name}</b>: {html.escape(error)}"
        if error
        else f"<b>VALID at {level.dml_name}</b>"
    )
    return f"<div><b>{desc.operator_type}</b> — {verdict}<table>{''.join(rows)}</table></div>"


def repr_html(desc: OperatorDesc, feature_level: FeatureLevel | int | str | None = None) -> str:
    """Notebook view: the picture for small tensors (when matplotlib is there), else the table."""
    table = html_table(desc, feature_level)
    if not _small(desc):
        return table
    try:
        return f"<div>{svg(desc, feature_level)}</div>{table}"
    except DmlError:  # no matplotlib
        return table


set_html_view(repr_html)
