"""The operators, layouts, call-cost and indexed sections on the webgpu backend
(`--device webgpu`).

Every dmlops case runs as a bound dispatch on persistent WebGPU arrays, timed on the host
as batches of BATCH dispatches followed by one wait for the queue (latency cases: one
dispatch and its wait); the layouts cases also by GPU timestamps around their compute pass
where the adapter has timestamp queries (the kernels without the host's time). References
in the same run: WebGPU's own buffer-to-buffer copy of the output bytes, and, where CUDA is
present, torch's device copy, the CUDA backend and torch on the same work. The functional
call with numpy in and out is broken down into upload, dispatch and readback.
"""

from __future__ import annotations

import functools
import math
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..device import Device
from ..ops import Slice1Desc, SplitDesc
from .common import Fn, Result, gpu_present, have

__all__ = [
    "operators", "layouts", "call_cost", "indexed", "layout_arrays", "bound_seconds",
    "gpu_timed_seconds", "copy_seconds",
]  # fmt: skip

OURS = "dmlops webgpu (bound)"
FUNCTIONAL = "dmlops webgpu (functional)"
GPU_TIMED = "dmlops webgpu (GPU timestamps)"
BATCH = 10


def _backend() -> Any:
    from ..backends import get_backend

    return get_backend("webgpu")


def _device_name() -> str:
    return f"webgpu: {_backend().description}"


def _batched(fn: Fn, reps: int, sync: Fn, batch: int = BATCH) -> float:
    """Median host seconds per call over batches of back-to-back calls and one wait, after
    0.2 s of calls (the GPU's clocks rise only under load)."""
    warm = time.perf_counter() + 0.2
    while time.perf_counter() < warm:
        fn()
        sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        sync()
        times.append((time.perf_counter() - t0) / batch)
    return statistics.median(times)


