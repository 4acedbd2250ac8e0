"""Benchmark section "layouts" (GPU): every layout class a user meets, against the copy
ceiling, torch eager, torch.compile, jax.jit and CuPy.

Classes: contiguous rows at misaligned addresses and pitches, slices of
transposed and permuted views, inner strides of +-2 and +-3 and SLICE's 2x2,
5- to 8-dimensional boxes of 10-50 MB, and reversed inner axes of small
types. Each case times batches of back-to-back calls (bound dispatch for
dmlops) and reports the median time per call.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..device import Device
from ..ops import OperatorDesc, Slice1Desc, SliceDesc
from ..tensor import BufferTensorDesc, DataType
from .common import Fn, Result, have

__all__ = ["run", "CASES", "LayoutCase"]

SECTION = "layouts"
OURS = "dmlops (bound)"
BATCH = 10

# A view expression over one input tensor `x` that every array library understands:
# it receives the library's array and returns the (lazy or materialised) result.
View = Callable[[Any], Any]


@dataclass(frozen=True)
class LayoutCase:
    """One case: an input of `shape` and dtype, the dmlops descriptor, the same as a view."""

    layout_class: str
    name: str
    dtype: str
    shape: tuple[int, ...]
    desc: OperatorDesc
    view: View
    input_offset: int = 0  # elements: the input binding starts this far into its buffer


def _d(dt: DataType, sizes: tuple[int, ...], strides: tuple[int, ...] | None = None) -> Any:
    return BufferTensorDesc(dt, sizes, strides)


def _slice(
    dt: DataType, sizes: tuple[int, ...], offs: list[int], box: list[int], steps: list[int]
) -> SliceDesc:
    return SliceDesc(_d(dt, sizes), _d(dt, tuple(box)), offs, box, steps)


def _nchw(x: Any) -> Any:
    """NHWC -> NCHW view in any array library (torch spells it permute)."""
    return x.permute(0, 3, 1, 2) if hasattr(x, "permute") else x.transpose(0, 3, 1, 2)


def _columns(start: int | None, stop: int | None, step: int = 1) -> View:
    """x[:, start:stop:step] in any array library (torch takes no negative steps: it flips)."""

    def view(x: Any) -> Any:
        if step < 0 and hasattr(x, "flip"):
            return x.flip(1)[:, start:stop:-step]
        return x[:, start:stop:step]

    return view


def _cases() -> list[LayoutCase]:
    f16, f32, i8, u16 = DataType.FLOAT16, DataType.FLOAT32, DataType.INT8, DataType.UINT16
    cases: list[LayoutCase] = []
    # -- misaligned contiguous rows: start at an odd element, pitch not a multiple of 16 bytes
    for dt, name, (rows, cols), (c0, width) in (
        (f16, "float16", (8192, 8191), (1, 8000)),
        (f32, "float32", (8192, 4093), (3, 4000)),
        (i8, "int8", (8192, 16383), (5, 16000)),
    ):
        cases.append(
            LayoutCase(
                "misaligned rows",
                f"{name} [{rows},{cols}] cols {c0}:{c0 + width}",
                name,
                (rows, cols),
                _slice(dt, (rows, cols), [0, c0], [rows, width], [1, 1]),
                _columns(c0, c0 + width),
            )
        )
    # -- transposes: the input's unit-stride axis is not the output's
    for dt, name, (rows, cols) in ((f32, "float32", (8192, 8192)), (f16, "float16", (8192, 8192))):
        cases.append(
            LayoutCase(
                "transposed",
                f"{name} slice of x.T [{cols},{rows}] -> [{cols - 64},{rows - 32}]",
                name,
                (rows, cols),
                SliceDesc(
                    _d(dt, (cols, rows), (1, cols)),
                    _d(dt, (cols - 64, rows - 32)),
                    [32, 16],
                    [cols - 64, rows - 32],
                    [1, 1],
                ),
                lambda x: x.T[32:-32, 16:-16],
            )
        )
    n, c, h, w = 32, 64, 128, 128
    cases.append(
        LayoutCase(
            "transposed",
            f"float32 NHWC->NCHW [{n},{h},{w},{c}] crop 1",
            "float32",
            (n, h, w, c),
            SliceDesc(
                _d(f32, (n, c, h, w), (h * w * c, 1, w * c, c)),
                _d(f32, (n, c, h - 2, w - 2)),
                [0, 0, 1, 1],
                [n, c, h - 2, w - 2],
                [1, 1, 1, 1],
            ),
            lambda x: _nchw(x)[:, :, 1:-1, 1:-1],
        )
    )
    # -- non-unit inner strides
    rows, cols = 8192, 12288
    for step in (2, -2, 3, -3):
        out_cols = cols // abs(step)
        cases.append(
            LayoutCase(
                "inner stride",
                f"float32 SLICE1 inner stride {step}",
                "float32",
                (rows, cols),
                Slice1Desc(
                    _d(f32, (rows, cols)),
                    _d(f32, (rows, out_cols)),
                    [0, 0],
                    [rows, cols],
                    [1, step],
                ),
                _columns(None, None, step),
            )
        )
    cases.append(
        LayoutCase(
            "inner stride",
            "float16 SLICE strides 2x2",
            "float16",
            (16384, 16384),
            _slice(f16, (16384, 16384), [0, 0], [8192, 8192], [2, 2]),
            lambda x: x[::2, ::2],
        )
    )
    # -- high-rank boxes of 10-50 MB
    cases.append(
        LayoutCase(
            "high-rank box",
            "float32 5-D box [20,20,24,24,24] (96-byte rows)",
            "float32",
            (22, 22, 26, 26, 32),
            _slice(f32, (22, 22, 26, 26, 32), [1, 1, 1, 1, 4], [20, 20, 24, 24, 24], [1] * 5),
            lambda x: x[1:21, 1:21, 1:25, 1:25, 4:28],
        )
    )
    cases.append(
        LayoutCase(
            "high-rank box",
            "uint16 8-D box [7,7,7,7,7,7,7,10] of [9,9,9,9,9,9,9,12]",
            "uint16",
            (9,) * 7 + (12,),
            _slice(u16, (9,) * 7 + (12,), [1] * 7 + [1], [7] * 7 + [10], [1] * 8),
            lambda x: x[1:8, 1:8, 1:8, 1:8, 1:8, 1:8, 1:8, 1:11],
        )
    )
    # -- small types, inner axis reversed
    for dt, name in ((i8, "int8"), (f16, "float16")):
        shape = (16384, 16384)
        cases.append(
            LayoutCase(
                "reversed inner",
                f"{name} SLICE1 inner axis reversed",
                name,
                shape,
                Slice1Desc(_d(dt, shape), _d(dt, shape), [0, 0], list(shape), [1, -1]),
                _columns(None, None, -1),
            )
        )
    return cases


CASES = _cases()


def _batched(fn: Fn, reps: int, sync: Fn) -> float:
    """Median seconds per call over `reps` batches of BATCH back-to-back calls (CUDA events)."""
    import cupy

    for _ in range(2):
        fn()
    sync()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        for _ in range(BATCH):
            fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) / 1e3 / BATCH)
    return float(np.median(times))


def _batched_wall(fn: Fn, reps: int, done: Callable[[Any], Any]) -> float:
    """As _batched, for libraries with their own streams (JAX): host time until the last is done."""
    import time

    for _ in range(2):
        done(fn())
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = None
        for _ in range(BATCH):
            out = fn()
        done(out)
        times.append((time.perf_counter() - t0) / BATCH)
    return float(np.median(times))


def bench_case(case: LayoutCase, reps: int, compilers: bool = True, peers: bool = True) -> Result:
    """Time one case on the GPU against its peers."""
    import cupy

    rng = np.random.default_rng(0)
    dtype = np.dtype(case.dtype)
    count = math.prod(case.shape)
    host = rng.integers(0, 255, count * dtype.itemsize, dtype=np.uint8).view(dtype)
    x = cupy.asarray(host).reshape(case.shape)
    out_t = case.desc.output_fields()[0][1]
    out = cupy.empty(out_t.sizes, dtype)
    op = Device(backend="cuda").create_operator(case.desc)
    table = op.bind([x], [out])
    table.dispatch()
    expect = cupy.ascontiguousarray(case.view(x))
    if not bool((out.view(f"u{dtype.itemsize}") == expect.view(f"u{dtype.itemsize}")).all()):
        raise AssertionError(f"dmlops gave a wrong answer on {case.name}")
    res = Result(SECTION, f"{case.layout_class}: {case.name}", "gpu", int(out.nbytes), OURS)
    sync = cupy.cuda.Device().synchronize
    res.times[OURS] = _batched(table.dispatch, reps, sync)
    src = cupy.empty(int(out.nbytes), cupy.uint8)
    dst = cupy.empty_like(src)
    res.times["d2d copy ceiling"] = _batched(
        lambda: dst.data.copy_from_device(src.data, int(out.nbytes)), reps, sync
    )
    contenders: dict[str, tuple[Fn, Callable[[Fn], float]]] = {
        "cupy": (lambda: cupy.ascontiguousarray(case.view(x)), lambda f: _batched(f, reps, sync))
    }
    if have("torch"):
        import torch

        tx = torch.utils.dlpack.from_dlpack(x)

        def torch_timer(f: Fn) -> float:
            return _batched(f, reps, torch.cuda.synchronize)

        contenders["torch eager"] = (lambda: case.view(tx).contiguous(), torch_timer)
        if compilers:
            torch._dynamo.reset()  # each case compiles afresh (no recompile limit across cases)
            compiled = torch.compile(lambda t: case.view(t).clone(), dynamic=False)
            contenders["torch.compile"] = (lambda: compiled(tx), torch_timer)
    if compilers and have("jax"):
        import jax

        jx = jax.device_put(host.reshape(case.shape))
        jitted = jax.jit(case.view)
        contenders["jax.jit"] = (
            lambda: jitted(jx),
            lambda f: _batched_wall(f, reps, jax.block_until_ready),
        )
    for name, (fn, timer) in contenders.items() if peers else ():
        try:
            res.times[name] = timer(fn)
        except Exception as e:  # noqa: BLE001 - a peer that fails is reported, not fatal
            print(f"  {name} failed on {case.name}: {type(e).__name__}: {e}", file=sys.stderr)
    return res


def run(devices: list[str], reps: int, compilers: bool = True) -> list[Result]:
    """Every layout case, on the GPU only (the section measures the CUDA kernels)."""
    if "gpu" not in devices:
        return []
    results = []
    import cupy

    for case in CASES:
        results.append(bench_case(case, reps, compilers))
        cupy.get_default_memory_pool().free_all_blocks()
        print(f"  measured gpu: {case.name}", file=sys.stderr, flush=True)
    return results
