"""`device=` in the functional API: host arrays in, host arrays out, on any backend."""

from __future__ import annotations

import numpy as np
import pytest

import dmlops
from conftest import to_device
from dmlops.errors import BindingError, DmlError


def test_host_arrays_run_on_the_named_device(backend: str) -> None:
    x = np.arange(60, dtype=np.float16).reshape(6, 10)
    got = dmlops.slice1(x, [0, 1], [6, 9], [-2, 3], device=backend)
    assert isinstance(got, np.ndarray)
    assert got.tobytes() == dmlops.slice1(x, [0, 1], [6, 9], [-2, 3]).tobytes()
    out = np.zeros((6, 10), np.float16)
    assert (
        dmlops.join(dmlops.split(x, 1, [3, 7], device=backend), 1, device=backend, out=out) is out
    )
    assert out.tobytes() == x.tobytes()
    y = np.arange(16, dtype=np.int8).reshape(1, 4, 2, 2)
    assert (
        dmlops.depth_to_space(y, 2, device=backend).tobytes()
        == dmlops.depth_to_space(y, 2).tobytes()
    )


def test_a_failed_call_leaves_host_outputs_untouched(backend: str) -> None:
    x = np.arange(8, dtype=np.int32)
    out = np.full(4, 7, np.int32)
    with pytest.raises(DmlError, match="SLICE"):
        dmlops.slice(x, [6], [4], [1], device=backend, out=out)
    assert (out == 7).all()


def test_device_arrays_stay_on_the_device(backend: str) -> None:
    if backend == "numpy":
        pytest.skip("host arrays are the numpy device's own")
    x = to_device(backend, np.arange(12, dtype=np.uint16))
    got = dmlops.slice1(x, [0], [12], [-1], device=backend)
    assert not isinstance(got, np.ndarray)
    with pytest.raises(BindingError, match="not on device 'numpy'"):
        dmlops.slice1(x, [0], [12], [-1], device="numpy")


def test_jax_arrays_on_the_cpu_come_back_as_jax_arrays() -> None:
    """As torch tensors, CuPy arrays and JAX GPU arrays come back as their own type."""
    pytest.importorskip("jax")
    import jax

    cpu = jax.devices("cpu")[0]
    x = jax.device_put(np.arange(24, dtype=np.float32).reshape(4, 6), cpu)
    y = dmlops.slice1(x, [0, 0], [4, 6], [-1, 2])
    assert type(y).__module__.split(".")[0] in ("jax", "jaxlib")
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x)[::-1, ::2])
    parts = dmlops.split(x, 1, [1, 5])
    assert all(type(p).__module__.split(".")[0] in ("jax", "jaxlib") for p in parts)
    g = dmlops.gather(x, jax.device_put(np.array([3, 0]), cpu), 0)
    assert type(g).__module__.split(".")[0] in ("jax", "jaxlib")
    np.testing.assert_array_equal(np.asarray(g), np.asarray(x)[[3, 0]])
