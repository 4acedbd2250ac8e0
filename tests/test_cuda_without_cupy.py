"""Calls on torch CUDA tensors before anything imports CuPy: the backend runs on CUDA's
runtime and driver bindings, its kernels loaded from the on-disk cache and its tables in
torch's memory; CuPy is imported only when something needs it, and calls stay exact after."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import HAS_CUDA

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")]

_SCRIPT = textwrap.dedent(
    """
    import os
    import sys
    import torch
    import dmlops

    def same(a, b):
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape)
        bits = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}[a.element_size()]
        assert torch.equal(a.contiguous().view(bits), b.contiguous().view(bits))

    x = torch.randn(64, 48, 40, device="cuda")
    for _ in range(2):  # (the second call on the warm path)
        same(dmlops.slice1(x, [0, 0, 0], [64, 48, 40], [1, -1, 2]), x.flip(1)[:, :, ::2])
        same(dmlops.join([x, x[:3]], 0), torch.cat([x, x[:3]]))
        same(dmlops.padding(x, [0, 1, 2], [0, 3, 4], "REFLECTION"),
             torch.nn.functional.pad(x[None], (2, 4, 1, 3), mode="reflect")[0])
        rows = torch.tensor([5, 0, 63, 5], device="cuda")
        same(dmlops.gather(x, rows, 0), x[rows])
        where = torch.randint(0, 48, (64, 96, 40), device="cuda")  # (repeats: a winner table)
        upd = torch.randn(64, 96, 40, device="cuda")
        want = dmlops.scatter_elements(x.cpu().numpy(), where.cpu().numpy(), upd.cpu().numpy(), 1)
        same(dmlops.scatter_elements(x, where, upd, 1), torch.from_numpy(want).cuda())
        box = torch.arange(9 ** 3 * 12, dtype=torch.int16, device="cuda").reshape(9, 9, 9, 12)
        same(dmlops.slice(box, [1, 1, 1, 1], [7, 7, 7, 10], [1, 1, 1, 1]),
             box[1:8, 1:8, 1:8, 1:11].contiguous())
        view = x.transpose(0, 2)[::2]  # (CAST and NONZERO: dmlops' own kernels, no CuPy)
        same(dmlops.cast(view, "float16"), view.half())
        same(dmlops.cast(view * 1000, "int32"), (view * 1000).int())
        same(dmlops.nonzero(view > 0.5), torch.nonzero(view > 0.5))
        same(dmlops.nonzero(view.half()), torch.nonzero(view.half()))
        # (signed indices and lengths: cast or viewed by torch, not through CuPy)
        pooled, at = torch.nn.functional.max_pool2d(x[None], 2, return_indices=True)
        planes = torch.arange(64, device="cuda").reshape(1, 64, 1, 1) * (48 * 40)
        same(dmlops.max_unpooling(pooled, at + planes, [1, 64, 48, 40]),
             torch.nn.functional.max_unpool2d(pooled, at, 2, output_size=(48, 40)))
        lengths = torch.tensor([3, 0, 48, -2], device="cuda").repeat(10)
        want = dmlops.reverse_subsequences(x.cpu().numpy(), lengths.cpu().numpy(), 1, 2)
        same(dmlops.reverse_subsequences(x, lengths, 1, 2), torch.from_numpy(want).cuda())
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        y = dmlops.slice1(x, [1, 0, 0], [63, 48, 40], [1, 1, -1])
    side.synchronize()
    same(y, x[1:].flip(2))
    out = torch.empty(64, 48, 20, device="cuda")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        dmlops.slice1(x, [0, 0, 0], [64, 48, 40], [1, 1, 2], out=out)
    x.add_(1)
    graph.replay()
    torch.cuda.synchronize()
    same(out, x[:, :, ::2])
    if os.environ["DMLOPS_TEST_WARM"] == "1":  # (a cold cache compiles through CuPy's NVRTC)
        assert "cupy" not in sys.modules, "CuPy was imported"
    import cupy  # then CuPy arrays beside the torch tensors, each exact
    c = cupy.arange(24, dtype=cupy.float32).reshape(4, 6)
    assert (dmlops.slice1(c, [0, 0], [4, 6], [-1, 3]) == c[::-1, ::3]).all()
    same(dmlops.slice1(x, [0, 0, 0], [64, 48, 40], [1, -1, 2]), x.flip(1)[:, :, ::2])
    print("ok")
    """
)


def test_torch_calls_run_without_importing_cupy(tmp_path: object) -> None:
    for warm in "01":  # a cold kernel cache (compiled), then a warm one (loaded)
        env = {**os.environ, "DMLOPS_CACHE_DIR": str(tmp_path), "DMLOPS_TEST_WARM": warm}
        done = subprocess.run(
            [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=env, timeout=600
        )
        assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_the_ctypes_launch_path_is_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the C extension is not built, kernels launch through ctypes: the same answers."""
    np = pytest.importorskip("numpy")
    cupy = pytest.importorskip("cupy")
    import dmlops
    from dmlops.backends import cuda
    from dmlops.backends.cuda import indexed, launch

    for module in (cuda, indexed, launch):
        monkeypatch.setattr(module, "launch_kernel", launch._ctypes_launch)
    host = np.arange(7 * 9 * 11, dtype=np.float32).reshape(7, 9, 11)
    x = cupy.asarray(host)
    got = dmlops.slice1(x, [1, 0, 2], [5, 9, 9], [2, -1, 3])
    assert (cupy.asnumpy(got) == host[1:6:2, ::-1, 2:11:3]).all()
    rows = cupy.asarray(np.array([6, 0, 3], np.int64))
    assert (cupy.asnumpy(dmlops.gather(x, rows, 0)) == host[[6, 0, 3]]).all()
