"""Calls on JAX arrays: keyed by type, shape and device and compiled once per signature
(each call binds the arrays as the backend's own and gives JAX arrays back), bit-exact with
the same calls on numpy arrays; on the CPU, and on a GPU where JAX has one. Skipped
without JAX."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from dmlops.calls import dispatch  # noqa: E402
from library_calls import library_calls  # noqa: E402

# each call on (x, rows): x a [5, 4, 3] float32 array
CALLS = library_calls()


def _is_jax(a: Any) -> bool:
    return type(a).__module__.split(".")[0] in ("jax", "jaxlib")


def _device(platform: str) -> Any:
    """JAX's first device of `platform` (found in the test: JAX starts a GPU only there)."""
    try:
        return jax.devices(platform)[0]
    except RuntimeError:
        pytest.skip(f"JAX has no {platform} device here")


@pytest.mark.parametrize("platform", ["cpu", "gpu"])
@pytest.mark.parametrize("name", list(CALLS))
def test_a_warm_call_on_jax_arrays_is_cached_and_exact(name: str, platform: str) -> None:
    """Two calls on arrays of one signature: compiled once, each bit-exact with the call
    on numpy arrays, its results JAX arrays."""
    device = _device(platform)
    call = CALLS[name]
    dispatch.clear_cache()
    rows = np.array([4, 0, 2, 2])
    for seed in (1, 2):  # (other values the second time: nothing stale)
        host = np.random.default_rng(seed).standard_normal((5, 4, 3)).astype(np.float32)
        host[0, 0, 0] = -0.0
        got = call(jax.device_put(host, device), jax.device_put(rows, device))
        want = call(host, rows)
        results = got if isinstance(got, list) else [got]
        wanted = want if isinstance(want, list) else [want]
        assert all(_is_jax(r) for r in results)
        for r, w in zip(results, wanted, strict=True):
            assert np.asarray(r).dtype == w.dtype and np.asarray(r).tobytes() == w.tobytes()
        if seed == 1:
            compiled = dispatch.cache_size()
    assert dispatch.cache_size() == compiled
    assert any(type(c[0]).__name__ == "_Converted" for c in dispatch._CACHE.items.values())
