"""Outputs that overlap inputs: numpy's answer in the functional API, a BindingError in the
device API; non-overlapping views of one buffer are neither refused nor staged."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dmlops
from conftest import to_device, to_host
from dmlops import Binding, BindingError, BufferTensorDesc, DataType, Device, Slice1Desc
from dmlops.backends import get_backend
from reference import apply_to_arrays, join_mapping, slice1_mapping, split_mapping

F32 = DataType.FLOAT32
SIDE = 8  # the shared buffer is an 8x8 backing


def _bits(a):  # type: ignore[no-untyped-def]
    return a.view(f"u{a.itemsize}")


def test_the_three_reported_cases(backend: str) -> None:
    n = 1 << 14
    x = to_device(backend, np.arange(n, dtype=np.float32).reshape(64, -1))
    want = to_host(x)[:, ::-1].copy()
    dmlops.slice1(x, [0, 0], list(x.shape), [1, -1], out=x)
    np.testing.assert_array_equal(to_host(x), want)

    y = to_device(backend, np.arange(n, dtype=np.float32))
    want = to_host(y)[1:].copy()
    dmlops.slice(y[1:], [0], [n - 1], [1], out=y[:-1])
    np.testing.assert_array_equal(to_host(y)[:-1], want)

    z = to_device(backend, np.arange(n, dtype=np.float32))
    host = to_host(z)
    want = np.concatenate([host[n // 2 :], host[: n // 2]])
    dmlops.join([z[n // 2 :], z[: n // 2]], 0, out=z)
    np.testing.assert_array_equal(to_host(z), want)


# --- random views of one buffer ------------------------------------------------------


@st.composite
def axis_run(draw, n: int):  # type: ignore[no-untyped-def]
    """(start, step) of n elements along one axis of the backing."""
    steps = [s for s in (1, 2, 3, -1, -2, -3) if (n - 1) * abs(s) < SIDE]
    step = draw(st.sampled_from(steps))
    reach = (n - 1) * abs(step)
    first = draw(st.integers(0, SIDE - 1 - reach))
    return (first + reach if step < 0 else first), step


@st.composite
def view_spec(draw, shape):  # type: ignore[no-untyped-def]
    """How to cut a view of `shape` (2-D) from the backing: maybe transposed, stepped, reversed."""
    transpose = draw(st.booleans())
    rows, cols = (shape[1], shape[0]) if transpose else (shape[0], shape[1])
    return transpose, (rows, *draw(axis_run(rows))), (cols, *draw(axis_run(cols)))


def cut(backing, spec):  # type: ignore[no-untyped-def]
    transpose, (rn, r0, rs), (cn, c0, cs) = spec
    rstop = r0 + rn * rs
    cstop = c0 + cn * cs
    v = backing[r0 : (None if rstop < 0 else rstop) : rs, c0 : (None if cstop < 0 else cstop) : cs]
    return v.T if transpose else v


@st.composite
def overlapping_case(draw):  # type: ignore[no-untyped-def]
    op = draw(st.sampled_from(["slice1", "join", "split"]))
    if op == "slice1":
        h, w = draw(st.integers(1, SIDE)), draw(st.integers(1, SIDE))
        offs = [draw(st.integers(0, h - 1)), draw(st.integers(0, w - 1))]
        sizes = [draw(st.integers(1, h - offs[0])), draw(st.integers(1, w - offs[1]))]
        strides = [draw(st.sampled_from([1, 2, -1, -2])) for _ in range(2)]
        out_shape = [1 + (s - 1) // abs(t) for s, t in zip(sizes, strides)]
        ins = [draw(view_spec((h, w)))]
        outs = [draw(view_spec(out_shape))]
        return op, (offs, sizes, strides, out_shape), ins, outs
    w = draw(st.integers(1, SIDE))
    h1 = draw(st.integers(1, SIDE - 1))
    h2 = draw(st.integers(1, SIDE - h1))
    parts = [draw(view_spec((h1, w))), draw(view_spec((h2, w)))]
    whole = draw(view_spec((h1 + h2, w)))
    if op == "join":
        return op, (h1, h2), parts, [whole]
    return op, (h1, h2), [whole], parts


@given(case=overlapping_case(), seed=st.integers(0, 2**32 - 1))
def test_views_of_one_buffer_give_numpys_answer(backend: str, case, seed: int) -> None:  # type: ignore[no-untyped-def]
    op, args, in_specs, out_specs = case
    rng = np.random.default_rng(seed)
    host = rng.integers(0, 2**32, SIDE * SIDE, dtype=np.uint32).view(np.float32)
    buf = to_device(backend, host.copy())
    backing = buf.reshape(SIDE, SIDE)
    ins = [cut(backing, s) for s in in_specs]
    outs = [cut(backing, s) for s in out_specs]

    expected = host.copy()
    exp_backing = expected.reshape(SIDE, SIDE)
    src = [cut(host.reshape(SIDE, SIDE), s).copy() for s in in_specs]  # read before any write
    dst = [cut(exp_backing, s) for s in out_specs]
    results = [np.empty(d.shape, np.float32) for d in dst]
    if op == "slice1":
        offs, sizes, strides, out_shape = args
        mapping = slice1_mapping(offs, sizes, strides, out_shape)
    elif op == "join":
        mapping = join_mapping([list(s.shape) for s in src], 0)
    else:
        mapping = split_mapping([list(d.shape) for d in dst], 0)
    apply_to_arrays(mapping, [_bits(s) for s in src], [_bits(r) for r in results])
    outputs_meet = len(dst) == 2 and np.shares_memory(dst[0], dst[1])
    for d, r in zip(dst, results):
        d[...] = r

    if op == "slice1":
        call = lambda: dmlops.slice1(ins[0], offs, sizes, strides, out=outs[0])  # noqa: E731
    elif op == "join":
        call = lambda: dmlops.join(ins, 0, out=outs[0])  # noqa: E731
    else:
        call = lambda: dmlops.split(ins[0], 0, list(args), outs=outs)  # noqa: E731
    if outputs_meet:
        with pytest.raises(BindingError, match=r"outputs 0 and 1 share memory"):
            call()
        assert _bits(to_host(buf)).tobytes() == _bits(host).tobytes()
        return
    call()
    np.testing.assert_array_equal(_bits(to_host(buf)), _bits(expected))


def test_non_overlapping_views_are_not_staged(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = get_backend(backend)
    staged: list[object] = []
    original = b.copy_of
    monkeypatch.setattr(b, "copy_of", lambda a: (staged.append(a), original(a))[1])
    buf = to_device(backend, np.arange(64, dtype=np.float32))
    dmlops.slice(buf[::2], [0], [32], [1], out=buf[1::2])  # interleaved: spans meet, elements not
    dmlops.slice(buf[:32], [0], [32], [1], out=buf[32:])  # halves
    dmlops.join([buf[:8], buf[8:16]], 0, out=buf[48:])
    dmlops.split(buf[:16], 0, [8, 8], outs=[buf[16:24], buf[24:32]])
    assert staged == []
    dmlops.slice(buf[1:], [0], [63], [1], out=buf[:-1])
    assert len(staged) == 1


# --- the device API refuses -----------------------------------------------------------


def _reverse_op(backend: str, n: int = 4):  # type: ignore[no-untyped-def]
    desc = Slice1Desc(BufferTensorDesc(F32, [n]), BufferTensorDesc(F32, [n]), [0], [n], [-1])
    return Device(backend=backend).create_operator(desc)


def test_device_api_refuses_overlapping_bindings(backend: str) -> None:
    op = _reverse_op(backend)
    buf = to_device(backend, np.arange(8, dtype=np.float32))
    before = to_host(buf).copy()
    with pytest.raises(
        BindingError,
        match=r"^SLICE1\.OutputTensor binding overlaps SLICE1\.InputTensor binding: "
        r"its bytes \[0, 16\) are also read",
    ):
        op.execute([buf], [buf])
    with pytest.raises(BindingError, match=r"its bytes \[0, 8\) are also read"):
        op.bind([Binding(buf, 0, 16)], [Binding(buf, 8, 16)])
    np.testing.assert_array_equal(to_host(buf), before)
    op.execute([Binding(buf, 0, 16)], [Binding(buf, 16, 16)])  # the same buffer, apart
    np.testing.assert_array_equal(to_host(buf), [0, 1, 2, 3, 3, 2, 1, 0])


def test_device_api_refuses_outputs_that_meet(backend: str) -> None:
    desc = dmlops.SplitDesc(
        BufferTensorDesc(F32, [4]), [BufferTensorDesc(F32, [2]), BufferTensorDesc(F32, [2])], 0
    )
    op = Device(backend=backend).create_operator(desc)
    x = to_device(backend, np.arange(4, dtype=np.float32))
    out = to_device(backend, np.zeros(4, dtype=np.float32))
    with pytest.raises(
        BindingError, match=r"OutputTensors\[1\] binding overlaps OutputTensors\[0\]"
    ):
        op.execute([x], [Binding(out, 0, 8), Binding(out, 4, 8)])
    op.execute([x], [Binding(out, 0, 8), Binding(out, 8, 8)])
    np.testing.assert_array_equal(to_host(out), [0, 1, 2, 3])


def test_device_api_interleaved_strided_bindings_are_apart(backend: str) -> None:
    # input: even elements, output: odd elements of one buffer, through tensor strides
    desc = Slice1Desc(
        BufferTensorDesc(F32, [4], [2]), BufferTensorDesc(F32, [4], [2]), [0], [4], [-1]
    )
    op = Device(backend=backend).create_operator(desc)
    buf = to_device(backend, np.arange(8, dtype=np.float32))
    op.execute([Binding(buf, 0, 28)], [Binding(buf, 4, 28)])
    np.testing.assert_array_equal(to_host(buf), [0, 6, 2, 4, 4, 2, 6, 0])


def test_many_bindings_are_checked_by_loop_or_vectorised(backend: str) -> None:
    """Many outputs (or one output and more than 255 inputs) take the vectorised overlap
    test; one output and fewer inputs a loop over their spans: both stage what meets."""
    host = np.arange(400, dtype=np.float32)
    buf = to_device(backend, host.copy())
    # 20 outputs, the first of which overlaps the input's tail
    dmlops.split(
        buf[:200], 0, [10] * 20, outs=[buf[190 + 10 * k : 200 + 10 * k] for k in range(20)]
    )
    np.testing.assert_array_equal(to_host(buf)[190:390], host[:200])
    with pytest.raises(BindingError, match=r"outputs 0 and 1 share memory"):
        dmlops.split(
            buf[:200], 0, [10] * 20, outs=[buf[200 + 5 * k : 210 + 5 * k] for k in range(20)]
        )
    # 20 inputs, the last of which the output overwrites first
    parts = [buf[10 * k : 10 * k + 10] for k in range(20)]
    before = to_host(buf).copy()
    dmlops.join(parts[::-1], 0, out=buf[:200])
    np.testing.assert_array_equal(
        to_host(buf)[:200],
        np.concatenate([before[10 * k : 10 * k + 10] for k in range(19, -1, -1)]),
    )
    # 300 inputs of one element, the output overwriting them in reverse: vectorised
    many = to_device(backend, host[:300].copy())
    dmlops.join([many[k : k + 1] for k in range(299, -1, -1)], 0, out=many[:300])
    np.testing.assert_array_equal(to_host(many), host[:300][::-1])
    # again, warm (the call's many-span test, not the first call's exact one), then apart
    many = to_device(backend, host[:300].copy())
    dmlops.join([many[k : k + 1] for k in range(299, -1, -1)], 0, out=many[:300])
    np.testing.assert_array_equal(to_host(many), host[:300][::-1])
    pieces = [to_device(backend, host[k : k + 1].copy()) for k in range(300)]
    apart = to_device(backend, np.zeros(300, host.dtype))
    for _ in range(2):
        dmlops.join(pieces, 0, out=apart)
        np.testing.assert_array_equal(to_host(apart), host[:300])


_SPAN = st.tuples(st.integers(0, 64), st.integers(0, 16), st.integers(0, 16)).map(
    lambda t: (t[0], min(t[1], t[2]), max(t[1], t[2]))
)


@given(st.lists(_SPAN, max_size=12), st.lists(_SPAN, max_size=6))
def test_spans_meet_is_any_shared_byte(reads, writes) -> None:  # type: ignore[no-untyped-def]
    """Spans given as (binding, low, high) with each binding's address (spans at one address
    share a binding; one write span or several), against a byte-by-byte reference: the
    Python loop and the vectorised test of many spans alike."""
    from dmlops.overlap import ManySpans, spans_meet

    def cells(span):  # type: ignore[no-untyped-def]
        at, lo, hi = span
        return set(range(at + lo, at + hi))

    written = [cells(w) for w in writes]
    want = any(cells(r) & w for r in reads for w in written) or any(
        written[i] & written[j] for i in range(len(written)) for j in range(i)
    )

    def as_bindings(spans):  # type: ignore[no-untyped-def]
        addresses = sorted({at for at, _, _ in spans})
        return [(addresses.index(at), lo, hi) for at, lo, hi in spans], addresses

    read_spans, in_addresses = as_bindings(reads)
    write_spans, out_addresses = as_bindings(writes)
    assert spans_meet(read_spans, in_addresses, write_spans, out_addresses) == want
    assert ManySpans(read_spans, write_spans)(in_addresses, out_addresses) == want
