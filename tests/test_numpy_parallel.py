"""Large plans, on the CPU engine and on the numpy engine's thread-pool path (where the
engine is not built): bit-exact, the pool's element views letting the threads copy at once
(numpy holds the GIL for void-row copies)."""

from __future__ import annotations

import numpy as np
import pytest

import dmlops
from dmlops import BufferTensorDesc, DataType, Device, JoinDesc
from dmlops.backends import cpu_engine
from dmlops.backends.numpy_backend import NumpyBackend, NumpyCopy


@pytest.fixture(autouse=True, params=["engine", "numpy threads"])
def engine_or_pool(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Each test on the CPU engine and on the numpy engine's thread pool (the path where the
    engine is not built)."""
    cpu_engine.set_enabled(request.param == "engine")
    dmlops.functional.clear_cache()
    yield
    cpu_engine.set_enabled(True)
    dmlops.functional.clear_cache()


def _bits(rows: int, cols: int, seed: int) -> np.ndarray:
    raw = np.random.default_rng(seed).integers(0, 2**63, (rows, cols), dtype=np.uint64)
    special = [0x7FF8_0000_DEAD_BEEF, 0x8000_0000_0000_0000, 0x7FF0_0000_0000_0000, 1]
    raw[0, : min(4, cols)] = special[: min(4, cols)]
    return raw.view(np.float64)  # NaN with a payload, -0.0, inf, a denormal


def test_large_join_runs_on_the_pool_bit_exact() -> None:
    a, b = _bits(64, 70001, 1), _bits(64, 3, 2)
    desc = JoinDesc(
        [BufferTensorDesc(DataType.FLOAT64, a.shape), BufferTensorDesc(DataType.FLOAT64, b.shape)],
        BufferTensorDesc(DataType.FLOAT64, (64, 70004)),
        1,
    )
    op = Device().create_operator(desc)
    backend = NumpyBackend.instance()
    assert backend.threads == 1 or backend._is_parallel(op.plan)
    out = np.empty((64, 70004), np.float64)
    op.execute([a, b], [out])
    assert out[:, :70001].view(np.uint64).tobytes() == a.view(np.uint64).tobytes()
    assert out[:, 70001:].view(np.uint64).tobytes() == b.view(np.uint64).tobytes()
    table = op.bind([a, b], [out])
    out[...] = 0
    table.dispatch()
    got = dmlops.join([a, b], 1)
    assert out.view(np.uint64).tobytes() == got.view(np.uint64).tobytes()


def test_pool_views_keep_element_dtypes() -> None:
    a = _bits(64, 70001, 3)
    plan = (
        Device()
        .create_operator(
            JoinDesc(
                [BufferTensorDesc(DataType.FLOAT64, a.shape)] * 2,
                BufferTensorDesc(DataType.FLOAT64, (64, 140002)),
                1,
            )
        )
        .plan
    )
    for copy in plan.copies:
        assert NumpyCopy.of(copy, 8, void_rows=False).dtype == np.uint64
        assert NumpyCopy.of(copy, 8).dtype.kind == "V"  # one thread: a memcpy per row
