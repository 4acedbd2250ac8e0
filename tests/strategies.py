"""Hypothesis strategies for DirectML descriptors and tensor layouts."""

from __future__ import annotations

import math

from hypothesis import strategies as st

from dmlops import BufferTensorDesc, DataType
from dmlops.tensor import packed_strides

DATA_TYPES = [t for t in DataType if t is not DataType.UNKNOWN]
MAX_ELEMENTS = 400


@st.composite
def shapes(draw, min_rank: int = 1, max_rank: int = 8, max_size: int = 5):  # type: ignore[no-untyped-def]
    rank = draw(st.integers(min_rank, max_rank))
    sizes = []
    budget = MAX_ELEMENTS
    for _ in range(rank):
        n = draw(st.integers(1, max(1, min(max_size, budget))))
        budget = max(1, budget // n)
        sizes.append(n)
    return sizes


@st.composite
def layouts(draw, sizes, output: bool):  # type: ignore[no-untyped-def]
    """Strides for `sizes`: packed (None), padded, permuted or (inputs only) broadcast."""
    kinds = ["packed", "padded", "permuted"] + ([] if output else ["broadcast"])
    kind = draw(st.sampled_from(kinds))
    n = len(sizes)
    if kind == "packed":
        return None
    if kind == "padded":
        strides = [0] * n
        s = draw(st.integers(1, 2))
        for i in range(n - 1, -1, -1):
            strides[i] = s
            s *= sizes[i] + draw(st.integers(0, 2))
        return strides
    if kind == "permuted":
        perm = draw(st.permutations(range(n)))
        permuted_sizes = [sizes[p] for p in perm]
        ps = packed_strides(permuted_sizes)
        strides = [0] * n
        for pos, p in enumerate(perm):
            strides[p] = ps[pos]
        return strides
    strides = list(packed_strides(sizes))
    for i in range(n):
        if draw(st.booleans()):
            strides[i] = 0
    return strides


@st.composite
def tensor(draw, data_type, sizes, output: bool = False):  # type: ignore[no-untyped-def]
    strides = draw(layouts(sizes, output))
    base = BufferTensorDesc(data_type, sizes, strides)
    extra = 4 * draw(st.integers(0, 3))
    return BufferTensorDesc(data_type, sizes, strides, base.total_tensor_size_in_bytes + extra)


def _budget_ok(sizes) -> bool:  # type: ignore[no-untyped-def]
    return math.prod(sizes) <= MAX_ELEMENTS


def packed(*sizes: int, dt: DataType = DataType.FLOAT32) -> BufferTensorDesc:
    """A packed tensor desc of these sizes (FLOAT32 unless `dt` says otherwise)."""
    return BufferTensorDesc(dt, list(sizes))


def unary_model(kind: str, desc: dict, data_type: str, inputs: int, outputs: int) -> dict:  # type: ignore[type-arg]
    """A DxDispatch model of one InputTensor/OutputTensor operator: input 'in' holds 1, 2, 3,
    ...; output 'out' starts as zeros; one dispatch, then a print of 'out'."""
    return {
        "resources": {
            "in": {
                "initialValuesDataType": data_type,
                "initialValues": {"valueCount": inputs, "valueStart": 1, "valueDelta": 1},
            },
            "out": {
                "initialValuesDataType": data_type,
                "initialValues": {"valueCount": outputs, "value": 0},
            },
        },
        "dispatchables": {"op": {"type": kind, "desc": desc}},
        "commands": [
            {
                "type": "dispatch",
                "dispatchable": "op",
                "bindings": {"InputTensor": "in", "OutputTensor": "out"},
            },
            {"type": "print", "resource": "out"},
        ],
    }
