"""GATHER, GATHER_ELEMENTS, GATHER_ND(1), SCATTER_ELEMENTS, SCATTER_ND and ONE_HOT: the pages'
examples, every rule, out-of-range indices, last-write-wins scatters, in-place scatters, and
property tests against naive element-by-element references, on every backend that runs them."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlops
from conftest import (
    HAS_CUDA,
    NUMPY_COMPILED,
    NUMPY_VECTORISED,
    WEBGPU,
    backend_name,
    to_device,
    to_host,
)
from dmlops import BufferTensorDesc as T
from dmlops import DataType as D
from dmlops.errors import (
    IndexOutOfRangeError,
    InvalidDescriptorError,
    UnsupportedFeatureLevelError,
)
from dmlops.ops import (
    GatherDesc,
    GatherElementsDesc,
    GatherNd1Desc,
    GatherNdDesc,
    OneHotDesc,
    ScatterElementsDesc,
    ScatterNdDesc,
)

INDEXED_BACKENDS = [
    "numpy",
    NUMPY_COMPILED,
    NUMPY_VECTORISED,
    pytest.param(
        "cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")]
    ),
    WEBGPU,
]

# -- naive references, from the pages' pseudo-code and ONNX's definitions ---------------


def ref_gather(x, idx, axis):  # type: ignore[no-untyped-def]
    shape = x.shape[:axis] + idx.shape + x.shape[axis + 1 :]
    out = np.empty(shape, x.dtype)
    for c in itertools.product(*(range(n) for n in shape)):
        a, j, b = c[:axis], c[axis : axis + idx.ndim], c[axis + idx.ndim :]
        k = int(idx[j])
        if k < 0:
            k += x.shape[axis]
        out[c] = x[(*a, k, *b)]
    return out


def ref_gather_elements(x, idx, axis):  # type: ignore[no-untyped-def]
    out = np.empty(idx.shape, x.dtype)
    for c in itertools.product(*(range(n) for n in idx.shape)):
        k = int(idx[c])
        if k < 0:
            k += x.shape[axis]
        src = list(c)
        src[axis] = k
        out[c] = x[tuple(src)]
    return out


def ref_gather_nd(x, idx, b):  # type: ignore[no-untyped-def]
    k = idx.shape[-1]
    shape = x.shape[:b] + idx.shape[b:-1] + x.shape[b + k :]
    out = np.empty(shape, x.dtype)
    for c in itertools.product(*(range(n) for n in shape)):
        batch, mid, rest = c[:b], c[b : idx.ndim - 1], c[idx.ndim - 1 :]
        tup = [int(v) for v in idx[(*batch, *mid)]]
        tup = [v + x.shape[b + t] if v < 0 else v for t, v in enumerate(tup)]
        out[c] = x[(*batch, *tup, *rest)]
    return out


def ref_scatter_elements(x, idx, upd, axis):  # type: ignore[no-untyped-def]
    out = x.copy()
    for c in itertools.product(*(range(n) for n in idx.shape)):  # row-major: later wins
        k = int(idx[c])
        if k < 0:
            k += x.shape[axis]
        dst = list(c)
        dst[axis] = k
        out[tuple(dst)] = upd[c]
    return out


def ref_scatter_nd(x, idx, upd):  # type: ignore[no-untyped-def]
    out = x.copy()
    k = idx.shape[-1]
    for j in itertools.product(*(range(n) for n in idx.shape[:-1])):
        tup = [int(v) for v in idx[j]]
        tup = [v + x.shape[t] if v < 0 else v for t, v in enumerate(tup)]
        out[tuple(tup)] = upd[j]
    del k
    return out


def ref_one_hot(idx, depth, values, axis):  # type: ignore[no-untyped-def]
    shape = (*idx.shape[:axis], depth, *idx.shape[axis:])
    out = np.full(shape, values[0], values.dtype)
    for c in itertools.product(*(range(n) for n in idx.shape)):
        k = int(idx[c])
        if k < 0:
            k += depth
        if 0 <= k < depth:
            out[(*c[:axis], k, *c[axis:])] = values[1]
    return out


def bits(a):  # type: ignore[no-untyped-def]
    a = np.ascontiguousarray(a)
    return a.view(np.uint8).tobytes(), a.shape


# -- the pages' examples through the Device API ----------------------------------------


def _run(backend, desc, ins, out_shape, dtype=np.float32):  # type: ignore[no-untyped-def]
    op = dmlops.Device(backend=backend_name(backend)).create_operator(desc)
    out = to_device(backend, np.full(out_shape, -7, dtype))
    op.execute([to_device(backend, a) for a in ins], [out])
    return to_host(out)


F32 = np.float32
U32 = np.uint32


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
def test_gather_page_examples(backend: str) -> None:
    x = np.array([11, 12, 13, 14], F32)
    out = _run(
        backend,
        GatherDesc(T(D.FLOAT32, [4]), T(D.UINT32, [5]), T(D.FLOAT32, [5]), 0, 1),
        [x, np.array([3, 1, 3, 0, 2], U32)],
        (5,),
    )
    assert out.tolist() == [14, 12, 14, 11, 13]
    x = np.array([[1, 2], [3, 4], [5, 6]], F32)
    desc = GatherDesc(T(D.FLOAT32, [3, 2]), T(D.UINT32, [1, 4]), T(D.FLOAT32, [4, 2]), 0, 1)
    out = _run(backend, desc, [x, np.array([[0, 1, 1, 2]], U32)], (4, 2))
    assert out.tolist() == [[1, 2], [3, 4], [3, 4], [5, 6]]
    # example 3 as its pseudo-code means it: IndexDimensions 1 (the page's 2 is an erratum)
    desc = GatherDesc(T(D.FLOAT32, [3, 2]), T(D.UINT32, [1, 2]), T(D.FLOAT32, [3, 2]), 1, 1)
    assert _run(backend, desc, [x, np.array([[1, 0]], U32)], (3, 2)).tolist() == [
        [2, 1],
        [4, 3],
        [6, 5],
    ]
    x = np.arange(1, 10, dtype=F32).reshape(1, 3, 3)
    desc = GatherDesc(
        T(D.FLOAT32, [1, 3, 3]), T(D.UINT32, [1, 1, 2]), T(D.FLOAT32, [3, 1, 2]), 2, 2
    )
    assert _run(backend, desc, [x, np.array([[[0, 2]]], U32)], (3, 1, 2)).tolist() == [
        [[1, 3]],
        [[4, 6]],
        [[7, 9]],
    ]
    x = np.arange(1, 7, dtype=F32).reshape(1, 3, 2)
    desc = GatherDesc(
        T(D.FLOAT32, [1, 3, 2]), T(D.UINT32, [1, 2, 2]), T(D.FLOAT32, [2, 2, 2]), 1, 2
    )
    assert _run(backend, desc, [x, np.array([[[0, 1], [1, 2]]], U32)], (2, 2, 2)).tolist() == [
        [[1, 2], [3, 4]],
        [[3, 4], [5, 6]],
    ]


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
def test_gather_elements_nd_scatter_and_one_hot_page_examples(backend: str) -> None:
    x = np.arange(1, 10, dtype=F32).reshape(3, 3)
    desc = GatherElementsDesc(T(D.FLOAT32, [3, 3]), T(D.UINT32, [2, 3]), T(D.FLOAT32, [2, 3]), 0)
    assert _run(backend, desc, [x, np.array([[1, 2, 0], [2, 0, 0]], U32)], (2, 3)).tolist() == [
        [4, 8, 3],
        [7, 2, 3],
    ]
    x = np.array([[0, 1], [2, 3]], F32)
    desc = GatherNd1Desc(T(D.FLOAT32, [2, 2]), T(D.UINT32, [2, 1]), T(D.FLOAT32, [2, 2]), 2, 2, 0)
    assert _run(backend, desc, [x, np.array([[1], [0]], U32)], (2, 2)).tolist() == [[2, 3], [0, 1]]
    x = np.arange(12, dtype=F32).reshape(1, 3, 2, 2)
    i = np.array([[[[0, 0], [1, 1]], [[1, 1], [0, 0]], [[0, 1], [1, 0]]]], U32)
    desc = GatherNd1Desc(
        T(D.FLOAT32, [1, 3, 2, 2]), T(D.UINT32, [1, 3, 2, 2]), T(D.FLOAT32, [1, 1, 3, 2]), 3, 3, 1
    )
    assert _run(backend, desc, [x, i], (1, 1, 3, 2)).tolist() == [[[[0, 3], [7, 4], [9, 10]]]]
    # SCATTER_ND's example, its tensors given one DimensionCount (the page mixes 1 and 2)
    desc = ScatterNdDesc(
        T(D.FLOAT32, [1, 8]), T(D.UINT32, [4, 1]), T(D.FLOAT32, [1, 4]), T(D.FLOAT32, [1, 8]), 1, 2
    )
    ins = [
        np.arange(1, 9, dtype=F32),
        np.array([[4], [3], [1], [7]], U32),
        np.array([9, 10, 11, 12], F32),
    ]
    assert _run(backend, desc, ins, (1, 8)).tolist() == [[1, 11, 3, 10, 9, 6, 7, 12]]
    idx = np.array([-3, 100, 3], np.int32).reshape(1, 1, 3, 1)
    desc = OneHotDesc(
        T(D.INT32, [1, 1, 3, 1]), T(D.FLOAT32, [1, 1, 1, 2]), T(D.FLOAT32, [1, 1, 3, 4]), 3
    )
    out = _run(backend, desc, [idx, np.array([[[[0, 1]]]], F32)], (1, 1, 3, 4))
    assert out.tolist() == [[[[0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1]]]]
    idx = np.array([0, 3, 2], U32).reshape(1, 1, 3, 1)
    desc = OneHotDesc(
        T(D.UINT32, [1, 1, 3, 1]), T(D.FLOAT32, [1, 1, 3, 1]), T(D.FLOAT32, [1, 1, 3, 4]), 3
    )
    out = _run(backend, desc, [idx, np.array([4, 2, 9], F32).reshape(1, 1, 3, 1)], (1, 1, 3, 4))
    assert out.tolist() == [[[[2, 4, 4, 4], [4, 4, 4, 2], [4, 4, 2, 4]]]]


# -- rules ----------------------------------------------------------------------------


RULES = [
    (GatherDesc(T(D.FLOAT32, [4]), T(D.UINT32, [2]), T(D.FLOAT32, [2]), 1, 1), "GATHER.Axis is 1"),
    (
        GatherDesc(T(D.FLOAT32, [4]), T(D.UINT32, [2]), T(D.FLOAT32, [2]), 0, 2),
        "GATHER.IndexDimensions is 2",
    ),
    (
        GatherDesc(T(D.FLOAT32, [4]), T(D.UINT32, [2]), T(D.FLOAT32, [3]), 0, 1),
        "GATHER.OutputTensor.Sizes is [3]: must be [2]",
    ),
    (
        GatherDesc(T(D.FLOAT32, [4]), T(D.UINT32, [2]), T(D.FLOAT16, [2]), 0, 1),
        "GATHER.OutputTensor.DataType is FLOAT16",
    ),
    (
        GatherDesc(T(D.FLOAT32, [4, 2]), T(D.UINT32, [2]), T(D.FLOAT32, [2, 2]), 0, 1),
        "GATHER.IndicesTensor.DimensionCount is 1",
    ),
    (
        GatherDesc(T(D.FLOAT32, [4, 2]), T(D.UINT32, [3, 2]), T(D.FLOAT32, [3, 2]), 0, 1),
        "leading sizes [3], which must be 1",
    ),
    (
        GatherDesc(T(D.FLOAT32, [4, 2]), T(D.UINT32, [3, 2]), T(D.FLOAT32, [3, 2]), 0, 2),
        "has 3 dimensions [3, 2, 2], more than 2",
    ),
    (
        GatherElementsDesc(T(D.FLOAT32, [3, 3]), T(D.UINT32, [2, 2]), T(D.FLOAT32, [2, 2]), 0),
        "GATHER_ELEMENTS.IndicesTensor.Sizes[1] is 2: must equal InputTensor.Sizes[1] 3",
    ),
    (
        GatherElementsDesc(T(D.FLOAT32, [3, 3]), T(D.UINT32, [2, 3]), T(D.FLOAT32, [3, 3]), 0),
        "GATHER_ELEMENTS.OutputTensor.Sizes is [3, 3]: must be [2, 3]",
    ),
    (
        GatherNd1Desc(T(D.FLOAT32, [2, 2]), T(D.UINT32, [2, 3]), T(D.FLOAT32, [1, 2]), 2, 2),
        "GATHER_ND1.IndicesTensor.Sizes[1] is 3: an index tuple must have 1 to",
    ),
    (
        GatherNd1Desc(T(D.FLOAT32, [2, 2]), T(D.UINT32, [2, 1]), T(D.FLOAT32, [2, 2]), 3, 2),
        "GATHER_ND1.InputDimensionCount is 3: must be in [1, 2]",
    ),
    (
        GatherNd1Desc(T(D.FLOAT32, [2, 2]), T(D.UINT32, [2, 1]), T(D.FLOAT32, [2, 2]), 2, 2, 2),
        "GATHER_ND1.BatchDimensionCount is 2",
    ),
    (
        GatherNd1Desc(T(D.FLOAT32, [3, 2]), T(D.UINT32, [2, 1]), T(D.FLOAT32, [1, 2]), 2, 2, 1),
        "batch sizes [2] must equal InputTensor's [3]",
    ),
    (
        GatherNdDesc(T(D.FLOAT32, [2, 2]), T(D.UINT32, [2, 1]), T(D.FLOAT32, [2, 3]), 2, 2),
        "GATHER_ND.OutputTensor.Sizes is [2, 3]: must be [2, 2]",
    ),
    (
        ScatterElementsDesc(
            T(D.FLOAT32, [3]), T(D.UINT32, [2]), T(D.FLOAT32, [3]), T(D.FLOAT32, [3]), 0
        ),
        "SCATTER_ELEMENTS.UpdatesTensor.Sizes is [3]: must be [2]",
    ),
    (
        ScatterElementsDesc(
            T(D.FLOAT32, [3]), T(D.UINT32, [2]), T(D.FLOAT32, [2]), T(D.FLOAT32, [4]), 0
        ),
        "SCATTER_ELEMENTS.OutputTensor.Sizes is [4]: must be [3]",
    ),
    (
        ScatterElementsDesc(
            T(D.FLOAT32, [3]), T(D.UINT32, [2]), T(D.INT32, [2]), T(D.FLOAT32, [3]), 0
        ),
        "SCATTER_ELEMENTS.UpdatesTensor.DataType is INT32",
    ),
    (
        ScatterNdDesc(
            T(D.FLOAT32, [4, 2]),
            T(D.UINT32, [3, 1]),
            T(D.FLOAT32, [3, 3]),
            T(D.FLOAT32, [4, 2]),
            2,
            2,
        ),
        "SCATTER_ND.UpdatesTensor.Sizes is [3, 3]: must be [3, 2]",
    ),
    (
        ScatterNdDesc(
            T(D.FLOAT32, [4, 2]),
            T(D.UINT32, [3, 3]),
            T(D.FLOAT32, [3, 2]),
            T(D.FLOAT32, [4, 2]),
            2,
            2,
        ),
        "an index tuple must have 1 to InputDimensionCount = 2 coordinates",
    ),
    (
        OneHotDesc(T(D.UINT32, [3, 2]), T(D.FLOAT32, [1, 2]), T(D.FLOAT32, [3, 4]), 1),
        "ONE_HOT.IndicesTensor.Sizes[1] is 2: must be 1",
    ),
    (
        OneHotDesc(T(D.UINT32, [3, 1]), T(D.FLOAT32, [1, 1]), T(D.FLOAT32, [3, 4]), 1),
        "must hold at least two elements",
    ),
    (
        OneHotDesc(T(D.UINT32, [3, 1]), T(D.FLOAT32, [1, 2]), T(D.FLOAT32, [2, 4]), 1),
        "ONE_HOT.OutputTensor.Sizes[0] is 2: must equal IndicesTensor.Sizes[0] 3",
    ),
    (
        OneHotDesc(T(D.UINT32, [3, 1]), T(D.FLOAT32, [1, 2]), T(D.FLOAT32, [3, 4]), 2),
        "ONE_HOT.Axis is 2",
    ),
]


@pytest.mark.parametrize(("desc", "message"), RULES)
def test_every_rule_fires(desc, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidDescriptorError, match=None) as info:
        desc.validate("6_4")
    assert message in str(info.value), str(info.value)


def test_feature_levels() -> None:
    x4 = T(D.FLOAT32, [1, 1, 1, 4])
    gather = GatherDesc(x4, T(D.INT32, [1, 1, 1, 2]), T(D.FLOAT32, [1, 1, 1, 2]), 3, 1)
    gather.validate("3_0")
    with pytest.raises(UnsupportedFeatureLevelError, match=r"IndicesTensor\.DataType is INT32"):
        gather.validate("2_1")  # signed indices (and negative ones) from 3_0
    GatherDesc(x4, T(D.UINT32, [1, 1, 1, 2]), T(D.FLOAT32, [1, 1, 1, 2]), 3, 1).validate("1_0")
    g8 = GatherDesc(T(D.INT8, [4]), T(D.UINT32, [2]), T(D.INT8, [2]), 0, 1)
    with pytest.raises(UnsupportedFeatureLevelError, match="DimensionCount is 1"):
        g8.validate("2_1")
    g64 = GatherDesc(T(D.FLOAT64, [4]), T(D.UINT32, [2]), T(D.FLOAT64, [2]), 0, 1)
    g64.validate("4_1")
    with pytest.raises(UnsupportedFeatureLevelError, match="FLOAT64"):
        g64.validate("3_0")
    nd1 = GatherNd1Desc(T(D.FLOAT32, [2, 2]), T(D.UINT32, [2, 1]), T(D.FLOAT32, [2, 2]), 2, 2)
    with pytest.raises(
        UnsupportedFeatureLevelError, match="GATHER_ND1 needs DML_FEATURE_LEVEL_3_0"
    ):
        nd1.validate("2_1")
    oh = OneHotDesc(T(D.UINT32, [1, 1, 3, 1]), T(D.INT8, [1, 1, 1, 2]), T(D.INT8, [1, 1, 3, 4]), 3)
    oh.validate("2_1")
    with pytest.raises(UnsupportedFeatureLevelError, match="INT8"):
        oh.validate("2_0")


# -- indices out of range, duplicates, in place ----------------------------------------


def test_out_of_range_index_raises_before_any_write() -> None:
    x = np.arange(4, dtype=F32)
    out = np.full(3, 5.0, F32)
    with pytest.raises(
        IndexOutOfRangeError,
        match=r"GATHER.IndicesTensor: the index at element 2 is 4, outside \[-4, 4\)",
    ):
        dmlops.gather(x, np.array([0, 1, 4]), out=out)
    assert out.tolist() == [5.0, 5.0, 5.0]
    cache = np.zeros((4, 2), F32)
    with pytest.raises(IndexOutOfRangeError, match=r"SCATTER_ND\.IndicesTensor"):
        dmlops.scatter_nd(cache, [[1], [-5]], np.ones((2, 2), F32), out=cache)
    assert not cache.any()
    with pytest.raises(IndexOutOfRangeError, match=r"outside \[0, 4\)"):  # unsigned: no wrap
        dmlops.gather(x, np.array([2**63 + 1], np.uint64))


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
def test_gpu_reads_and_writes_stay_inside_whatever_the_indices(backend: str) -> None:
    if backend.startswith("numpy"):
        pytest.skip("the CPU raises instead (tested above)")
    x = to_device(backend, np.arange(8, dtype=F32))
    got = to_host(dmlops.gather(x, to_device(backend, np.array([100, -100, 2**40]))))
    assert got.tolist() == [7.0, 0.0, 7.0]  # clamped into the axis
    base = to_device(backend, np.zeros(12, dtype=F32))
    view = base[2:6]
    updates = to_device(backend, np.ones(3, F32))
    dmlops.scatter_elements(
        view, to_device(backend, np.array([9, 1, -9], np.int32)), updates, out=view
    )
    assert to_host(base).tolist() == [0, 0, 0, 1] + [0] * 8  # only the valid index wrote


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
def test_duplicate_scatter_targets_the_later_wins(backend: str) -> None:
    n = 4096
    idx = np.zeros(n, np.int64)  # every update to element 0, and pairs elsewhere
    idx[1::2] = np.arange(n // 2) % 7 + 1
    upd = np.arange(n, dtype=F32)
    x = np.zeros(8, F32)
    got = to_host(dmlops.scatter_elements(*(to_device(backend, a) for a in (x, idx, upd))))
    np.testing.assert_array_equal(got, ref_scatter_elements(x, idx, upd, 0))
    cache = np.zeros((8, 3), np.float16)
    rows = np.array([[5], [2], [5], [5]])
    upd = np.arange(12, dtype=np.float16).reshape(4, 3)
    got = to_host(dmlops.scatter_nd(*(to_device(backend, a) for a in (cache, rows, upd))))
    assert got[5].tolist() == [9, 10, 11] and got[2].tolist() == [3, 4, 5]
    # few rows (on a GPU: one launch, each row looking for a later one to its slot), by
    # element and by whole rows of many chunks
    for n, width in ((1000, 1), (300, 512)):
        rng = np.random.default_rng(n)
        cache = np.zeros((40, width), F32)
        rows = rng.integers(-40, 40, (n, 1))
        upd = rng.standard_normal((n, width), dtype=F32)
        got = to_host(dmlops.scatter_nd(*(to_device(backend, a) for a in (cache, rows, upd))))
        want = cache.copy()
        for r, u in zip(rows[:, 0], upd, strict=True):
            want[r] = u  # in index order: the later wins
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
def test_in_place_scatter_copies_only_the_updates(backend: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import dmlops.arrays.indexed as fi

    edited = []
    real = fi._without_input_copy
    monkeypatch.setattr(fi, "_without_input_copy", lambda plan: edited.append(plan) or real(plan))
    dmlops.functional.clear_cache()
    cache = to_device(backend, np.zeros((64, 8), F32))
    upd = to_device(backend, np.ones((2, 8), F32))
    slots = to_device(backend, np.array([[3], [60]]))
    result = dmlops.scatter_nd(cache, slots, upd, out=cache)
    assert result is cache
    host = to_host(cache)
    assert host[3].all() and host[60].all() and host.sum() == 16
    assert edited  # compiled with the cache-to-cache copy dropped
    assert all(real(p).bytes_written == 16 * 4 for p in edited)


def test_in_place_plan_has_no_copy_of_the_cache() -> None:
    from dmlops.arrays.indexed import _without_input_copy

    desc = ScatterNdDesc(
        T(D.FLOAT32, [64, 8]), T(D.INT64, [2, 1]), T(D.FLOAT32, [2, 8]), T(D.FLOAT32, [64, 8]), 2, 2
    )
    plan = desc.lower()
    assert plan.copies and plan.bytes_written == (64 * 8 + 16) * 4
    edited = _without_input_copy(plan)
    assert not edited.copies and edited.bytes_written == 16 * 4 and edited.input_spans[0] == (0, 0)


def test_plan_describes_its_indexed_copies() -> None:
    desc = GatherDesc(T(D.FLOAT32, [5, 3]), T(D.INT64, [1, 4]), T(D.FLOAT32, [4, 3]), 0, 1)
    text = desc.lower().describe()
    assert "then 1 indexed copies" in text and "gather input 0" in text and "INT64" in text


# -- properties against the naive references -------------------------------------------

DTYPES = [np.float32, np.float16, np.int8, np.uint16, np.int32, np.uint8]
GATHER_DTYPES = [*DTYPES, np.float64, np.uint64]  # only GATHER's page lists 64-bit data (4_1)
INDEX_DTYPES = [np.int32, np.int64, np.uint32, np.uint64]


def _data(draw, shape, dtype):  # type: ignore[no-untyped-def]
    raw = draw(
        st.binary(
            min_size=int(np.prod(shape)) * np.dtype(dtype).itemsize,
            max_size=int(np.prod(shape)) * np.dtype(dtype).itemsize,
        )
    )
    return np.frombuffer(raw, dtype).reshape(shape).copy()  # any bits: NaN payloads, -0.0


def _indices(draw, shape, n, itype):  # type: ignore[no-untyped-def]
    signed = np.dtype(itype).kind == "i"
    low = -n if signed else 0
    values = draw(
        st.lists(
            st.integers(low, n - 1), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))
        )
    )
    return np.array(values, dtype=itype).reshape(shape)


def _view(draw, a):  # type: ignore[no-untyped-def]
    """`a` as given, or as a strided (reversed or every-other) view of a larger array."""
    kind = draw(st.sampled_from(["packed", "reversed", "strided"]))
    if kind == "packed" or a.ndim == 0:
        return a
    if kind == "reversed":
        return np.ascontiguousarray(a[::-1])[::-1]
    big = np.empty((a.shape[0] * 2, *a.shape[1:]), a.dtype)
    big[::2] = a
    return big[::2]


shape_st = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


@st.composite
def gather_case(draw):  # type: ignore[no-untyped-def]
    xs = draw(shape_st)
    ish = draw(st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple))
    axis = draw(st.integers(0, len(xs) - 1))
    dtype = draw(st.sampled_from(GATHER_DTYPES))
    itype = draw(st.sampled_from(INDEX_DTYPES))
    x = _view(draw, _data(draw, xs, dtype))
    idx = _view(draw, _indices(draw, ish, xs[axis], itype))
    return x, idx, axis


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
@settings(max_examples=60, deadline=None)
@given(case=gather_case())
def test_gather_matches_reference(backend: str, case) -> None:  # type: ignore[no-untyped-def]
    x, idx, axis = case
    if backend == "webgpu" and idx.ndim == 0:
        idx = idx.reshape(1)  # WebGPU arrays have at least one dimension
    got = to_host(dmlops.gather(to_device(backend, x), to_device(backend, idx), axis))
    assert bits(got) == bits(ref_gather(x, idx, axis))


@st.composite
def elements_case(draw):  # type: ignore[no-untyped-def]
    xs = draw(shape_st)
    axis = draw(st.integers(0, len(xs) - 1))
    ish = list(xs)
    ish[axis] = draw(st.integers(1, 5))
    dtype = draw(st.sampled_from(DTYPES))
    itype = draw(st.sampled_from(INDEX_DTYPES))
    x = _view(draw, _data(draw, xs, dtype))
    idx = _indices(draw, tuple(ish), xs[axis], itype)
    upd = _data(draw, tuple(ish), dtype)
    return x, idx, upd, axis


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
@settings(max_examples=60, deadline=None)
@given(case=elements_case())
def test_gather_and_scatter_elements_match_reference(backend: str, case) -> None:  # type: ignore[no-untyped-def]
    x, idx, upd, axis = case
    dev = [to_device(backend, a) for a in (x, idx, upd)]
    got = to_host(dmlops.gather_elements(dev[0], dev[1], axis))
    assert bits(got) == bits(ref_gather_elements(x, idx, axis))
    got = to_host(dmlops.scatter_elements(dev[0], dev[1], dev[2], axis))
    assert bits(got) == bits(ref_scatter_elements(x, idx, upd, axis))


@st.composite
def nd_case(draw):  # type: ignore[no-untyped-def]
    xs = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple))
    b = draw(st.integers(0, len(xs) - 1))
    k = draw(st.integers(1, len(xs) - b))
    mid = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple))
    ish = xs[:b] + mid + (k,)
    dtype = draw(st.sampled_from(DTYPES))
    itype = draw(st.sampled_from(INDEX_DTYPES))
    x = _view(draw, _data(draw, xs, dtype))
    idx = np.empty(ish, itype)
    for t in range(k):
        idx[..., t] = _indices(draw, ish[:-1], xs[b + t], itype)
    return x, idx, b


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
@settings(max_examples=60, deadline=None)
@given(case=nd_case())
def test_gather_nd_matches_reference(backend: str, case) -> None:  # type: ignore[no-untyped-def]
    x, idx, b = case
    got = to_host(dmlops.gather_nd(to_device(backend, x), to_device(backend, idx), b))
    assert bits(got) == bits(ref_gather_nd(x, idx, b))


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
@settings(max_examples=60, deadline=None)
@given(case=nd_case(), data=st.data())
def test_scatter_nd_matches_reference(backend: str, case, data) -> None:  # type: ignore[no-untyped-def]
    x, idx, b = case
    if b:
        return  # ScatterND has no batch dimensions
    k = idx.shape[-1]
    upd = _data(data.draw, idx.shape[:-1] + x.shape[k:], x.dtype)
    got = to_host(dmlops.scatter_nd(*(to_device(backend, a) for a in (x, idx, upd))))
    assert bits(got) == bits(ref_scatter_nd(x, idx, upd))


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
@settings(max_examples=40, deadline=None)
@given(
    ish=st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple),
    depth=st.integers(1, 5),
    data=st.data(),
)
def test_one_hot_matches_reference(backend: str, ish, depth, data) -> None:  # type: ignore[no-untyped-def]
    if backend == "webgpu" and not ish:
        ish = (1,)  # WebGPU arrays have at least one dimension
    axis = data.draw(st.integers(-len(ish) - 1, len(ish)))
    itype = data.draw(st.sampled_from([np.int32, np.int64]))
    idx = np.array(
        data.draw(
            st.lists(
                st.integers(-depth - 2, depth + 2),
                min_size=int(np.prod(ish)),
                max_size=int(np.prod(ish)),
            )
        ),
        itype,
    ).reshape(ish)
    values = _data(data.draw, (2,), data.draw(st.sampled_from(DTYPES)))
    got = to_host(dmlops.one_hot(to_device(backend, idx), depth, to_device(backend, values), axis))
    assert bits(got) == bits(ref_one_hot(idx, depth, values, axis % (len(ish) + 1)))


# -- DxDispatch ---------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["numpy", INDEXED_BACKENDS[3]])  # DxDispatch: host or CUDA
def test_dxdispatch_gather_model(backend: str) -> None:
    from pathlib import Path

    from dmlops.dxdispatch import load_model, run_model

    lines: list[str] = []
    path = Path(__file__).resolve().parent.parent / "examples" / "gather_embedding.json"
    run_model(load_model(path), dmlops.Device(backend=backend), lines.append)
    assert lines == ["Resource 'rows': 6, 7, 8, 9, 10, 11, 0, 1, 2, 6, 7, 8"]


@pytest.mark.parametrize("kind", ["DML_OPERATOR_SCATTER", "DML_OPERATOR_SCATTER_ELEMENTS"])
def test_dxdispatch_scatter_under_both_names(kind: str) -> None:
    from dmlops.dxdispatch import load_model, run_model

    t = {"DataType": "FLOAT32", "Sizes": [1, 4]}
    model = {
        "resources": {
            "x": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2, 3, 4]},
            "i": {"initialValuesDataType": "UINT32", "initialValues": [3, 0]},
            "u": {"initialValuesDataType": "FLOAT32", "initialValues": [8, 9]},
            "y": {"initialValuesDataType": "FLOAT32", "initialValues": [0, 0, 0, 0]},
        },
        "dispatchables": {
            "s": {
                "type": kind,
                "desc": {
                    "InputTensor": t,
                    "IndicesTensor": {"DataType": "UINT32", "Sizes": [1, 2]},
                    "UpdatesTensor": {"DataType": "FLOAT32", "Sizes": [1, 2]},
                    "OutputTensor": t,
                    "Axis": 1,
                },
            }
        },
        "commands": [
            {
                "type": "dispatch",
                "dispatchable": "s",
                "bindings": {
                    "InputTensor": "x",
                    "IndicesTensor": "i",
                    "UpdatesTensor": "u",
                    "OutputTensor": "y",
                },
            },
            {"type": "print", "resource": "y"},
        ],
    }
    lines: list[str] = []
    run_model(load_model(model), dmlops.Device(), lines.append)
    assert lines == ["Resource 'y': 9, 2, 3, 8"]


# -- REVERSE_SUBSEQUENCES ----------------------------------------------------------------


def ref_reverse(x, lengths, axis, batch_axis):  # type: ignore[no-untyped-def]
    out = np.empty_like(x)
    n = x.shape[axis]
    for c in itertools.product(*(range(m) for m in x.shape)):
        length = min(max(int(lengths[c[batch_axis]]), 0), n)
        p = c[axis]
        src = list(c)
        src[axis] = length - 1 - p if p < length else p
        out[c] = x[tuple(src)]
    return out


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
def test_reverse_subsequences_page_examples(backend: str) -> None:
    from dmlops import ReverseSubsequencesDesc

    x = np.arange(1, 13, dtype=F32).reshape(1, 1, 3, 4)
    desc = ReverseSubsequencesDesc(
        T(D.FLOAT32, [1, 1, 3, 4]), T(D.UINT32, [1, 1, 3, 1]), T(D.FLOAT32, [1, 1, 3, 4]), 3
    )
    got = _run(backend, desc, [x, np.array([2, 4, 3], U32).reshape(1, 1, 3, 1)], (1, 1, 3, 4))
    assert got.tolist() == [[[[2, 1, 3, 4], [8, 7, 6, 5], [11, 10, 9, 12]]]]
    desc = ReverseSubsequencesDesc(
        T(D.FLOAT32, [1, 1, 3, 4]), T(D.UINT32, [1, 1, 1, 4]), T(D.FLOAT32, [1, 1, 3, 4]), 2
    )
    got = _run(backend, desc, [x, np.array([2, 3, 1, 0], U32).reshape(1, 1, 1, 4)], (1, 1, 3, 4))
    assert got.tolist() == [[[[5, 10, 3, 4], [1, 6, 7, 8], [9, 2, 11, 12]]]]


def test_reverse_subsequences_rules() -> None:
    from dmlops import ReverseSubsequencesDesc

    x = T(D.FLOAT32, [1, 1, 3, 4])
    cases = [
        (ReverseSubsequencesDesc(x, T(D.UINT32, [1, 1, 3, 2]), x, 3),
         "REVERSE_SUBSEQUENCES.SequenceLengthsTensor.Sizes is [1, 1, 3, 2]: must be [1, 1, 3, 1]"),
        (ReverseSubsequencesDesc(x, T(D.UINT32, [1, 1, 3, 1]), x, 4),
         "REVERSE_SUBSEQUENCES.Axis is 4: must be in [0, 4)"),
        (ReverseSubsequencesDesc(x, T(D.UINT32, [1, 3, 1]), x, 2),
         "SequenceLengthsTensor.DimensionCount is 3: must equal InputTensor.DimensionCount 4"),
        (ReverseSubsequencesDesc(x, T(D.UINT32, [1, 1, 3, 1]), T(D.FLOAT16, [1, 1, 3, 4]), 3),
         "REVERSE_SUBSEQUENCES.OutputTensor.DataType is FLOAT16"),
    ]  # fmt: skip
    for desc, message in cases:
        with pytest.raises(InvalidDescriptorError) as info:
            desc.validate("3_0")
        assert message in str(info.value)
    signed = ReverseSubsequencesDesc(x, T(D.INT32, [1, 1, 3, 1]), x, 3)
    with pytest.raises(UnsupportedFeatureLevelError, match="supports UINT32 for"):
        signed.validate("6_4")
    six = T(D.FLOAT32, [1, 1, 1, 1, 3, 4])
    with pytest.raises(UnsupportedFeatureLevelError, match="DimensionCount is 6"):
        ReverseSubsequencesDesc(six, T(D.UINT32, [1, 1, 1, 1, 3, 1]), six, 5).validate("3_0")
    five = T(D.FLOAT32, [1, 1, 1, 3, 4])
    lengths5 = T(D.UINT32, [1, 1, 1, 3, 1])
    ReverseSubsequencesDesc(five, lengths5, five, 4).validate("3_0")
    with pytest.raises(UnsupportedFeatureLevelError, match="DimensionCount is 5"):
        ReverseSubsequencesDesc(five, lengths5, five, 4).validate("2_1")


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
@settings(max_examples=50, deadline=None)
@given(data=st.data(), shape=st.lists(st.integers(1, 4), min_size=2, max_size=5).map(tuple))
def test_reverse_subsequences_matches_reference(backend: str, data, shape) -> None:  # type: ignore[no-untyped-def]
    x = _view(data.draw, _data(data.draw, shape, data.draw(st.sampled_from(DTYPES))))
    axis, batch = data.draw(st.permutations(range(len(shape))))[:2]
    itype = data.draw(st.sampled_from([np.uint32, np.int64, np.uint64, np.int8, np.uint8]))
    n = shape[axis]
    low = -3 if np.dtype(itype).kind == "i" else 0  # negatives reverse nothing
    high = [n + 2, 2**40] if np.dtype(itype).itemsize == 8 else [n + 2]  # past 2**32 too
    values = st.one_of(st.integers(low, n + 2), st.sampled_from(high))
    lengths = np.array(
        data.draw(st.lists(values, min_size=shape[batch], max_size=shape[batch])), itype
    )
    if backend == "webgpu":
        lengths = lengths.astype(np.uint32)  # WebGPU arrays are cast nowhere: give UINT32
    got = to_host(
        dmlops.reverse_subsequences(to_device(backend, x), to_device(backend, lengths), axis, batch)
    )
    assert bits(got) == bits(ref_reverse(x, lengths, axis, batch))


@settings(max_examples=60, deadline=None)
@given(data=st.data(), shape=st.lists(st.integers(1, 5), min_size=2, max_size=5).map(tuple))
def test_reversals_line_by_line_match_the_reference(data, shape) -> None:  # type: ignore[no-untyped-def]
    """The numpy path's reversal along a long dimension (each line two views; here every
    reversal takes it, its offset tables turned off) against the element loop."""
    from dmlops import functional
    from dmlops.backends import numpy_indexed

    x = _view(data.draw, _data(data.draw, shape, data.draw(st.sampled_from(DTYPES))))
    axis, batch = data.draw(st.permutations(range(len(shape))))[:2]
    itype = data.draw(st.sampled_from([np.uint32, np.int64, np.uint64, np.int8]))
    n = shape[axis]
    low = -3 if np.dtype(itype).kind == "i" else 0
    values = st.integers(low, n + 2)
    lengths = np.array(
        data.draw(st.lists(values, min_size=shape[batch], max_size=shape[batch])), itype
    )
    largest = numpy_indexed._Reversal.LARGEST
    numpy_indexed._Reversal.LARGEST = 0
    functional.clear_cache()
    try:
        got = dmlops.reverse_subsequences(x, lengths, axis, batch, device="numpy")
    finally:
        numpy_indexed._Reversal.LARGEST = largest
        functional.clear_cache()
    assert bits(got) == bits(ref_reverse(x, lengths, axis, batch))


def test_a_long_reversal_of_strided_views() -> None:
    x = np.arange(3 * 2 * 700, dtype=np.float32).reshape(3, 2, 700)
    view = x[::-1, :, ::-2]  # (3, 2, 350), negative strides
    for lengths in ([0, 1, 349], [350, 400, 7]):
        got = dmlops.reverse_subsequences(view, np.array(lengths, np.int64), 2, 0)
        assert bits(got) == bits(ref_reverse(view, np.array(lengths), 2, 0))


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
@pytest.mark.parametrize(
    "itype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
)
def test_reverse_subsequences_takes_lengths_of_every_integer_type(backend: str, itype) -> None:  # type: ignore[no-untyped-def]
    """Lengths of any integer type, at its extremes, become UINT32 (negatives 0, past 2**32
    clamped): no bound of the conversion may lie outside the type (CuPy refuses 2**32 - 1
    for int8)."""
    info = np.iinfo(itype)
    lengths = np.array([info.min, 0, 2, info.max], itype)
    x = np.arange(4 * 5, dtype=np.float32).reshape(5, 4)
    got = to_host(dmlops.reverse_subsequences(to_device(backend, x), to_device(backend, lengths)))
    assert bits(got) == bits(ref_reverse(x, lengths, 0, 1))


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
@pytest.mark.parametrize("itype", [np.int32, np.int64, np.uint64])
def test_lengths_read_as_they_are_from_views(backend: str, itype) -> None:  # type: ignore[no-untyped-def]
    """32- and 64-bit lengths are read in their own type, not converted: views with steps
    and reversed views of them, over 16-byte elements too (a plan moving words)."""
    negative = -3 if np.iinfo(itype).min < 0 else 0
    base = np.array([9, negative, 2, 7, 0, 1, 5, 4], itype)
    for lengths in (base[::2], base[::-1][:4], base[1::2]):
        for dtype in (np.float32, np.complex128):
            x = (np.arange(5 * 4 * 3) * (1 + 1j)).astype(dtype).reshape(5, 4, 3)
            got = to_host(
                dmlops.reverse_subsequences(to_device(backend, x), to_device(backend, lengths))
            )
            assert bits(got) == bits(ref_reverse(x, lengths, 0, 1)), (lengths, dtype)


def test_index_tuples_read_backwards() -> None:
    """Index tuples from a view with a negative stride along the tuple: the plan's span of the
    index binding reaches below the tuple's first coordinate."""
    x = np.arange(16, dtype=F32).reshape(4, 4)
    view = np.array([[1, 2], [0, 3]], np.int64)[:, ::-1]
    assert dmlops.gather_nd(x, view).tolist() == [9.0, 12.0]
    from dmlops.plan import Layout

    desc = GatherNdDesc(T(D.FLOAT32, [4, 4]), T(D.INT64, [2, 2]), T(D.FLOAT32, [1, 2]), 2, 2)
    plan = desc.lower([Layout(0, (4, 1)), Layout(1, (2, -1))], [Layout(0, (2, 1))])
    assert plan.input_spans[1] == (0, 32)  # elements 0..3 of the index buffer, not 1..4


