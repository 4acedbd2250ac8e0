"""CUDA-only behaviour: one launch per operator, DLPack arrays, raw buffers, 64-bit indexing."""

from __future__ import annotations

import pytest

import dmlops
from conftest import HAS_CUDA
from dmlops import Binding, BufferTensorDesc, DataType, Device, JoinDesc, SplitDesc

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")]


def test_split_and_join_are_one_launch_each(launches) -> None:  # type: ignore[no-untyped-def]
    import cupy

    x = cupy.arange(256 * 1024, dtype=cupy.float32).reshape(256, 1024)
    parts = dmlops.split(x, 0, [1] * 256)
    assert len(launches) == 1
    back = dmlops.join(parts, 0)
    assert len(launches) == 2
    assert bool((back == x).all())


@pytest.mark.parametrize("merge", [False, True])
def test_vector_width_and_unaligned_fallback(launches, monkeypatch, merge) -> None:  # type: ignore[no-untyped-def]
    import cupy

    from dmlops.backends.cuda import strategies

    if not merge:  # (a small plan: its strategies' launches merge into one unless told not to)
        monkeypatch.setattr(strategies, "MERGE_ELEMENTS", 0)
    x = cupy.arange(64 * 64, dtype=cupy.float32).reshape(64, 64)
    desc = SplitDesc(
        BufferTensorDesc(DataType.FLOAT32, [64, 64]),
        [
            BufferTensorDesc(DataType.FLOAT32, [64, 16]),
            BufferTensorDesc(DataType.FLOAT32, [64, 48]),
        ],
        1,
    )
    op = Device(backend="cuda").create_operator(desc)
    buf = cupy.zeros(64 * 64 + 1, dtype=cupy.float32)
    a, b = cupy.zeros((64, 16), cupy.float32), buf[1 : 1 + 64 * 48]  # b is 4-byte aligned only
    op.execute([x], [a, b])
    assert bool((a == x[:, :16]).all()) and bool((b.reshape(64, 48) == x[:, 16:]).all())
    kinds = sorted(
        (g.kernel, dict(g.defines)["VW"] if g.kernel == "strided" else 0) for g in launches
    )
    if merge:
        assert kinds == [("strided", 4)]  # one element-wise launch
    else:
        assert kinds == [("rows", 0), ("strided", 16)]  # one launch per strategy, not per piece


def test_reversed_inner_axis_uses_vectors(launches) -> None:  # type: ignore[no-untyped-def]
    import cupy

    x = cupy.arange(8 * 1024, dtype=cupy.float32).reshape(8, 1024)
    y = dmlops.slice1(x, [0, 0], [8, 1024], [-1, -1])
    assert bool((y == x[::-1, ::-1]).all())
    (group,) = launches
    assert group.kernel == "strided" and dict(group.defines)["VW"] == 16
    assert dict(group.defines)["REVERSE"] == 1


def test_dlpack_arrays_go_in_and_come_back_in_their_library() -> None:
    torch = pytest.importorskip("torch")
    x = torch.arange(24, dtype=torch.float32, device="cuda").reshape(4, 6)
    y = dmlops.slice1(x, [0, 0], [4, 6], [-1, 2])
    assert isinstance(y, torch.Tensor) and y.is_cuda
    assert torch.equal(y, x.flip(0)[:, ::2])
    parts = dmlops.split(x.t(), 0, [2, 4])  # a transposed (non-contiguous) view, no copy
    assert torch.equal(parts[1], x.t()[2:])


def test_raw_device_buffers_with_binding_offsets() -> None:
    import cupy

    mem = cupy.cuda.alloc(1024)
    src = cupy.ndarray((16,), cupy.float32, memptr=mem)
    src[...] = cupy.arange(16, dtype=cupy.float32)
    out = cupy.cuda.alloc(256)
    desc = JoinDesc(
        [BufferTensorDesc(DataType.FLOAT32, [2]), BufferTensorDesc(DataType.FLOAT32, [3])],
        BufferTensorDesc(DataType.FLOAT32, [5]),
        0,
    )
    op = Device(backend="cuda").create_operator(desc)
    op.execute([Binding(mem, 0, 8), Binding(mem, 32, 12)], [Binding(out, 16)])
    got = cupy.ndarray((5,), cupy.float32, memptr=out + 16)
    assert got.tolist() == [0, 1, 8, 9, 10]
    with pytest.raises(
        dmlops.BindingError, match=r"8 bytes bound, TotalTensorSizeInBytes needs 12"
    ):
        op.execute([Binding(mem, 0, 8), Binding(mem, 32, 8)], [Binding(out, 16)])


def test_tensors_over_2_to_the_31_elements() -> None:
    import cupy

    free, _ = cupy.cuda.runtime.memGetInfo()
    n = 2**31 + 4096
    if free < 2 * n + (1 << 30):
        pytest.skip("not enough GPU memory")
    x = cupy.empty(n, dtype=cupy.uint8)
    x[: 1 << 20] = 1
    x[-(1 << 20) :] = 7
    y = dmlops.slice1(x, [0], [n], [-1])
    assert int(y[0]) == 7 and int(y[-1]) == 1
    assert int(y[(1 << 20) - 1]) == 7 and int(y[n - (1 << 20)]) == 1
    del y
    z = dmlops.split(x, 0, [n - 3, 3])
    assert int(z[1][2]) == 7 and int(z[0][0]) == 1


def test_a_compiled_graph_is_one_launch(launches) -> None:  # type: ignore[no-untyped-def]
    import cupy

    x = cupy.arange(2 * 3 * 16 * 16, dtype=cupy.float32).reshape(2, 3, 16, 16)
    g = dmlops.Graph()
    xi = g.input(x)
    parts = [
        g.slice(xi, [0, 0, a, b], [2, 3, 8, 8], [1, 1, 2, 2])
        for a, b in ((0, 0), (1, 0), (0, 1), (1, 1))
    ]
    op = g.compile([g.join(parts, 1)], Device(backend="cuda"))
    out = cupy.empty((2, 12, 8, 8), cupy.float32)
    op.execute([x], [out])
    # even and odd columns gather whole vectors (odd ones at phase 1): one group, one launch
    assert len(launches) == 1
    want = cupy.concatenate(
        [x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]], 1
    )
    assert bool((out == want).all())


def test_each_real_model_pattern_is_one_launch(launches) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("onnx")
    import cupy
    import numpy as np

    import dmlops.onnx
    from dmlops.bench.graphs import PATTERNS

    for p in PATTERNS:
        shapes = {
            n: tuple(max(1, d // 8) if d >= 64 else d for d in s)
            for n, s in p.shapes(False).items()
        }
        if p.name.startswith("QKV"):
            shapes = {"x": (1, 64, 3 * 16 * 8)}
        if p.name.startswith("pixel"):
            shapes = {"x": (1, 16, 256, 256)}
        rng = np.random.default_rng(0)
        xs = {n: cupy.asarray(rng.standard_normal(s, dtype=np.float32)) for n, s in shapes.items()}
        compiled = dmlops.onnx.compile(p.model(shapes), xs, Device(backend="cuda"))
        launches.clear()
        outs = compiled.run(xs)
        assert len(launches) == 1, (p.name, [g.kernel for g in launches])
        ins = [xs[n] for n in compiled.data_inputs]
        for got, want in zip(outs, p.reference(cupy, ins)):
            assert bool((got.reshape(want.shape) == want).all()), p.name
