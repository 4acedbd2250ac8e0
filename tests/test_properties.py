"""Property tests: every operator, data type, rank and layout against the naive reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import dmlops
from conftest import to_device, to_host
from dmlops import Binding, Device, JoinDesc, Slice1Desc, SliceDesc, SplitDesc
from dmlops.tensor import DataType
from reference import (
    apply_to_arrays,
    apply_to_buffers,
    join_mapping,
    slice1_mapping,
    slice_mapping,
    split_mapping,
)
from strategies import DATA_TYPES, shapes, tensor

# --- descriptor strategies (each returns the desc and the reference mapping) ----------


@st.composite
def slice_case(draw):  # type: ignore[no-untyped-def]
    dt = draw(st.sampled_from(DATA_TYPES))
    in_sizes = draw(shapes())
    offsets, sizes, strides = [], [], []
    for n in in_sizes:
        stride = draw(st.integers(1, 3))
        off = draw(st.integers(0, n - 1))
        size = draw(st.integers(1, 1 + (n - 1 - off) // stride))
        offsets.append(off)
        sizes.append(size)
        strides.append(stride)
    desc = SliceDesc(
        draw(tensor(dt, in_sizes)), draw(tensor(dt, sizes, output=True)), offsets, sizes, strides
    )
    return desc, slice_mapping(offsets, strides, sizes)


@st.composite
def slice1_case(draw):  # type: ignore[no-untyped-def]
    dt = draw(st.sampled_from(DATA_TYPES))
    in_sizes = draw(shapes())
    offs, wsizes, wstrides, out_sizes = [], [], [], []
    for n in in_sizes:
        off = draw(st.integers(0, n - 1))
        size = draw(st.integers(1, n - off))
        stride = draw(st.integers(1, 3)) * draw(st.sampled_from([1, -1]))
        most = 1 + (size - 1) // abs(stride)
        offs.append(off)
        wsizes.append(size)
        wstrides.append(stride)
        out_sizes.append(draw(st.integers(1, most)))
    desc = Slice1Desc(
        draw(tensor(dt, in_sizes)), draw(tensor(dt, out_sizes, output=True)), offs, wsizes, wstrides
    )
    return desc, slice1_mapping(offs, wsizes, wstrides, out_sizes)


@st.composite
def _pieces(draw):  # type: ignore[no-untyped-def]
    dt = draw(st.sampled_from(DATA_TYPES))
    whole = draw(shapes())
    axis = draw(st.integers(0, len(whole) - 1))
    total = whole[axis]
    cuts = sorted(draw(st.sets(st.integers(1, total - 1), max_size=3))) if total > 1 else []
    bounds = [0, *cuts, total]
    parts = [b - a for a, b in zip(bounds[:-1], bounds[1:])]
    piece_sizes = [[p if d == axis else n for d, n in enumerate(whole)] for p in parts]
    return dt, whole, axis, piece_sizes


@st.composite
def split_case(draw):  # type: ignore[no-untyped-def]
    dt, whole, axis, piece_sizes = draw(_pieces())
    outs = [draw(tensor(dt, s, output=True)) for s in piece_sizes]
    desc = SplitDesc(draw(tensor(dt, whole)), outs, axis)
    return desc, split_mapping(piece_sizes, axis)


@st.composite
def join_case(draw):  # type: ignore[no-untyped-def]
    dt, whole, axis, piece_sizes = draw(_pieces())
    ins = [draw(tensor(dt, s)) for s in piece_sizes]
    desc = JoinDesc(ins, draw(tensor(dt, whole, output=True)), axis)
    return desc, join_mapping(piece_sizes, axis)


any_case = st.one_of(slice_case(), slice1_case(), split_case(), join_case())


# --- the Device API over raw buffers --------------------------------------------------


@given(
    case=any_case,
    seed=st.integers(0, 2**32 - 1),
    offsets=st.lists(st.integers(0, 3), min_size=8, max_size=8),
)
def test_device_matches_reference(backend: str, case, seed: int, offsets: list[int]) -> None:  # type: ignore[no-untyped-def]
    desc, mapping = case
    rng = np.random.default_rng(seed)
    es = desc.data_type.element_size
    ins_t = [t for _, t in desc.input_fields()]
    outs_t = [t for _, t in desc.output_fields()]
    # each binding sits at a byte offset (a multiple of 16) inside a larger buffer
    in_pre = [16 * offsets[i % 8] for i in range(len(ins_t))]
    out_pre = [16 * offsets[(i + 3) % 8] for i in range(len(outs_t))]
    in_bufs = [
        rng.integers(0, 256, p + t.total_tensor_size_in_bytes, dtype=np.uint8)
        for p, t in zip(in_pre, ins_t)
    ]
    out_bufs = [
        rng.integers(0, 256, p + t.total_tensor_size_in_bytes + 8, dtype=np.uint8)
        for p, t in zip(out_pre, outs_t)
    ]

    expected = [bytearray(b.tobytes()[p:]) for b, p in zip(out_bufs, out_pre)]
    apply_to_buffers(
        mapping,
        es,
        [b.tobytes()[p:] for b, p in zip(in_bufs, in_pre)],
        [t.effective_strides for t in ins_t],
        expected,
        [t.effective_strides for t in outs_t],
    )

    op = Device(dmlops.FeatureLevel.newest(), backend=backend).create_operator(desc)
    dev_in = [to_device(backend, b) for b in in_bufs]
    dev_out = [to_device(backend, b) for b in out_bufs]
    op.execute(
        [Binding(b, p) for b, p in zip(dev_in, in_pre)],
        [Binding(b, p) for b, p in zip(dev_out, out_pre)],
    )
    for got, want, p, before in zip(dev_out, expected, out_pre, out_bufs):
        host = to_host(got)
        assert host[:p].tobytes() == before[:p].tobytes()
        assert host[p:].tobytes() == bytes(want)


# --- the functional API over numpy arrays of any layout --------------------------------


@st.composite
def strided_array(draw, dtype, shape, rng):  # type: ignore[no-untyped-def]
    """An array of `shape` that is a view with steps, reversals and a transpose."""
    n = len(shape)
    perm = draw(st.permutations(range(n)))
    steps = [draw(st.sampled_from([1, 1, 2, -1, -2])) for _ in range(n)]
    backing_shape = [shape[p] * abs(steps[i]) for i, p in enumerate(perm)]
    raw = rng.integers(
        0, 256, int(np.prod(backing_shape)) * np.dtype(dtype).itemsize, dtype=np.uint8
    )
    backing = raw.view(dtype).reshape(backing_shape)
    view = backing[tuple(slice(None, None, s) for s in steps)]
    view = view[tuple(slice(0, shape[p]) for p in perm)]
    return view.transpose(np.argsort(perm))


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.itemsize}")


@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_functional_matches_reference(backend: str, data, seed: int) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    desc, mapping = data.draw(any_case)
    dtype = desc.data_type.numpy_dtype
    ins = [data.draw(strided_array(dtype, list(t.sizes), rng)) for _, t in desc.input_fields()]
    outs = [data.draw(strided_array(dtype, list(t.sizes), rng)) for _, t in desc.output_fields()]
    expected = [o.copy() for o in outs]
    apply_to_arrays(mapping, [_bits(i) for i in ins], [_bits(e) for e in expected])

    dev_ins = [to_device(backend, i) if backend != "numpy" else i for i in ins]
    dev_outs = [to_device(backend, o) if backend != "numpy" else o for o in outs]
    if isinstance(desc, SliceDesc):
        dmlops.slice(dev_ins[0], desc.offsets, desc.sizes, desc.strides, out=dev_outs[0])
    elif isinstance(desc, Slice1Desc):
        dmlops.slice1(
            dev_ins[0],
            desc.input_window_offsets,
            desc.input_window_sizes,
            desc.input_window_strides,
            out=dev_outs[0],
        )
    elif isinstance(desc, SplitDesc):
        dmlops.split(
            dev_ins[0], desc.axis, [t.sizes[desc.axis] for t in desc.output_tensors], outs=dev_outs
        )
    else:
        dmlops.join(dev_ins, desc.axis, out=dev_outs[0])
    for got, want in zip(dev_outs, expected):
        np.testing.assert_array_equal(_bits(to_host(got)), _bits(want))


@given(
    case=st.one_of(slice_case(), slice1_case(), split_case(), join_case()),
    seed=st.integers(0, 2**32 - 1),
)
def test_functional_allocates_packed_outputs(case, seed: int) -> None:  # type: ignore[no-untyped-def]
    desc, mapping = case
    rng = np.random.default_rng(seed)
    dtype = desc.data_type.numpy_dtype
    ins = [
        rng.integers(0, 256, t.element_count * dtype.itemsize, dtype=np.uint8)
        .view(dtype)
        .reshape(t.sizes)
        for _, t in desc.input_fields()
    ]
    if isinstance(desc, SliceDesc):
        got = [dmlops.slice(ins[0], desc.offsets, desc.sizes, desc.strides)]
    elif isinstance(desc, Slice1Desc):
        got = [
            dmlops.slice1(
                ins[0],
                desc.input_window_offsets,
                desc.input_window_sizes,
                desc.input_window_strides,
                desc.output_tensor.sizes,
            )
        ]
    elif isinstance(desc, SplitDesc):
        got = dmlops.split(ins[0], desc.axis, [t.sizes[desc.axis] for t in desc.output_tensors])
    else:
        got = [dmlops.join(ins, desc.axis)]
    expected = [np.zeros(t.sizes, dtype) for _, t in desc.output_fields()]
    apply_to_arrays(mapping, [_bits(i) for i in ins], [_bits(e) for e in expected])
    for g, e in zip(got, expected):
        assert g.flags.c_contiguous and g.dtype == dtype
        np.testing.assert_array_equal(_bits(g), _bits(e))


def test_nan_payloads_and_negative_zero_survive(backend: str) -> None:
    bits = np.array([0x7FC00001, 0xFFC12345, 0x80000000, 0x7F800001, 0x00000001], dtype=np.uint32)
    x = bits.view(np.float32).reshape(1, 5)
    x = to_device(backend, x)
    y = dmlops.slice1(x, [0, 0], [1, 5], [1, -1])
    assert list(to_host(y).view(np.uint32).ravel()) == list(bits[::-1])


def test_every_data_type_round_trips_through_split_and_join() -> None:
    for dt in DATA_TYPES:
        rng = np.random.default_rng(int(dt))
        a = (
            rng.integers(0, 256, 6 * 4 * dt.element_size, dtype=np.uint8)
            .view(dt.numpy_dtype)
            .reshape(6, 4)
        )
        parts = dmlops.split(a, 0, [1, 2, 3])
        back = dmlops.join(parts, 0)
        assert back.tobytes() == a.tobytes(), DataType(dt).name