@pytest.mark.parametrize("itype", [np.int64, np.int32, np.uint32, np.uint64])
def test_whole_row_gathers_and_scatters_keep_every_rule(itype: type) -> None:
    """The CPU's one-call paths (numpy.take, one assignment) against element loops: negative
    indices, an index out of range (nothing written), repeated rows (the later wins)."""
    table = np.arange(40, dtype=np.float32).reshape(10, 4)
    picks = [9, 0, 3, 3] if itype in (np.uint32, np.uint64) else [9, -1, 0, -10]
    index = np.array(picks, itype)
    want = np.stack([table[int(i)] for i in picks])
    out = np.full((4, 4), -7, np.float32)
    assert dmlops.gather(table, index, out=out) is out and out.tobytes() == want.tobytes()
    big = int(np.iinfo(itype).max)  # far past the axis (for uint64: past int64 too)
    signed = [[-11, 0, 1, 1]] if np.iinfo(itype).min < 0 else []
    for bad in ([0, 10, 1, 2], [3, big, 0, 0], *signed):
        out[...] = -7
        with pytest.raises(dmlops.IndexOutOfRangeError):
            dmlops.gather(table, np.array(bad, itype), out=out)
        assert (out == -7).all()  # nothing was written
    cache = np.zeros((10, 4), np.float32)
    rows = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    slots = np.array([[7], [2], [7]], itype)  # slot 7 twice: the later row wins
    dmlops.scatter_nd(cache, slots, rows, out=cache)
    expected = np.zeros((10, 4), np.float32)
    for s, r in zip(slots[:, 0], rows, strict=True):
        expected[int(s)] = r
    assert cache.tobytes() == expected.tobytes()
    distinct = np.array([[1], [5]] if itype in (np.uint32, np.uint64) else [[1], [-5]], itype)
    dmlops.scatter_nd(cache, distinct, rows[:2] * 10, out=cache)
    expected[1], expected[5] = rows[0] * 10, rows[1] * 10
    assert cache.tobytes() == expected.tobytes()
    before = cache.copy()
    with pytest.raises(dmlops.IndexOutOfRangeError):
        dmlops.scatter_nd(cache, np.array([[0], [10]], itype), rows[:2], out=cache)
    assert cache.tobytes() == before.tobytes()


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
def test_validate_indices_names_the_first_bad_index_on_every_backend(backend: str) -> None:
    table = to_device(backend, np.arange(40, dtype=np.float32).reshape(10, 4))
    cases = [
        (lambda i: dmlops.gather(table, i, validate_indices=True), [[3, 10]], "GATHER", 1, 10),
        (lambda i: dmlops.gather_elements(table, i, 1, validate_indices=True),
         [[0, 1, 2, -5]] * 10, "GATHER_ELEMENTS", 3, -5),
        (lambda i: dmlops.gather_nd(table, i, validate_indices=True), [[9, 3], [2, 4]],
         "GATHER_ND", 3, 4),
        (lambda i: dmlops.scatter_nd(table, i, to_device(backend, np.zeros((2, 4), np.float32)),
                                     validate_indices=True), [[1], [-11]], "SCATTER_ND", 1, -11),
    ]  # fmt: skip
    for call, bad, op, at, value in cases:
        index = to_device(backend, np.array(bad, np.int64))
        with pytest.raises(dmlops.IndexOutOfRangeError, match=rf"{op}\.IndicesTensor: the index "
                           rf"at element {at} is {value}, outside"):  # fmt: skip
            call(index)
    good = to_device(backend, np.array([[9, 3], [-10, 0]], np.int64))
    assert to_host(dmlops.gather_nd(table, good, validate_indices=True)).tolist() == [39.0, 0.0]
    u32 = to_device(backend, np.array([2, 10], np.uint32))
    with pytest.raises(dmlops.IndexOutOfRangeError, match="element 1 is 10"):
        dmlops.gather(table, u32, validate_indices=True)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
