"""Calls on numpy subclasses (`np.memmap`, a user's subclass): keyed by their type, type,
sizes and strides and compiled once (each call binds them as plain numpy views), bit-exact
with the same calls on plain arrays; a memmap given as out= is written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dmlops
from dmlops.calls import dispatch


class Tagged(np.ndarray):  # type: ignore[type-arg]
    """A user's subclass with nothing of its own."""


CALLS: dict[str, Callable[[Any], Any]] = {
    "slice1": lambda x: dmlops.slice1(x, [0, 0, 0], [5, 4, 3], [-2, 1, -1]),
    "join": lambda x: dmlops.join([x, x], 1),
    "split": lambda x: dmlops.split(x, 1, [1, 3]),
    "padding": lambda x: dmlops.padding(x, [0, 1, 0], [1, 0, 2], mode="reflection"),
    "gather": lambda x: dmlops.gather(x, np.array([4, 0, 2, 2]), 0),
    "cast": lambda x: dmlops.cast(x, np.float16),
}


def _values(seed: int) -> np.ndarray[Any, Any]:
    x = np.random.default_rng(seed).standard_normal((5, 4, 3)).astype(np.float32)
    x[0, 0, 0] = -0.0
    return x


def _memmap(path: Path, x: np.ndarray[Any, Any]) -> Any:
    np.save(path, x)
    return np.load(path, mmap_mode="r")


@pytest.mark.parametrize("kind", ["memmap", "subclass"])
@pytest.mark.parametrize("name", list(CALLS))
def test_a_warm_call_on_a_numpy_subclass_is_cached_and_exact(
    name: str, kind: str, tmp_path: Path
) -> None:
    """Two calls on arrays of one signature: compiled once, each bit-exact with the call
    on plain arrays."""
    call = CALLS[name]
    got: list[Any] = []
    dispatch.clear_cache()
    for seed in (1, 2):  # (other values the second time: nothing stale)
        plain = _values(seed)
        x = _memmap(tmp_path / f"{seed}.npy", plain) if kind == "memmap" else plain.view(Tagged)
        got.append(call(x))
        assert dispatch.cache_size() == 1  # (compiled and kept at the first call)
    for seed, result in zip((1, 2), got, strict=True):
        want = call(_values(seed))
        results = result if isinstance(result, list) else [result]
        wanted = want if isinstance(want, list) else [want]
        for r, w in zip(results, wanted, strict=True):
            assert r.dtype == w.dtype and r.shape == w.shape and r.tobytes() == w.tobytes()


def test_a_memmap_given_as_out_is_written(tmp_path: Path) -> None:
    out = np.lib.format.open_memmap(tmp_path / "out.npy", "w+", np.float32, (5, 4, 3))
    dispatch.clear_cache()
    for seed in (1, 2):
        x = _values(seed)
        assert dmlops.slice1(x, [0, 0, 0], [5, 4, 3], [-1, 1, -1], out=out) is out
        assert out.tobytes() == x[::-1, :, ::-1].tobytes()
        assert dispatch.cache_size() == 1  # (compiled and kept at the first call)
    out.flush()
    assert np.load(tmp_path / "out.npy").tobytes() == x[::-1, :, ::-1].tobytes()
