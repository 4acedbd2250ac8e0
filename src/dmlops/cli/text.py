"""Descriptors and their element mappings as text (what `dmlops explain` prints), and the
command line's argument readers."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ops import (
    OperatorDesc,
)
from ..sources import element_sources
from ..tensor import BufferTensorDesc

_MAPPING_LIMIT = 256


def format_tensor(name: str, desc: BufferTensorDesc, values: np.ndarray | None = None) -> str:
    """A tensor as the DirectML reference pages print it."""
    head = f"{name}: (Sizes:{{{', '.join(map(str, desc.sizes))}}}, DataType:{desc.data_type.name})"
    if values is None:
        return head
    v = values
    if v.dtype.kind == "f" and np.all(np.isfinite(v)) and np.all(v == np.round(v)):
        v = v.astype(np.int64)
    return head + "\n" + np.array2string(v, separator=", ")


def _braces(values: Sequence[int]) -> str:
    return "{" + ", ".join(map(str, values)) + "}"


def format_desc(desc: OperatorDesc) -> str:
    """The descriptor's own fields (not its tensors), as the reference pages write them."""
    lines = []
    for name, value in desc._field_items():
        if isinstance(value, (BufferTensorDesc, list)) and (
            isinstance(value, BufferTensorDesc)
            or (value and isinstance(value[0], BufferTensorDesc))
        ):
            continue
        shown = _braces(value) if isinstance(value, list) else str(value)
        lines.append(f"{name} = {shown}")
    return "\n".join(lines)


def element_mapping(desc: OperatorDesc, indices: dict[int, Any] | None = None) -> list[str]:
    """'Output[c] = Input[i]' lines for every output element written (an indexed operator's
    from its index values, `indices[k]` for its index input k)."""
    ins = [n.removesuffix("Tensor") for n, _ in desc.input_fields()]
    outs = [n.removesuffix("Tensor") for n, _ in desc.output_fields()]
    lines = []
    for (o, dst), (i, src) in element_sources(desc, indices).items():
        where = f"{outs[o]}[{','.join(map(str, dst))}]"
        what = desc.fill_text(i, src) if i < 0 else f"{ins[i]}[{','.join(map(str, src))}]"
        lines.append(f"{where} = {what}")
    return sorted(lines, key=lambda s: s.split(" = ")[0])


def _ints(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip() != ""]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of integers"
        ) from None


def _floats(text: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip() != ""]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of numbers"
        ) from None


def _pair(text: str) -> tuple[int, int]:
    values = _ints(text)
    if len(values) != 2:
        raise argparse.ArgumentTypeError(f"{text!r} is not two comma-separated integers")
    return values[0], values[1]