def test_cuda_wide_offset_kernel_agrees_with_the_lean_one(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Launches whose offsets all fit an int take the lean 32-bit kernel; the 64-bit one
    (forced here) moves the same bits."""
    from dmlops.backends.cuda import indexed as cuda_indexed

    rng = np.random.default_rng(11)
    x = rng.standard_normal((6, 40), dtype=F32)
    ids = rng.integers(-6, 6, 9)
    along = rng.integers(-40, 40, (6, 7))
    cache = np.zeros((16, 40), F32)
    slots = rng.permutation(16)[:5].reshape(5, 1)
    rows = rng.standard_normal((5, 40), dtype=F32)
    calls = [
        lambda: dmlops.gather(*(to_device("cuda", a) for a in (x, ids))),
        lambda: dmlops.gather_elements(*(to_device("cuda", a) for a in (x, along)), 1),
        lambda: dmlops.scatter_nd(*(to_device("cuda", a) for a in (cache, slots, rows))),
    ]
    dmlops.functional.clear_cache()
    lean = [to_host(f()) for f in calls]
    real = cuda_indexed.IndexedLaunch.__init__

    def wide(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        real(self, *args, **kwargs)
        self.lean_reach = False

    monkeypatch.setattr(cuda_indexed.IndexedLaunch, "__init__", wide)
    dmlops.functional.clear_cache()
    try:
        wide_results = [to_host(f()) for f in calls]
    finally:
        dmlops.functional.clear_cache()
    for a, b in zip(lean, wide_results, strict=True):
        assert a.tobytes() == b.tobytes()
    assert lean[0].tobytes() == np.take(x, ids, axis=0).tobytes()


def _answer(call):  # type: ignore[no-untyped-def]
    """A call's result bits, or its error's type and message."""
    try:
        return bits(np.asarray(call()))
    except dmlops.DmlError as e:
        return type(e).__name__, str(e)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_few_rows_read_as_python_ints_agree_with_the_array_path(data) -> None:  # type: ignore[no-untyped-def]
    """Index counts up to numpy_indexed._FEW are checked and located as Python ints; the
    same calls through the array path (the threshold at 0) give the same bits and errors:
    negative and out-of-range indices, repeated targets (the later wins), one-hot misses."""
    from dmlops import functional
    from dmlops.backends import numpy_indexed

    rows, cols = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 6))
    x = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) - 3.5
    itype = data.draw(st.sampled_from([np.int64, np.int32, np.uint32]))
    low = 0 if itype is np.uint32 else -cols - 1
    picks = data.draw(st.lists(st.integers(low, cols), min_size=rows, max_size=rows * 3))
    k = len(picks) // rows
    index = np.array(picks[: rows * k], itype).reshape(rows, k)
    updates = np.arange(rows * k, dtype=np.float32).reshape(rows, k) + 100
    sign = np.array([-0.0, np.nan], np.float32)
    calls = [
        lambda: dmlops.gather_elements(x, index, 1),
        lambda: dmlops.scatter_elements(x, index, updates, 1),
        lambda: dmlops.one_hot(index, cols, sign, -1),
        lambda: dmlops.gather(x, index[0], 1),
    ]
    functional.clear_cache()
    few = [_answer(c) for c in calls]
    threshold = numpy_indexed._FEW
    numpy_indexed._FEW = 0
    functional.clear_cache()
    try:
        assert [_answer(c) for c in calls] == few
    finally:
        numpy_indexed._FEW = threshold
        functional.clear_cache()


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_offset_tables_agree_with_the_full_path(data) -> None:  # type: ignore[no-untyped-def]
    """Index values turned into offsets by one numpy.take of a table (numpy_indexed's
    `_OffsetTable`: strict, clamped, skipped, unsigned and narrow index types) give the same
    bits and errors as the full path, and repeats are found alike by a set, by stamping and
    by sorting."""
    from dmlops import functional
    from dmlops.backends import numpy_indexed

    rows, cols = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 70))
    x = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) - 3.5
    itype = data.draw(
        st.sampled_from([np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64])
    )
    signed = np.dtype(itype).kind == "i"
    low = max(-cols - 2, -128) if signed else 0
    high = min(cols + 1, 127)
    k = data.draw(st.integers(1, 4))
    picks = data.draw(st.lists(st.integers(low, high), min_size=rows * k, max_size=rows * k))
    index = np.array(picks, itype).reshape(rows, k)
    updates = np.arange(rows * k, dtype=np.float32).reshape(rows, k) + 100
    clamp = data.draw(st.booleans())
    sign = np.array([-0.0, np.nan], np.float32)
    calls = [
        lambda: dmlops.gather_elements(x, index, 1, clamp_indices=clamp),
        lambda: dmlops.scatter_elements(x, index, updates, 1, clamp_indices=clamp),
        lambda: dmlops.scatter_elements(x.copy(), index, updates, 1, out=None),
        lambda: dmlops.one_hot(index, cols, sign, -1),
        lambda: dmlops.gather(x, index[0], 1, clamp_indices=clamp),
        lambda: dmlops.gather_nd(x.T.copy(), index[:1].reshape(-1, 1), clamp_indices=clamp),
    ]
    functional.clear_cache()
    fast = [_answer(c) for c in calls]
    saved = numpy_indexed._OffsetTable.of, numpy_indexed._SET, numpy_indexed._STAMPED
    stamps_a_row = numpy_indexed._FLAGS_A_ROW
    try:
        numpy_indexed._SET = 0  # repeats found by flags
        functional.clear_cache()
        assert [_answer(c) for c in calls] == fast
        numpy_indexed._STAMPED = numpy_indexed._FLAGS_A_ROW = 0  # by sorting
        functional.clear_cache()
        assert [_answer(c) for c in calls] == fast
        numpy_indexed._OffsetTable.of = staticmethod(lambda copy: None)  # type: ignore[method-assign]
        functional.clear_cache()
        assert [_answer(c) for c in calls] == fast
    finally:
        numpy_indexed._OffsetTable.of, numpy_indexed._SET, numpy_indexed._STAMPED = saved
        numpy_indexed._FLAGS_A_ROW = stamps_a_row
        functional.clear_cache()


def test_an_axis_too_long_for_an_offset_table_computes_its_offsets(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A copy indexed along more positions than `_OffsetTable.LONGEST` (MAX_UNPOOLING's
    indices address its whole output) gets no table (one of 2n + 2 offsets: 134 MB and 0.8 s
    for an output of 8.4M elements) and the same answer; a short axis keeps its table."""
    from dmlops import functional
    from dmlops.backends import numpy_indexed

    made: list[int] = []
    build = numpy_indexed._OffsetTable.__init__

    def counted(self, copy):  # type: ignore[no-untyped-def]
        made.append(copy.axes[0].size)
        build(self, copy)

    monkeypatch.setattr(numpy_indexed._OffsetTable, "__init__", counted)
    functional.clear_cache()
    positions = 300_000
    assert positions > numpy_indexed._OffsetTable.LONGEST
    x = np.arange(2000, dtype=np.float32).reshape(1, 1, 1, 2000)
    at = (np.arange(2000, dtype=np.int64) * 7 + 3) % positions
    at[5] = at[6]  # (a repeat: the later value wins)
    got = dmlops.max_unpooling(x, at.reshape(1, 1, 1, 2000), [1, 1, 1, positions])
    want = np.zeros(positions, np.float32)
    for value, where in zip(x.ravel(), at, strict=True):
        want[where] = value
    assert bits(got.ravel()) == bits(want) and made == []
    rows = np.array([3, -1, 0])
    assert bits(dmlops.gather(x.reshape(2000, 1), rows, 0)) == bits(x.reshape(2000, 1)[rows])
    assert made == [2000]
    functional.clear_cache()


@pytest.mark.parametrize("dtype", [">f4", ">i2", "<f8", ">c8"])
def test_new_outputs_keep_the_inputs_byte_order(dtype: str) -> None:
    """A new output made by the plan itself (a copy of a view, numpy.take) has the input's
    own type, byte order included, and its values."""
    x = (np.arange(12) - 4).astype(dtype).reshape(3, 4)
    cases = [
        (dmlops.slice1(x, [0, 1], [3, 3], [1, 2]), x[:, 1:4:2]),
        (dmlops.gather(x, np.array([2, 0]), 0), x[[2, 0]]),
        (
            dmlops.gather_elements(x, np.array([[3, 0]] * 3), 1),
            np.take_along_axis(x, np.array([[3, 0]] * 3), 1),
        ),
    ]
    for ours, theirs in cases:
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs)


