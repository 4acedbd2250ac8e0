"""Benchmark section "call cost": time per call against the number of arrays.

SPLIT of [N, 1024] into N rows and JOIN of N arrays of [16, 64] (into `out=`),
for N in 1, 16, 256 and 1024, through the functional API, `execute()` with
fresh bindings and a bound dispatch, against numpy, torch and CuPy doing the
same; and the seed's 4x4 SLICE1 as a whole call. Host wall time to completion
(on the GPU, each call is followed by a device synchronisation).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

import dmlops

from ..device import Device
from ..ops import JoinDesc, Slice1Desc, SplitDesc
from ..tensor import BufferTensorDesc, DataType
from .common import Fn, Result, have, median_cpu, median_gpu

__all__ = ["run", "COUNTS"]

SECTION = "call cost"
COUNTS = (1, 16, 256, 1024)
OURS = "dmlops functional"
SEED_WINDOW = ([0, 0, 0, 1], [1, 1, 4, 3], [1, 1, -2, 2])


def _f32(shape: tuple[int, ...]) -> BufferTensorDesc:
    return BufferTensorDesc(DataType.FLOAT32, shape)


def _contenders(
    backend: str,
    desc: Any,
    xs: list[Any],
    outs: list[Any],
    functional: Fn,
) -> dict[str, Fn]:
    op = Device(backend=backend).create_operator(desc)
    table = op.bind(xs, outs)
    return {
        OURS: functional,
        "dmlops execute()": lambda: op.execute(xs, outs),
        "dmlops bound dispatch": table.dispatch,
    }


def _split_join(n: int, xp: Any, backend: str) -> list[tuple[str, int, dict[str, Fn]]]:
    """(case, output bytes, contenders) for the N-way SPLIT and JOIN on one library."""
    rng = np.random.default_rng(n)
    whole = xp.asarray(rng.standard_normal((n, 1024), dtype=np.float32))
    rows = [xp.empty((1, 1024), xp.float32) for _ in range(n)]
    split = _contenders(
        backend,
        SplitDesc(_f32((n, 1024)), [_f32((1, 1024))] * n, 0),
        [whole],
        rows,
        lambda: dmlops.split(whole, 0, [1] * n),
    )
    parts = [xp.asarray(rng.standard_normal((16, 64), dtype=np.float32)) for _ in range(n)]
    joined = xp.empty((16 * n, 64), xp.float32)
    join = _contenders(
        backend,
        JoinDesc([_f32((16, 64))] * n, _f32((16 * n, 64)), 0),
        parts,
        [joined],
        lambda: dmlops.join(parts, 0, out=joined),
    )
    name = "numpy" if xp is np else "cupy"
    split[f"{name} split + copies"] = lambda: [p.copy() for p in xp.split(whole, n)]
    join[f"{name} concatenate(out=)"] = lambda: xp.concatenate(parts, axis=0, out=joined)
    if have("torch"):
        import torch

        to_torch: Callable[[Any], Any] = (
            torch.from_numpy if xp is np else torch.utils.dlpack.from_dlpack
        )
        t_whole = to_torch(whole)
        t_parts = [to_torch(p) for p in parts]
        t_out = to_torch(joined)
        split["torch split + clone"] = lambda: [t.clone() for t in t_whole.split(1, 0)]
        join["torch.cat(out=)"] = lambda: torch.cat(t_parts, 0, out=t_out)
        if xp is not np:  # torch GPU tensors go through dmlops directly
            split["dmlops functional (torch)"] = lambda: dmlops.split(t_whole, 0, [1] * n)
            join["dmlops functional (torch)"] = lambda: dmlops.join(t_parts, 0, out=t_out)
    return [(f"split {n}-way", n * 4096, split), (f"join {n}-way", n * 4096, join)]


def _seed(xp: Any, backend: str) -> dict[str, Fn]:
    a = xp.asarray(np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4))
    out = xp.empty((1, 1, 2, 2), xp.float32)
    c = _contenders(
        backend,
        Slice1Desc(_f32((1, 1, 4, 4)), _f32((1, 1, 2, 2)), *SEED_WINDOW),
        [a],
        [out],
        lambda: dmlops.slice1(a, *SEED_WINDOW),
    )
    c["numpy-style slicing copy" if xp is np else "cupy slicing copy"] = lambda: a[..., 1:4][
        ..., ::-2, ::2
    ].copy()
    if have("torch"):
        import torch

        t = torch.from_numpy(a) if xp is np else torch.utils.dlpack.from_dlpack(a)
        c["torch flip + step"] = lambda: t[..., 1:4].flip(2)[..., ::2, ::2].clone()
        if xp is not np:
            c["dmlops functional (torch)"] = lambda: dmlops.slice1(t, *SEED_WINDOW)
    return c


def run(devices: list[str], reps: int) -> list[Result]:
    """Every case of the section on the requested devices."""
    results: list[Result] = []
    for dev in devices:
        if dev == "cpu":
            xp: Any = np
            backend = "numpy"

            def timer(f: Fn, r: int, sync: Fn | None = None) -> float:
                return median_cpu(f, r)

        else:
            import cupy

            xp = cupy
            backend = "cuda"
            sync: Fn | None = None
            if have("torch"):
                import torch

                sync = torch.cuda.synchronize

            def timer(f: Fn, r: int, sync: Fn | None = sync) -> float:
                return median_gpu(f, r, wall=True, sync=sync)

        cases: list[tuple[str, int, int | None, dict[str, Fn]]] = [
            ("seed 4x4 SLICE1", 16, None, _seed(xp, backend))
        ]
        for n in COUNTS:
            cases += [(c, b, n, f) for c, b, f in _split_join(n, xp, backend)]
        for case, nbytes, count, contenders in cases:
            res = Result(SECTION, case, dev, nbytes, OURS, count=count)
            r = reps * 10 if count is None or count <= 16 else max(5, reps * 160 // count)
            for name, fn in contenders.items():
                res.times[name] = timer(fn, r)
            results.append(res)
            print(f"  measured {dev}: {case}", file=sys.stderr, flush=True)
    return results
