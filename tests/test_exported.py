"""Models as torch's exporters write them (both exporters, several opsets) run bit-exact.

The models and torch's own outputs were made by benchmarks/export_models.py: data
movement, padding, and the indexing patterns of everyday torch code (x[:, 2],
x[arange(B), lengths - 1], index_copy, one_hot, gather and scatter with fewer indices,
embedding, an MoE un-permute that returns its int64 order beside the data, bool masks,
a 0-D element expanded).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import HAS_CUDA, to_host

onnx = pytest.importorskip("onnx")

from dmlops import Device, FeatureLevel  # noqa: E402
from dmlops import onnx as dml_onnx  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "exported"
MODELS = sorted(DATA.glob("*.onnx"))
DEVICES = [
    "default",  # dmlops.onnx.run without a Device
    "numpy",
    pytest.param("cuda", marks=pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")),
]


def test_the_exports_are_here() -> None:
    assert len(MODELS) >= 100
    names = {p.stem.split("__")[0] for p in MODELS}
    assert {"select_column", "last_valid", "index_copy", "one_hot", "scatter_fewer"} <= names


@pytest.mark.parametrize("backend", DEVICES)
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_exported_model_runs_bit_exact(path: Path, backend: str) -> None:
    data = np.load(path.with_suffix(".npz"))
    inputs = {k: data[k] for k in data.files if k.startswith("in")}
    expected = [
        data[k]
        for k in sorted((k for k in data.files if k.startswith("out")), key=lambda k: int(k[3:]))
    ]
    device = None if backend == "default" else Device(backend=backend)
    assert device is None or device.feature_level == FeatureLevel.newest()
    if backend == "cuda":
        import cupy

        inputs = {k: cupy.asarray(v) for k, v in inputs.items()}
    got = dml_onnx.run(str(path), inputs, device)
    assert len(got) == len(expected)
    compiled = dml_onnx.compile(str(path), inputs, device)
    if compiled.plan is not None:  # one plan, no intermediate: bytes moved = bytes produced
        assert compiled.plan.bytes_written == sum(int(e.nbytes) for e in expected)
    for g, e in zip(got, expected):
        g = to_host(g)
        assert g.shape == e.shape
        assert g.tobytes() == e.tobytes()