def test_signatures_from_raw_arguments_never_serve_another_call() -> None:
    """Warm numpy calls find their compiled call from their raw arguments; a float axis, a
    read-only output or updates that share the output's memory still take the full path
    (refused, refused, staged first)."""
    from dmlops import functional

    functional.clear_cache()
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[1, 0]] * 3)
    np.testing.assert_array_equal(dmlops.gather_elements(x, idx, 1), np.take_along_axis(x, idx, 1))
    with pytest.raises(dmlops.DmlError):
        dmlops.gather_elements(x, idx, 1.0)  # type: ignore[arg-type]
    out = np.zeros((3, 2), np.float32)
    dmlops.gather_elements(x, idx, 1, out=out)
    frozen = np.zeros((3, 2), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(dmlops.DmlError):
        dmlops.gather_elements(x, idx, 1, out=frozen)
    assert not frozen.any()
    # updates read from the output itself: numpy's answer (they are read before any write)
    cache = np.arange(8, dtype=np.float32).reshape(4, 2)
    for _ in range(2):  # the second call finds the compiled call
        target = cache.copy()
        want = target.copy()
        want[[3, 0]] = target[0:2].copy()
        dmlops.scatter_nd(target, np.array([[3], [0]]), target[0:2], out=target)
        np.testing.assert_array_equal(target, want)
    functional.clear_cache()


@st.composite
def long_rows_case(draw):  # type: ignore[no-untyped-def]
    """Element gathers whose walk rows are long (the CUDA `elements` kernel's class): one or
    two outer dimensions, rows of 32 to 300 indices, any data type, index type and view."""
    rows = draw(st.integers(1, 3))
    n = draw(st.integers(1, 40))
    cols = draw(st.integers(32, 300))
    dtype = draw(st.sampled_from([*DTYPES, np.float64]))
    itype = draw(st.sampled_from(INDEX_DTYPES))
    axis = draw(st.integers(0, 1))
    xs = (rows, n) if axis == 1 else (n, rows)
    x = _view(draw, _data(draw, xs, dtype))
    ish = (rows, cols) if axis == 1 else (cols, rows)
    idx = _view(draw, _indices(draw, ish, n, itype))
    return x, idx, axis


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
@settings(max_examples=40, deadline=None)
@given(case=long_rows_case(), clamp=st.booleans())
def test_element_gathers_of_long_rows_match_reference(backend: str, case, clamp) -> None:  # type: ignore[no-untyped-def]
    """take_along_axis-shaped gathers and gathers of scalars (one outer dimension), against
    the naive references; with WebNN's clamp, out-of-range indices read the axis' ends."""
    x, idx, axis = case
    dev_x, dev_i = to_device(backend, x), to_device(backend, idx)
    got = to_host(dmlops.gather_elements(dev_x, dev_i, axis, clamp_indices=clamp))
    assert bits(got) == bits(ref_gather_elements(x, idx, axis))
    flat = np.ascontiguousarray(x).reshape(-1)
    picks = np.ascontiguousarray(idx).reshape(-1)
    if picks.dtype.kind == "u":
        picks = picks % flat.size
    got = to_host(dmlops.gather(to_device(backend, flat), to_device(backend, picks)))
    assert bits(got) == bits(ref_gather(flat, picks, 0))
    if clamp:
        wild = np.array([5 * x.shape[axis], -5 * x.shape[axis]] * 20, np.int64).reshape(-1, 1)
        wild = np.repeat(wild, x.shape[1 - axis], 1) if axis == 0 else wild.T.repeat(x.shape[0], 0)
        got = to_host(
            dmlops.gather_elements(dev_x, to_device(backend, wild), axis, clamp_indices=True)
        )
        ends = np.where(wild > 0, x.shape[axis] - 1, 0)
        assert bits(got) == bits(ref_gather_elements(x, ends, axis))


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
@pytest.mark.parametrize("chunks", [32, 100, 128, 129, 300, 700])
def test_long_rows_in_segments_match_reference(backend: str, chunks: int) -> None:
    """Rows of 32 to 700 sixteen-byte chunks (the CUDA kernel moves them a segment of 128
    chunks per warp, the last one partial): gathers, and scatters with repeated targets
    past the one-launch scan (the later wins), in place and not."""
    rng = np.random.default_rng(chunks)
    width = chunks * 8  # float16 elements
    x = rng.standard_normal((40, width)).astype(np.float16)
    x.view(np.uint16)[0, :3] = [0x7E01, 0x8000, 0xFC01]  # NaN payload, -0.0, signalling NaN
    idx = rng.integers(-40, 40, 48)
    got = to_host(dmlops.gather(to_device(backend, x), to_device(backend, idx)))
    assert bits(got) == bits(ref_gather(x, idx, 0))
    upd = rng.standard_normal((1100, width)).astype(np.float16)
    slots = rng.integers(0, 40, (1100, 1))
    want = ref_scatter_nd(x, slots, upd)
    got = to_host(dmlops.scatter_nd(*(to_device(backend, a) for a in (x, slots, upd))))
    assert bits(got) == bits(want)
    cache = to_device(backend, x.copy())
    dmlops.scatter_nd(cache, to_device(backend, slots), to_device(backend, upd), out=cache)
    assert bits(to_host(cache)) == bits(want)


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
@pytest.mark.parametrize("rows", [1000, 1025, 4096, 4097])
@pytest.mark.parametrize("width", [3, 160])
def test_scatters_with_repeated_targets_past_every_launch_size(
    backend: str, rows: int, width: int
) -> None:
    """Scatters of 1,000 to 4,097 rows onto 300 targets (the later wins), rows of 3 and 160
    float32 (a thread or a warp a row): on CUDA, the scan that locates every other row, the
    scan over slots kept in shared memory (up to 4,096 rows) and the winner table (past it),
    in place and not."""
    rng = np.random.default_rng(rows + width)
    x = rng.standard_normal((300, width)).astype(np.float32)
    slots = rng.integers(0, 300, (rows, 1))
    upd = rng.standard_normal((rows, width)).astype(np.float32)
    want = ref_scatter_nd(x, slots, upd)
    got = to_host(dmlops.scatter_nd(*(to_device(backend, a) for a in (x, slots, upd))))
    assert bits(got) == bits(want)
    cache = to_device(backend, x.copy())
    dmlops.scatter_nd(cache, to_device(backend, slots), to_device(backend, upd), out=cache)
    assert bits(to_host(cache)) == bits(want)


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
def test_clamped_indices_at_the_ends_of_their_types(backend: str) -> None:
    """WebNN's clamp with the largest and smallest values each index type holds: the reads
    land on the axis' ends (no value wraps past another)."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for itype in (np.int64, np.int32, np.uint64, np.uint32):
        info = np.iinfo(itype)
        idx = np.array([[info.max, info.min, 1]] * 3, itype)
        got = to_host(
            dmlops.gather_elements(
                to_device(backend, x), to_device(backend, idx), 1, clamp_indices=True
            )
        )
        want = np.take_along_axis(x, np.array([[3, 0, 1]] * 3), 1)  # (min: -n or 0 first)
        assert bits(got) == bits(want), itype


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
@pytest.mark.parametrize(
    "case", ["elements", "words 8", "words 300", "words 1100", "view 8", "view 256"]
)
def test_scatters_again_and_again_into_the_same_arrays(backend: str, case: str) -> None:
    """Scatters whose targets meet, of more rows than one GPU launch resolves (a winner
    table), called three times into the same arrays with new targets and updates: each call's
    later update wins. Rows of one element, of whole words (one workgroup or several on
    WebGPU; a warp or several on CUDA) and index positions spanning several rows (a view's
    blocks): where the copy frees the table's slots itself and where each call clears it."""
    rng = np.random.default_rng(len(case))
    if case == "elements":
        x = np.zeros((64, 50), F32)
        arrays = [to_device(backend, x)]
        target = arrays[0]
    elif case.startswith("view"):  # index positions of 4 rows each
        width = int(case.split()[1])
        base = to_device(backend, np.zeros((300, 4, 2 * width), F32))
        target = base[:, :, :width]
    else:
        width = int(case.split()[1])
        target = to_device(backend, np.zeros((300, width), F32))
    want = to_host(target).copy()
    for _ in range(3):
        if case == "elements":
            idx = rng.integers(0, 50, (64, 100))
            upd = rng.standard_normal((64, 100)).astype(F32)
            want = ref_scatter_elements(want, idx, upd, 1)
            dmlops.scatter_elements(
                target, to_device(backend, idx), to_device(backend, upd), 1, out=target
            )
        else:
            slots = rng.integers(0, 300, (4500, 1))
            upd = rng.standard_normal((4500, *want.shape[1:])).astype(F32)
            want = ref_scatter_nd(want, slots, upd)
            dmlops.scatter_nd(
                target, to_device(backend, slots), to_device(backend, upd), out=target
            )
        assert bits(to_host(target)) == bits(want)


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
@pytest.mark.parametrize(
    ("dtype", "width"),
    [(F32, w) for w in (4, 5, 31, 32, 33, 64, 100, 129, 255, 256, 257, 1024, 1025)]
    + [(np.float16, 10), (np.float16, 64), (np.int8, 52), (np.int8, 48)],
)
def test_short_whole_word_rows(backend: str, dtype: type, width: int) -> None:
    """Gathers and scatters (targets that meet, three calls into the same array) of rows of
    4 to 1,025 whole words, more rows than one workgroup's teams move (WebGPU: a team of the
    power of two at or above a row's units, several rows a workgroup; 32 invocations per
    segment of 256 units of longer rows), with negative indices; on WebGPU the row kernels move them, a
    16-byte vector an invocation where every row is whole vectors, else a word."""
    rng = np.random.default_rng(width)
    host = rng.integers(-100, 100, (700, width)).astype(dtype)
    log = None
    if backend == "webgpu":
        from dmlops.backends.webgpu import WebGpuBackend

        log = WebGpuBackend.instance().dispatch_log = []
    try:
        ids = rng.integers(-700, 700, (37, 29))
        got = dmlops.gather(to_device(backend, host), to_device(backend, ids), 0)
        assert bits(to_host(got)) == bits(ref_gather(host, ids, 0))
        target = to_device(backend, host)
        want = host.copy()
        for _ in range(3):
            slots = rng.integers(0, 700, (1500, 1))
            upd = rng.integers(-100, 100, (1500, width)).astype(dtype)
            want = ref_scatter_nd(want, slots, upd)
            dmlops.scatter_nd(
                target, to_device(backend, slots), to_device(backend, upd), out=target
            )
            assert bits(to_host(target)) == bits(want)
    finally:
        if backend == "webgpu":
            WebGpuBackend.instance().dispatch_log = None
    if log is not None:
        row_bytes = width * np.dtype(dtype).itemsize
        unit = 16 if row_bytes % 16 == 0 else 4  # (the arrays start 256-byte aligned)
        units = row_bytes // unit
        kind = "teams" if units < 256 else "segments"
        moved = {f"indexed-vector-{kind}" if unit == 16 else f"indexed-{kind}"}
        assert moved <= set(log), log


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
@pytest.mark.parametrize("teams", [True, False])
@pytest.mark.parametrize(
    ("dtype", "width"),
    [(F32, w) for w in (1, 2, 3, 4, 5, 8, 12, 16, 17, 20, 31, 33, 64, 100, 124, 128, 132)]
    + [(np.float16, 6), (np.int8, 40), (np.float64, 30)],
)
def test_cuda_short_rows_by_teams_and_by_threads(
    dtype: type,
    width: int,
    teams: bool,
    monkeypatch: pytest.MonkeyPatch,
    indexed_preparations: list[Any],
) -> None:
    """CUDA's indexed copies of rows shorter than a warp's 32 chunks, moved by a team of
    lanes (the power of two at or over the row's chunks) or a thread a row
    (`TEAM_THREADS` 0): gathers, gathers of strided rows (element by element), scatters whose
    targets meet (the shared-memory scan, a winner table the copy frees, and one each call
    clears: index positions of several rows), three calls into one array, each bit-exact;
    the launches took the lanes asked."""
    from dmlops.backends.cuda import indexed as cuda_indexed

    if not teams:
        monkeypatch.setattr(cuda_indexed, "TEAM_THREADS", 0)
    dmlops.functional.clear_cache()
    rng = np.random.default_rng(width)
    host = rng.integers(-100, 100, (300, 2 * width)).astype(dtype)
    ids = rng.integers(-300, 300, (7, 9))
    got = dmlops.gather(to_device("cuda", host), to_device("cuda", ids), 0)
    assert bits(to_host(got)) == bits(ref_gather(host, ids, 0))
    strided = to_device("cuda", host)[:, ::2]  # rows read element by element
    got = dmlops.gather(strided, to_device("cuda", ids), 0)
    assert bits(to_host(got)) == bits(ref_gather(host[:, ::2], ids, 0))
    for rows in (40, 5000):  # the shared-memory scan; a winner table the copy frees
        target = to_device("cuda", host[:, :width].copy())
        want = host[:, :width].copy()
        for _ in range(3):
            slots = rng.integers(0, 300, (rows, 1))
            upd = rng.integers(-100, 100, (rows, width)).astype(dtype)
            want = ref_scatter_nd(want, slots, upd)
            dmlops.scatter_nd(target, to_device("cuda", slots), to_device("cuda", upd), out=target)
            assert bits(to_host(target)) == bits(want), rows
    base = to_device("cuda", np.zeros((300, 3, 2 * width), dtype))
    target = base[:, :, :width]  # index positions of three rows: each call clears the table
    want = np.zeros((300, 3, width), dtype)
    for _ in range(3):
        slots = rng.integers(0, 300, (5000, 1))
        upd = rng.integers(-100, 100, (5000, 3, width)).astype(dtype)
        want = ref_scatter_nd(want, slots, upd)
        dmlops.scatter_nd(target, to_device("cuda", slots), to_device("cuda", upd), out=target)
        assert bits(to_host(target)) == bits(want)
    metas = [made[2][0] for made in indexed_preparations]  # (the meta table kept first)
    lanes_seen = {int(m[-1]) for m in metas if len(m) == cuda_indexed.META_WORDS}
    if not teams:  # (not the elements kernel's walk, above)
        assert lanes_seen <= {1, 32}
    elif 1 < width < 32:  # (the strided gather's rows: `width` chunks of one element)
        assert 1 << (width - 1).bit_length() in lanes_seen


@pytest.mark.parametrize("backend", INDEXED_BACKENDS)
def test_gather_of_a_0d_array_reads_its_one_element(backend: str) -> None:
    """numpy.take and torch's index_select and take read a 0-D array as its one element."""
    x = to_device(backend, np.array(-2.5, F32))
    two = dmlops.gather(x, to_device(backend, np.array([0, -1])), 0)
    assert to_host(two).shape == (2,) and to_host(two).tolist() == [-2.5, -2.5]
    one = to_host(dmlops.gather(x, to_device(backend, np.array(0)), 0))
    assert one.shape == () and float(one) == -2.5
    with pytest.raises(dmlops.DmlError, match="axis 1"):
        dmlops.gather(x, to_device(backend, np.array([0])), 1)


def test_threads_gathering_and_scattering_at_once_keep_their_offsets_apart() -> None:
    """A lone indexed step keeps its offsets in its thread's reused buffer between finding
    them and moving the rows: threads running one plan at once each get their own answer."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 300)).astype(np.float32)
    # 64 x 40 elements: past the compiled path's 2,048 rows, on numpy's
    cases = [np.argsort(rng.random((64, 300)), 1)[:, :40] - 150 for _ in range(16)]
    updates = rng.standard_normal((64, 40)).astype(np.float32)

    def both(k: int) -> bool:
        ids = cases[k % len(cases)]  # (distinct in each row: no repeated destination)
        wrapped = np.where(ids < 0, ids + 300, ids)
        got = dmlops.gather_elements(x, ids, 1)
        put = dmlops.scatter_elements(x, ids, updates, 1)
        expect = x.copy()
        np.put_along_axis(expect, wrapped, updates, 1)
        return bits(got) == bits(np.take_along_axis(x, wrapped, 1)) and bits(put) == bits(expect)

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(both, range(400)))
