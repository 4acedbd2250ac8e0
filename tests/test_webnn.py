"""WebNN slice, split and concat: the specification's semantics and checks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dmlops import DmlError, webnn


def test_slice_with_and_without_strides() -> None:
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    np.testing.assert_array_equal(webnn.slice(x, [0, 1, 2], [2, 3, 3]), x[0:2, 1:4, 2:5])
    np.testing.assert_array_equal(
        webnn.slice(x, [0, 1, 0], [3, 3, 5], [2, 2, 3]), x[0:3:2, 1:4:2, 0:5:3]
    )


@pytest.mark.parametrize(
    "starts, sizes, strides, match",
    [
        ([0, 4], [1, 1], None, r"webnn\.slice: starts\[1\] is 4"),
        ([0, 0], [1, 0], None, r"sizes\[1\] is 0: must be at least 1"),
        ([0, 2], [1, 3], None, r"starts\[1\] \+ sizes\[1\] = 5 exceeds 4"),
        ([0, 0], [1, 1], [1, 0], r"strides\[1\] is 0"),
        ([0], [1], None, r"starts has 1 entries, input rank is 2"),
    ],
)
def test_slice_checks(starts, sizes, strides, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DmlError, match=match):
        webnn.slice(np.zeros((3, 4), np.float32), starts, sizes, strides)


def test_split_count_and_sizes() -> None:
    x = np.arange(24, dtype=np.int32).reshape(4, 6)
    assert [p.tolist() for p in webnn.split(x, 2)] == [x[:2].tolist(), x[2:].tolist()]
    parts = webnn.split(x, [1, 2, 3], axis=1)
    assert [p.shape for p in parts] == [(4, 1), (4, 2), (4, 3)]
    np.testing.assert_array_equal(np.concatenate(parts, axis=1), x)
    with pytest.raises(DmlError, match=r"webnn\.split: 6 does not divide into 4 equal parts"):
        webnn.split(x, 4, axis=1)
    with pytest.raises(DmlError, match=r"splits \[1, 2\] sum to 3, dimension 1 is 6"):
        webnn.split(x, [1, 2], axis=1)
    with pytest.raises(DmlError, match=r"axis 2 is outside \[0, 1\]"):
        webnn.split(x, 2, axis=2)


def test_concat() -> None:
    a, b = np.ones((2, 3), np.float16), np.zeros((2, 1), np.float16)
    np.testing.assert_array_equal(webnn.concat([a, b], 1), np.concatenate([a, b], 1))
    with pytest.raises(
        DmlError, match=r"webnn\.concat: inputs\[1\] has shape \[2, 1\], incompatible"
    ):
        webnn.concat([a, b], 0)
    with pytest.raises(DmlError, match=r"inputs\[1\] has data type float32"):
        webnn.concat([a, b.astype(np.float32)], 1)
    with pytest.raises(DmlError, match=r"inputs is empty"):
        webnn.concat([], 0)


# -- the whole data-movement set (#30) -------------------------------------------------------

import itertools  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conftest import BACKENDS, to_device, to_host  # noqa: E402

DTYPES = [np.float32, np.float16, np.int32, np.uint32, np.int8, np.uint8]
WIDE = [*DTYPES, np.int64, np.uint64]  # 64-bit data: DirectML's GATHER, SLICE1, TILE, PADDING1


def clamp(k: int, n: int) -> int:
    """WebNN: an index clamped into [-n, n - 1], then counted from the end if negative."""
    k = min(max(int(k), -n), n - 1)
    return k + n if k < 0 else k


def ref_gather(x, idx, axis):  # type: ignore[no-untyped-def]
    shape = x.shape[:axis] + idx.shape + x.shape[axis + 1 :]
    out = np.empty(shape, x.dtype)
    for c in itertools.product(*(range(n) for n in shape)):
        j = c[axis : axis + idx.ndim]
        out[c] = x[(*c[:axis], clamp(idx[j], x.shape[axis]), *c[axis + idx.ndim :])]
    return out


def ref_gather_elements(x, idx, axis):  # type: ignore[no-untyped-def]
    out = np.empty(idx.shape, x.dtype)
    for c in itertools.product(*(range(n) for n in idx.shape)):
        src = list(c)
        src[axis] = clamp(idx[c], x.shape[axis])
        out[c] = x[tuple(src)]
    return out


def ref_gather_nd(x, idx):  # type: ignore[no-untyped-def]
    k = idx.shape[-1]
    shape = idx.shape[:-1] + x.shape[k:]
    out = np.empty(shape, x.dtype)
    for c in itertools.product(*(range(n) for n in shape)):
        tup = [clamp(v, x.shape[t]) for t, v in enumerate(idx[c[: idx.ndim - 1]])]
        out[c] = x[(*tup, *c[idx.ndim - 1 :])]
    return out


def ref_scatter_elements(x, idx, upd, axis):  # type: ignore[no-untyped-def]
    out = x.copy()
    for c in itertools.product(*(range(n) for n in idx.shape)):
        dst = list(c)
        dst[axis] = clamp(idx[c], x.shape[axis])
        out[tuple(dst)] = upd[c]
    return out


def ref_scatter_nd(x, idx, upd):  # type: ignore[no-untyped-def]
    out = x.copy()
    for j in itertools.product(*(range(n) for n in idx.shape[:-1])):
        tup = [clamp(v, x.shape[t]) for t, v in enumerate(idx[j])]
        out[tuple(tup)] = upd[j]
    return out


def ref_pad(x, begin, end, mode, value):  # type: ignore[no-untyped-def]
    shape = tuple(n + b + e for n, b, e in zip(x.shape, begin, end, strict=True))
    out = np.empty(shape, x.dtype)
    for c in itertools.product(*(range(n) for n in shape)):
        src = []
        inside = True
        for i, n in zip([c[d] - begin[d] for d in range(len(c))], x.shape, strict=True):
            if 0 <= i < n:
                src.append(i)
            elif mode == "constant":
                inside = False
                break
            elif mode == "edge":
                src.append(min(max(i, 0), n - 1))
            else:  # reflection: mirrored about the edge elements
                src.append(-i if i < 0 else 2 * (n - 1) - i)
        out[c] = x[tuple(src)] if inside else np.asarray(value).astype(x.dtype)
    return out


def _bits(a):  # type: ignore[no-untyped-def]
    a = np.ascontiguousarray(a)
    return a.dtype, a.shape, a.view(np.uint8).tobytes()


def _data(draw, shape, dtype):  # type: ignore[no-untyped-def]
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return np.frombuffer(draw(st.binary(min_size=n, max_size=n)), dtype).reshape(shape).copy()


def _idx(draw, shape, low, high):  # type: ignore[no-untyped-def]
    itype = draw(st.sampled_from([np.int32, np.uint32, np.int64]))
    low = 0 if itype == np.uint32 else low
    n = int(np.prod(shape))
    return np.array(draw(st.lists(st.integers(low, high), min_size=n, max_size=n)), itype).reshape(
        shape
    )


small_shapes = st.lists(st.integers(1, 3), min_size=1, max_size=4).map(tuple)


def _on(backend, *arrays):  # type: ignore[no-untyped-def]
    if backend == "webgpu" and any(a.ndim == 0 for a in arrays):
        pytest.skip("WebGPU arrays have at least one dimension")
    return [to_device(backend, a) for a in arrays]


@pytest.fixture(params=BACKENDS)
def device(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), shape=small_shapes, ishape=st.lists(st.integers(1, 3), max_size=2))
def test_gather_property(device: str, data, shape, ishape) -> None:  # type: ignore[no-untyped-def]
    x = _data(data.draw, shape, data.draw(st.sampled_from(WIDE)))
    axis = data.draw(st.integers(0, len(shape) - 1))
    n = shape[axis]
    idx = _idx(data.draw, tuple(ishape), -2 * n - 1, 2 * n + 1)  # out of range too: clamped
    xs = _on(device, x, idx)
    got = to_host(webnn.gather(xs[0], xs[1], {"axis": axis}))
    assert _bits(got) == _bits(ref_gather(x, idx, axis))


@settings(max_examples=40, deadline=None)
@given(data=st.data(), shape=small_shapes)
def test_gather_elements_and_scatter_elements_property(device: str, data, shape) -> None:  # type: ignore[no-untyped-def]
    dtype = data.draw(st.sampled_from(DTYPES))
    x = _data(data.draw, shape, dtype)
    axis = data.draw(st.integers(0, len(shape) - 1))
    ishape = list(shape)
    ishape[axis] = data.draw(st.integers(1, 4))
    n = shape[axis]
    idx = _idx(data.draw, tuple(ishape), -n - 2, n + 2)
    upd = _data(data.draw, tuple(ishape), dtype)
    xs = _on(device, x, idx, upd)
    got = to_host(webnn.gatherElements(xs[0], xs[1], {"axis": axis}))
    assert _bits(got) == _bits(ref_gather_elements(x, idx, axis))
    got = to_host(webnn.scatterElements(xs[0], xs[1], xs[2], {"axis": axis}))
    assert _bits(got) == _bits(ref_scatter_elements(x, idx, upd, axis))


@settings(max_examples=40, deadline=None)
@given(data=st.data(), shape=small_shapes, lead=st.lists(st.integers(1, 3), max_size=2))
def test_gather_nd_and_scatter_nd_property(device: str, data, shape, lead) -> None:  # type: ignore[no-untyped-def]
    dtype = data.draw(st.sampled_from(DTYPES))
    x = _data(data.draw, shape, dtype)
    k = data.draw(st.integers(1, len(shape)))
    idx = np.stack(
        [_idx(data.draw, tuple(lead), -5, 5).astype(np.int64) for _ in range(k)], axis=-1
    ).astype(data.draw(st.sampled_from([np.int32, np.int64])))
    upd = _data(data.draw, tuple(lead) + shape[k:], dtype)
    xs = _on(device, x, idx, upd)
    assert _bits(to_host(webnn.gatherND(xs[0], xs[1]))) == _bits(ref_gather_nd(x, idx))
    got = to_host(webnn.scatterND(xs[0], xs[1], xs[2]))
    assert _bits(got) == _bits(ref_scatter_nd(x, idx, upd))


@settings(max_examples=40, deadline=None)
@given(data=st.data(), shape=small_shapes)
def test_movement_ops_property(device: str, data, shape) -> None:  # type: ignore[no-untyped-def]
    x = _data(data.draw, shape, data.draw(st.sampled_from(WIDE)))
    rank = len(shape)
    (xd,) = _on(device, x)
    reps = data.draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    assert _bits(to_host(webnn.tile(xd, reps))) == _bits(np.tile(x, reps))
    axes = data.draw(st.none() | st.lists(st.integers(0, rank - 1), unique=True))
    flipped = x if axes == [] else np.flip(x, axis=None if axes is None else tuple(axes))
    opts = {} if axes is None else {"axes": axes}
    assert _bits(to_host(webnn.reverse(xd, opts))) == _bits(flipped)
    perm = data.draw(st.permutations(range(rank)))
    assert _bits(to_host(webnn.transpose(xd, {"permutation": perm}))) == _bits(
        np.transpose(x, perm)
    )
    assert _bits(to_host(webnn.transpose(xd))) == _bits(x.T)
    new = [int(np.prod(shape))]
    assert _bits(to_host(webnn.reshape(xd, new))) == _bits(x.reshape(new))
    target = list(data.draw(st.lists(st.integers(1, 2), max_size=2))) + [
        data.draw(st.sampled_from([n, 2])) if n == 1 else n for n in shape
    ]
    assert _bits(to_host(webnn.expand(xd, target))) == _bits(np.broadcast_to(x, target))
    mode = data.draw(st.sampled_from(["constant", "edge", "reflection"]))
    limit = [n - 1 if mode == "reflection" else 2 for n in shape]
    begin = [data.draw(st.integers(0, m)) for m in limit]
    end = [data.draw(st.integers(0, m)) for m in limit]
    value = data.draw(st.integers(0, 5))
    got = to_host(webnn.pad(xd, begin, end, {"mode": mode, "value": value}))
    assert _bits(got) == _bits(ref_pad(x, begin, end, mode, value))


def test_zero_d_tensors_wherever_webnn_allows_them() -> None:
    s = np.array(7.5, np.float32)
    for result in (
        webnn.slice(s, [], []),
        webnn.tile(s, []),
        webnn.pad(s, [], []),
        webnn.reverse(s),
        webnn.reverse(s, {"axes": []}),
        webnn.transpose(s),
        webnn.reshape(np.array([7.5], np.float32), []),
    ):
        assert result.shape == () and result.tolist() == 7.5
    assert webnn.expand(s, [2, 3]).tolist() == [[7.5] * 3] * 2
    assert webnn.reshape(s, [1, 1]).shape == (1, 1)
    x = np.array([10, 11, 12], np.int8)
    assert webnn.gather(x, np.array(1, np.int32)).shape == ()  # 0-D indices, 0-D output
    assert webnn.gather(x, np.array(-1, np.int64)).tolist() == 12
    assert webnn.gatherND(x, np.array([2], np.int32)).shape == ()
    out = webnn.scatterND(x, np.array([0], np.int32), np.array(5, np.int8))
    assert out.tolist() == [5, 11, 12]


def test_torch_tensors_in_torch_tensors_out(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    from dmlops import calls

    # as after a CUDA call taught the cache torch's key: CPU tensors decline a key
    monkeypatch.setitem(
        calls._ARRAY_KEYS, torch.Tensor, lambda t: (t.shape,) if t.is_cuda else None
    )
    x = torch.arange(6, dtype=torch.float16).reshape(2, 3)
    for result in (
        webnn.tile(x, [1, 2]),
        webnn.pad(x, [1, 0], [0, 1], {"mode": "edge"}),
        webnn.gather(x, torch.tensor([1, 5]), {"axis": 1}),
        webnn.scatterND(x, torch.tensor([[1]]), torch.zeros(1, 3, dtype=torch.float16)),
        webnn.transpose(x),
        webnn.expand(x[0], [2, 3]),
    ):
        assert isinstance(result, torch.Tensor)
    assert webnn.gather(x, torch.tensor([1, 5]), {"axis": 1}).tolist() == [[1, 2], [4, 5]]


VALIDATION = [
    (
        lambda: webnn.gather(np.zeros(3, np.float32), np.zeros(1, np.float32)),
        "webnn.gather: indices's data type float32 is not one of int32, uint32, int64",
    ),
    (
        lambda: webnn.gather(np.zeros(3, np.float64), np.zeros(1, np.int32)),
        "webnn.gather: input's data type float64 is not one of",
    ),
    (
        lambda: webnn.gather(np.array(1.0, np.float32), np.zeros(1, np.int32)),
        "webnn.gather: input is a scalar (0-D)",
    ),
    (
        lambda: webnn.gather(np.zeros((2, 3), np.float32), np.zeros(1, np.int32), {"axis": 2}),
        "webnn.gather: options.axis 2 is outside [0, 1]",
    ),
    (
        lambda: webnn.gatherElements(np.zeros((2, 3), np.float32), np.zeros((2,), np.int32)),
        "webnn.gatherElements: indices has rank 1, input 2",
    ),
    (
        lambda: webnn.gatherElements(np.zeros((2, 3), np.float32), np.zeros((2, 2), np.int32)),
        "webnn.gatherElements: indices' dimension 1 is 2, input's 3",
    ),
    (
        lambda: webnn.gatherND(np.zeros((2, 3), np.float32), np.zeros((1, 3), np.int32)),
        "webnn.gatherND: indices' last dimension is 3: must be in [1, 2]",
    ),
    (
        lambda: webnn.gatherND(np.zeros((2, 3), np.float32), np.array(0, np.int32)),
        "webnn.gatherND: indices is a scalar (0-D)",
    ),
    (
        lambda: webnn.scatterElements(
            np.zeros(3, np.float32), np.zeros(2, np.int32), np.zeros(2, np.float16)
        ),
        "webnn.scatterElements: updates' data type float16 is not input's float32",
    ),
    (
        lambda: webnn.scatterElements(
            np.zeros(3, np.float32), np.zeros(2, np.int32), np.zeros(3, np.float32)
        ),
        "webnn.scatterElements: updates' shape [3] is not indices' [2]",
    ),
    (
        lambda: webnn.scatterND(
            np.zeros((2, 3), np.float32), np.zeros((1, 1), np.int32), np.zeros((1, 2), np.float32)
        ),
        "webnn.scatterND: updates' shape [1, 2] must be [1, 3]",
    ),
    (
        lambda: webnn.expand(np.zeros((2, 3), np.float32), [3]),
        "webnn.expand: newShape [3] has fewer dimensions than the input's [2, 3]",
    ),
    (
        lambda: webnn.expand(np.zeros((2, 3), np.float32), [4, 3]),
        "webnn.expand: input shape [2, 3] does not broadcast to newShape [4, 3] (dimension 0",
    ),
    (
        lambda: webnn.tile(np.zeros((2, 3), np.float32), [1]),
        "webnn.tile: repetitions has 1 entries, input rank is 2",
    ),
    (
        lambda: webnn.tile(np.zeros((2, 3), np.float32), [1, 0]),
        "webnn.tile: repetitions[1] is 0: must be at least 1",
    ),
    (
        lambda: webnn.pad(np.zeros(3, np.float32), [1], [1], {"mode": "symmetric"}),
        "webnn.pad: options.mode 'symmetric' is not 'constant', 'edge' or 'reflection'",
    ),
    (
        lambda: webnn.pad(np.zeros(3, np.float32), [3], [0], {"mode": "reflection"}),
        "webnn.pad: beginningPadding[0] is 3: reflection needs it below the input's size 3",
    ),
    (
        lambda: webnn.pad(np.zeros(3, np.float32), [1, 1], [0]),
        "webnn.pad: beginningPadding has 2 entries, input rank is 1",
    ),
    (
        lambda: webnn.pad(np.zeros(3, np.float32), [0], [-1]),
        "webnn.pad: endingPadding[0] is -1: must be at least 0",
    ),
    (
        lambda: webnn.reverse(np.zeros((2, 3), np.float32), {"axes": [2]}),
        "webnn.reverse: options.axes[0] 2 is outside [0, 1]",
    ),
    (
        lambda: webnn.reverse(np.zeros((2, 3), np.float32), {"axes": [1, 1]}),
        "webnn.reverse: options.axes [1, 1] names an axis twice",
    ),
    (
        lambda: webnn.transpose(np.zeros((2, 3), np.float32), {"permutation": [0]}),
        "webnn.transpose: options.permutation has 1 entries, input rank is 2",
    ),
    (
        lambda: webnn.transpose(np.zeros((2, 3), np.float32), {"permutation": [1, 1]}),
        "webnn.transpose: options.permutation [1, 1] is not a permutation of 0..1",
    ),
    (
        lambda: webnn.reshape(np.zeros((2, 3), np.float32), [4]),
        "webnn.reshape: newShape [4] holds 4 elements, the input 6",
    ),
    (
        lambda: webnn.reshape(np.zeros((2, 3), np.float32), [6, 0]),
        "webnn.reshape: newShape [6, 0]: every dimension must be at least 1",
    ),
    (
        lambda: webnn.split(np.zeros(4, np.float32), 2, {"axis": 1}),
        "webnn.split: options.axis 1 is outside [0, 0]",
    ),
    (
        lambda: webnn.slice(np.array(1.0, np.float32), [0], [1]),
        "webnn.slice: starts has 1 entries, input rank is 0",
    ),
    (
        lambda: webnn.concat([np.zeros(2, np.float32), np.zeros(2, np.int32)], 0),
        "webnn.concat: inputs[1] has data type int32, inputs[0] float32",
    ),
    (
        lambda: webnn.gather(np.zeros(3, np.float32), np.zeros(1, np.int32), [0]),
        "webnn.gather: options must be a dictionary, not list",
    ),
]


@pytest.mark.parametrize(("call", "message"), VALIDATION)
def test_every_validation_step_fires(call, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DmlError) as info:
        call()
    assert message in str(info.value), str(info.value)


def test_64_bit_data_moves_where_directml_has_no_64_bit_table() -> None:
    x = np.array([[2**62 + 3, -(2**40)], [-1, 2**33 + 7]], np.int64)
    got = webnn.gatherElements(x, np.array([[1, 0], [0, 0]], np.int32))
    assert got.dtype == np.int64
    assert got.tolist() == [[-1, -(2**40)], [2**62 + 3, -(2**40)]]
    assert webnn.gather(x, np.zeros(1, np.int32)).dtype == np.int64  # GATHER has 4_1's row


# -- the specification's own examples ----------------------------------------------------------

SPEC_INPUT = np.array([[0, 1, 2], [10, 11, 12], [20, 21, 22], [30, 31, 32]], np.float32)


def test_spec_examples_gather(device: str) -> None:
    x = to_device(device, SPEC_INPUT)
    u32 = np.uint32
    assert to_host(webnn.gather(x, to_device(device, np.array([3, 1], u32)))).tolist() == [
        [30, 31, 32], [10, 11, 12]]  # fmt: skip
    got = webnn.gather(x, to_device(device, np.array([2, 1, 1], u32)), {"axis": 1})
    assert to_host(got).tolist() == [[2, 1, 1], [12, 11, 11], [22, 21, 21], [32, 31, 31]]
    got = webnn.gather(x, to_device(device, np.array([[0, 1], [1, 2]], u32)), {"axis": 1})
    assert to_host(got).tolist() == [
        [[0, 1], [1, 2]], [[10, 11], [11, 12]], [[20, 21], [21, 22]], [[30, 31], [31, 32]]]  # fmt: skip


def test_spec_examples_gather_elements(device: str) -> None:
    x = to_device(device, SPEC_INPUT)
    u32 = np.uint32
    got = webnn.gatherElements(x, to_device(device, np.array([[3, 1, 1], [2, 0, 3]], u32)))
    assert to_host(got).tolist() == [[30, 11, 12], [20, 1, 32]]
    got = webnn.gatherElements(
        x, to_device(device, np.array([[2], [1], [0], [2]], u32)), {"axis": 1}
    )
    assert to_host(got).tolist() == [[2], [11], [20], [32]]
    data3 = [0, 1, 10, 11, 100, 101, 110, 111, 200, 201, 210, 211, 300, 301, 310, 311]
    x3 = to_device(device, np.array(data3, np.float32).reshape(4, 2, 2))
    got = webnn.gatherElements(
        x3, to_device(device, np.array([[[0, 2], [1, 3]]], u32)), {"axis": 0}
    )
    assert to_host(got).tolist() == [[[0, 201], [110, 311]]]


def test_spec_examples_gather_nd(device: str) -> None:
    u32 = np.uint32
    x1 = to_device(device, np.array([[0, 1], [2, 3]], np.float32))
    x2 = to_device(device, np.arange(8, dtype=np.float32).reshape(2, 2, 2))

    def nd(x, idx):  # type: ignore[no-untyped-def]
        return to_host(webnn.gatherND(x, to_device(device, np.array(idx, u32)))).tolist()

    assert nd(x1, [[0, 0], [1, 1], [1, 0]]) == [0, 3, 2]
    assert nd(x1, [[1], [0]]) == [[2, 3], [0, 1]]
    assert nd(x2, [[0, 1], [1, 0]]) == [[2, 3], [4, 5]]
    assert nd(x2, [[1], [0], [1]]) == [[[4, 5], [6, 7]], [[0, 1], [2, 3]], [[4, 5], [6, 7]]]
    assert nd(x2, [[0, 0, 1], [0, 1, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1]]) == [1, 2, 4, 6, 7]


def test_spec_examples_scatter_elements(device: str) -> None:
    x = to_device(device, SPEC_INPUT)
    u32, f32 = np.uint32, np.float32
    idx = to_device(device, np.array([[3, 1, 1], [2, 0, 3]], u32))
    upd = to_device(device, np.array([[-1, -2, -3], [-4, -5, -6]], f32))
    assert to_host(webnn.scatterElements(x, idx, upd)).tolist() == [
        [0, -5, 2], [10, -2, -3], [-4, 21, 22], [-1, 31, -6]]  # fmt: skip
    idx = to_device(device, np.array([[2], [1], [0], [2]], u32))
    upd = to_device(device, np.array([[-1], [-2], [-3], [-4]], f32))
    assert to_host(webnn.scatterElements(x, idx, upd, {"axis": 1})).tolist() == [
        [0, 1, -1], [10, -2, 12], [-3, 21, 22], [30, 31, -4]]  # fmt: skip
    data3 = [0, 1, 10, 11, 100, 101, 110, 111, 200, 201, 210, 211, 300, 301, 310, 311]
    x3 = to_device(device, np.array(data3, f32).reshape(4, 2, 2))
    idx = to_device(device, np.array([[[0, 2], [1, 3]]], u32))
    upd = to_device(device, np.array([[[-1, -2], [-3, -4]]], f32))
    assert to_host(webnn.scatterElements(x3, idx, upd, {"axis": 0})).tolist() == [
        [[-1, 1], [10, 11]], [[100, 101], [-3, 111]], [[200, -2], [210, 211]],
        [[300, 301], [310, -4]]]  # fmt: skip


def test_spec_examples_scatter_nd(device: str) -> None:
    u32, f32 = np.uint32, np.float32
    x = to_device(device, np.arange(8, dtype=f32))
    idx = to_device(device, np.array([[4], [3], [1], [7]], u32))
    upd = to_device(device, np.array([-1, -2, -3, -4], f32))
    assert to_host(webnn.scatterND(x, idx, upd)).tolist() == [0, -3, 2, -2, -1, 5, 6, -4]
    x2 = to_device(device, np.array([[0, 1], [2, 3]], f32))
    idx = to_device(device, np.array([[0, 0], [1, 1]], u32))
    upd = to_device(device, np.array([-1, -2], f32))
    assert to_host(webnn.scatterND(x2, idx, upd)).tolist() == [[-1, 1], [2, -2]]


WPT_NEAREST = [  # web-platform-tests' resample2d-nearest-half-pixel cases
    ([10, 20, 30], {"scales": [1, 1.5]}, [10, 20, 20, 30]),
    ([10, 20, 30, 40], {"scales": [1, 0.75]}, [10, 20, 40]),
    ([10, 20, 30, 40, 50], {"sizes": [1, 2]}, [20, 40]),
    ([10, 20], {"sizes": [1, 3]}, [10, 10, 20]),
    ([10, 20, 30], {"sizes": [1, 1]}, [20]),
    ([10], {"sizes": [1, 4]}, [10, 10, 10, 10]),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("data", "options", "want"), WPT_NEAREST)
def test_resample2d_nearest_half_pixel_as_the_conformance_tests(
    backend: str, data: list[int], options: dict[str, Any], want: list[int]
) -> None:
    x = np.array(data, np.float16).reshape(1, 1, 1, -1)
    got = to_host(webnn.resample2d(to_device(backend, x), options))
    assert got.reshape(-1).tolist() == want
    nhwc = {**options, "axes": [1, 2]}
    got = to_host(webnn.resample2d(to_device(backend, x.reshape(1, 1, -1, 1)), nhwc))
    assert got.reshape(-1).tolist() == want


@pytest.mark.parametrize("backend", BACKENDS)
def test_resample2d_nearest_whole_factors_in_both_layouts(backend: str) -> None:
    x = np.arange(2 * 3 * 2 * 4, dtype=np.float32).reshape(2, 3, 2, 4)
    up = webnn.resample2d(to_device(backend, x), {"scales": [2.0, 3.0]})
    assert to_host(up).tobytes() == x.repeat(2, 2).repeat(3, 3).tobytes()
    sized = webnn.resample2d(to_device(backend, x), {"sizes": [4, 8]})
    assert to_host(sized).tobytes() == x.repeat(2, 2).repeat(2, 3).tobytes()
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    got = webnn.resample2d(to_device(backend, nhwc), {"scales": [2, 2], "axes": [1, 2]})
    assert to_host(got).tobytes() == nhwc.repeat(2, 1).repeat(2, 2).tobytes()
    for options, match in (
        ({"mode": "linear"}, "interpolates"),
        ({"axes": [0, 1]}, r"options\.axes"),
        ({"scales": [0.1, 1.0]}, r"output's sizes \[2, 3, 0, 4\] are empty"),
    ):
        with pytest.raises(DmlError, match=match):
            webnn.resample2d(to_device(backend, x), options)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cast_to_every_type(backend: str) -> None:
    x = np.array([[1.5, -2.5], [300.0, np.nan]], np.float32)
    for name in webnn.DATA_TYPES:
        kind = np.dtype(name)
        got = to_host(webnn.cast(to_device(backend, x), name))
        if kind.kind == "f":
            assert got.dtype == kind and np.array_equal(got, x.astype(kind), equal_nan=True)
        else:
            info = np.iinfo(kind)
            low = 0 if kind.kind == "u" else -2  # (-2.5 truncates to -2; unsigned saturate at 0)
            want = [[1, low], [min(300, int(info.max)), 0]]
            assert got.dtype == kind and got.tolist() == want
    scalar = webnn.cast(np.float32(7.9), "int32")
    assert np.asarray(to_host(scalar)).shape == () and int(to_host(scalar)) == 7
    with pytest.raises(DmlError, match=r"webnn\.cast: type 'bool' is not one of"):
        webnn.cast(x, "bool")