def _ceilings(res: Result, out_bytes: int, reps: int) -> None:
    """WebGPU's buffer copy and (with CUDA) torch's device copy of `out_bytes` bytes."""
    backend = _backend()
    backend.flush()
    n = max(4, -(-out_bytes // 4) * 4)
    usage = backend.wgpu.BufferUsage
    src = backend.device.create_buffer(size=n, usage=usage.COPY_SRC | usage.STORAGE)
    dst = backend.device.create_buffer(size=n, usage=usage.COPY_DST | usage.STORAGE)

    def copy() -> None:
        encoder = backend.device.create_command_encoder()
        encoder.copy_buffer_to_buffer(src, 0, dst, 0, n)
        backend.queue.submit([encoder.finish()])

    res.times["webgpu buffer copy"] = _batched(copy, reps, backend.synchronize)
    src.destroy()
    dst.destroy()
    if gpu_present() and have("torch"):
        import torch

        a = torch.empty(out_bytes, dtype=torch.uint8, device="cuda")
        b = torch.empty_like(a)
        res.times["torch d2d copy"] = _batched(lambda: b.copy_(a), reps, torch.cuda.synchronize)


def _cuda_peer(res: Result, desc: Any, hosts: list[np.ndarray[Any, Any]], reps: int) -> None:
    """The CUDA backend's bound dispatch on the same work, where CUDA is present."""
    if not gpu_present():
        return
    import cupy

    xs = [cupy.asarray(h) for h in hosts]
    outs = [cupy.empty(t.sizes, xs[0].dtype) for _, t in desc.output_fields()]
    table = Device(backend="cuda").create_operator(desc).bind(xs, outs)
    res.times["dmlops cuda (bound)"] = _batched(
        table.dispatch, reps, cupy.cuda.Device().synchronize
    )


def _check(got: list[Any], want: list[np.ndarray[Any, Any]], name: str) -> None:
    for g, w in zip(got, want, strict=True):
        if g.numpy().tobytes() != np.ascontiguousarray(w).tobytes():
            raise AssertionError(f"dmlops webgpu gave a wrong answer on {name}")


def _warm_up() -> None:
    """Bring the GPU to its working clocks (and CUDA peers up) before the first case."""
    if gpu_present() and have("torch"):
        import torch

        a = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
        b = torch.empty_like(a)
        _batched(lambda: b.copy_(a), 3, torch.cuda.synchronize)


def operators(reps: int, mib: int) -> list[Result]:
    """The operators section's cases on WebGPU."""
    import dmlops.webgpu as wg

    from . import operators as section

    backend = _backend()
    _warm_up()
    rows = mib * 1024 * 1024 // (1024 * 4)
    results = []
    for case in section.make_cases(rows):
        rng = np.random.default_rng(0)
        hosts = [rng.standard_normal(s, dtype=np.float32) for s in case.in_shapes]
        xs = [wg.asarray(h) for h in hosts]
        outs = [wg.empty(t.sizes, np.float32) for _, t in case.desc.output_fields()]
        op = Device(backend="webgpu").create_operator(case.desc)
        table = op.bind(xs, outs)
        table.dispatch()
        want = [np.empty(t.sizes, np.float32) for _, t in case.desc.output_fields()]
        case.numpy_fn(hosts, want)
        _check(outs, want, case.name)
        out_bytes = sum(o.nbytes for o in outs)
        res = Result(section.SECTION, case.name, _device_name(), out_bytes, OURS)
        sync = backend.synchronize
        res.times[OURS] = _batched(table.dispatch, reps, sync, 1 if case.latency else BATCH)
        if case.latency:
            res.times["dmlops webgpu (bound, 10 per wait)"] = _batched(table.dispatch, reps, sync)
            _functional_breakdown(res, case.desc, hosts[0], reps)
        else:
            _ceilings(res, out_bytes, reps)
        _cuda_peer(res, case.desc, hosts, reps)
        results.append(res)
        print(f"  measured webgpu: {case.name}", file=sys.stderr, flush=True)
    return results


def _functional_breakdown(res: Result, desc: Any, host: np.ndarray[Any, Any], reps: int) -> None:
    """dmlops.slice1(numpy, device='webgpu') whole, and its upload, dispatch and readback."""
    import dmlops
    import dmlops.webgpu as wg

    assert isinstance(desc, Slice1Desc)
    args = (desc.input_window_offsets, desc.input_window_sizes, desc.input_window_strides)
    backend = _backend()
    sync = backend.synchronize
    res.times["functional, numpy in and out"] = _batched(
        lambda: dmlops.slice1(host, *args, device="webgpu"), reps * 5, sync, 1
    )
    res.times["  upload"] = _batched(lambda: wg.asarray(host), reps * 5, sync, 1)
    x = wg.asarray(host)
    res.times["  dispatch (functional, WebGPU in and out)"] = _batched(
        lambda: dmlops.slice1(x, *args), reps * 5, sync, 1
    )
    y = dmlops.slice1(x, *args)
    res.times["  readback"] = _batched(y.numpy, reps * 5, lambda: None, 1)


def layout_arrays(case: Any) -> tuple[np.ndarray[Any, Any], Any, Any]:
    """A layouts case's input as random host bytes, its WebGPU copy, and a WebGPU output."""
    import dmlops.webgpu as wg

    dtype = np.dtype(case.dtype)
    count = math.prod(case.shape)
    host = np.random.default_rng(0).integers(0, 255, count * dtype.itemsize, dtype=np.uint8)
    host = host.view(dtype).reshape(case.shape)
    out = wg.empty(case.desc.output_fields()[0][1].sizes, dtype)
    return host, wg.asarray(host), out


def bound_seconds(case: Any, host: Any, x: Any, out: Any, reps: int, label: str) -> float:
    """Seconds per bound dispatch of a layouts case on WebGPU (checked bit-exact first)."""
    backend = _backend()
    table = Device(backend="webgpu").create_operator(case.desc).bind([x], [out])
    table.dispatch()
    _check([out], [case.view(host)], label)
    return _batched(table.dispatch, reps, backend.synchronize)


def gpu_timed_seconds(case: Any, x: Any, out: Any, reps: int) -> float | None:
    """Median GPU seconds of a layouts case's bound dispatch (timestamp queries around its
    compute pass; None where the adapter has none): the kernels' time without the host's."""
    backend = _backend()
    table = Device(backend="webgpu").create_operator(case.desc).bind([x], [out])
    table.dispatch()
    times = [backend.gpu_seconds(table.dispatch) for _ in range(max(reps, 5))]
    known = [t for t in times if t is not None]
    return statistics.median(known) if len(known) == len(times) else None


def copy_seconds(nbytes: int, reps: int) -> float:
    """A device copy of `nbytes`: torch's where CUDA is present, else WebGPU's buffer copy."""
    ceiling = Result("copy", "copy", "webgpu", nbytes, "x")
    _ceilings(ceiling, nbytes, reps)
    return ceiling.times.get("torch d2d copy") or ceiling.times["webgpu buffer copy"]


def layouts(reps: int) -> list[Result]:
    """The layouts section's cases on WebGPU."""

    from . import layouts as section

    results = []
    for case in section.CASES:
        host, x, out = layout_arrays(case)
        name = f"{case.layout_class}: {case.name}"
        res = Result(section.SECTION, name, _device_name(), out.nbytes, OURS)
        res.times[OURS] = bound_seconds(case, host, x, out, reps, case.name)
        gpu = gpu_timed_seconds(case, x, out, reps)
        if gpu is not None:
            res.times[GPU_TIMED] = gpu
        _ceilings(res, out.nbytes, reps)
        _cuda_peer(res, case.desc, [host], reps)
        results.append(res)
        print(f"  measured webgpu: {case.name}", file=sys.stderr, flush=True)
    return results


def call_cost(reps: int) -> list[Result]:
    """Bound dispatch, execute() and the functional call per array count (SPLIT of [N, 1024])."""
    import dmlops
    import dmlops.webgpu as wg

    from . import call_cost as section
    from .operators import _t

    backend = _backend()
    sync = backend.synchronize
    results = []
    for n in section.COUNTS:
        host = np.random.default_rng(n).standard_normal((n, 1024), dtype=np.float32)
        x = wg.asarray(host)
        outs = [wg.empty((1, 1024), np.float32) for _ in range(n)]
        desc = SplitDesc(_t((n, 1024)), [_t((1, 1024))] * n, 0)
        op = Device(backend="webgpu").create_operator(desc)
        table = op.bind([x], outs)
        backend.dispatch_log = []
        table.dispatch()
        dispatches = len(backend.dispatch_log)
        backend.dispatch_log = None
        case = f"split {n}-way ({dispatches} dispatch)"
        res = Result(section.SECTION, case, _device_name(), n * 4096, OURS, count=n)
        timers: dict[str, Callable[[], Any]] = {
            OURS: table.dispatch,
            "dmlops webgpu execute()": functools.partial(op.execute, [x], outs),
            "dmlops.split() (WebGPU arrays)": functools.partial(dmlops.split, x, 0, [1] * n),
        }
        for label, fn in timers.items():
            res.times[label] = _batched(fn, reps, sync, 1)
        results.append(res)
        print(f"  measured webgpu: split {n}-way", file=sys.stderr, flush=True)
    return results


def _indexed_cases(scale: int) -> list[tuple[str, Callable[[np.random.Generator], Any], Any, Any]]:
    """(case, make host inputs, dmlops call, numpy's answer): the indexed section's
    workloads at `scale` rows (float32: WebGPU's 2-byte paths are a separate issue)."""
    import dmlops

    def embedding(rng: np.random.Generator) -> tuple[Any, ...]:
        table = rng.standard_normal((scale, 1024), dtype=np.float32)
        return table, rng.integers(0, scale, scale // 2)

    def moe(rng: np.random.Generator) -> tuple[Any, ...]:
        return rng.standard_normal((scale, 1024), dtype=np.float32), rng.permutation(scale)

    def along(rng: np.random.Generator) -> tuple[Any, ...]:
        x = rng.standard_normal((scale, 1024), dtype=np.float32)
        return x, rng.integers(0, 1024, (scale, 128))

    def kv_write(rng: np.random.Generator) -> tuple[Any, ...]:
        cache = rng.standard_normal((scale * 4, 256), dtype=np.float32)
        slots = rng.permutation(scale * 4)[: scale // 2].reshape(-1, 1)
        return cache, slots, rng.standard_normal((scale // 2, 256), dtype=np.float32)

    def written(c: Any, s: Any, u: Any) -> Any:
        c = c.copy()
        c[s[:, 0]] = u
        return c

    return [
        (f"embedding {scale}x1024 fp32, {scale // 2} ids", embedding,
         lambda t, i: dmlops.gather(t, i), lambda t, i: np.take(t, i, axis=0)),
        (f"MoE permutation {scale}x1024 fp32", moe,
         lambda x, p: dmlops.gather(x, p), lambda x, p: x[p]),
        (f"take_along_axis {scale}x1024 fp32, 128 per row", along,
         lambda x, i: dmlops.gather_elements(x, i, 1), lambda x, i: np.take_along_axis(x, i, 1)),
        (f"in-place KV write {scale // 2} slots of [256] fp32", kv_write,
         lambda c, s, u: dmlops.scatter_nd(c, s, u, out=c), written),
    ]  # fmt: skip


def indexed(reps: int, scale: int = 8192) -> list[Result]:
    """The indexed section's workloads on WebGPU (functional calls on WebGPU arrays), with
    WebGPU's buffer copy of the output bytes and, where CUDA is present, torch's device copy
    and the CUDA backend on the same work."""
    import dmlops.webgpu as wg

    backend = _backend()
    _warm_up()
    results = []
    for case, make, ours, numpy_fn in _indexed_cases(scale):
        hosts = make(np.random.default_rng(0))
        xs = [wg.asarray(h) for h in hosts]
        in_place = len(hosts) == 3
        got = ours(*xs)
        want = numpy_fn(*hosts)
        _check([got], [want], case)
        out_bytes = hosts[2].nbytes if in_place else want.nbytes
        res = Result("indexed", case, _device_name(), out_bytes, FUNCTIONAL)
        res.times[FUNCTIONAL] = _batched(functools.partial(ours, *xs), reps, backend.synchronize)
        _ceilings(res, out_bytes, reps)
        if gpu_present():
            import cupy

            cs = [cupy.asarray(h) for h in hosts]
            sync = cupy.cuda.Device().synchronize
            res.times["dmlops cuda (functional)"] = _batched(
                functools.partial(ours, *cs), reps, sync
            )
        results.append(res)
        print(f"  measured webgpu: {case}", file=sys.stderr, flush=True)
    return results
