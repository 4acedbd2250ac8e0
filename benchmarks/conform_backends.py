"""The generated ONNX cases (dmlops.conformance) on every backend present: each GPU backend's
outputs against the numpy engine's, bit for bit (python benchmarks/conform_backends.py
[COUNT] [SEEDS...]). Prints one line per mismatch or unexpected refusal, then a summary."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import dmlops
import dmlops.onnx
from dmlops.conformance import onnx_cases


def _backends() -> list[str]:
    found = []
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        found.append("cuda")
    except Exception:  # noqa: BLE001 - no CUDA here
        pass
    try:
        import dmlops.webgpu

        dmlops.webgpu.asarray(np.zeros(1, np.float32))
        found.append("webgpu")
    except Exception:  # noqa: BLE001 - no WebGPU adapter here
        pass
    return found


def _place(backend: str, a: np.ndarray[Any, Any]) -> Any:
    if backend == "webgpu":
        import dmlops.webgpu

        return dmlops.webgpu.asarray(a)
    import cupy

    return cupy.asarray(a)


def _host(a: Any) -> np.ndarray[Any, Any]:
    if hasattr(a, "get"):
        return np.asarray(a.get())
    if hasattr(a, "numpy"):
        return np.asarray(a.numpy())
    return np.asarray(a)


def main() -> int:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    seeds = [int(s) for s in sys.argv[2:]] or [0]
    backends = _backends()
    print("backends:", ", ".join(backends) or "none but numpy")
    bad = total = 0
    for seed in seeds:
        for case in onnx_cases.generate(seed, count):
            for backend in backends:
                total += 1
                device = dmlops.Device(backend=backend)
                feeds = {k: _place(backend, v) for k, v in case.inputs.items()}
                try:
                    got = [_host(o) for o in dmlops.onnx.run(case.model, feeds, device)]
                except dmlops.DmlError as e:
                    if case.outputs is not None:
                        bad += 1
                        print(f"{backend} refused {case.name}: {e}")
                    continue
                if case.outputs is None:
                    if case.recipe.invalid not in onnx_cases.DATA_RULES:
                        bad += 1
                        print(f"{backend} answered invalid {case.name}")
                    continue
                same = [
                    g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes()
                    for g, w in zip(got, case.outputs, strict=True)
                ]
                if not all(same):
                    bad += 1
                    print(f"{backend} differs from numpy on {case.name}")
    print(f"{total} runs, {bad} problems")
    return 0


if __name__ == "__main__":
    sys.exit(main())
