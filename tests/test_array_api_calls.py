"""Calls on other array libraries' host arrays: a DLPack-only producer (numpy cannot read
it otherwise: before, it became an array of one Python object and was refused) and an
array-API library's arrays (array_api_strict's; before, compiled at every call and given
back as numpy arrays) are keyed by their host view, compiled once, bit-exact with the same
calls on numpy arrays, and give results in the caller's namespace."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dmlops
from dmlops.backends.array_api import keyed_here
from dmlops.calls import dispatch
from library_calls import library_calls


class DLPackOnly:
    """A host array that gives its memory through DLPack alone."""

    def __init__(self, values: np.ndarray[Any, Any]) -> None:
        self.values = values

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.values.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.values.__dlpack_device__()  # type: ignore[return-value]


# each call on (x [5, 4, 3], rows), either a library's arrays or numpy's
CALLS = library_calls(np.int32)


def _values(seed: int) -> np.ndarray[Any, Any]:
    x = (np.random.default_rng(seed).standard_normal((5, 4, 3)) * 100).astype(np.float32)
    x[0, 0, 0] = -0.0
    return x


def _bits(result: Any) -> list[bytes]:
    results = result if isinstance(result, list | tuple) else [result]
    return [np.from_dlpack(r).tobytes() for r in results]


def _listed(result: Any) -> list[Any]:
    return list(result) if isinstance(result, list | tuple) else [result]


@pytest.mark.parametrize("name", list(CALLS))
def test_a_dlpack_only_array_is_compiled_once_and_exact(name: str) -> None:
    """Two calls with other values: one compiled call each time the same, bit-exact with
    numpy's, results numpy arrays (the producer names no namespace)."""
    rows = np.array([4, 0, 2, 2])
    dispatch.clear_cache()
    for seed in (1, 2):
        values = _values(seed)
        got = CALLS[name](DLPackOnly(values), DLPackOnly(rows))
        assert _bits(got) == _bits(CALLS[name](values, rows))
        assert all(type(r) is np.ndarray for r in _listed(got))
        if seed == 1:
            compiled = dispatch.cache_size()
    assert dispatch.cache_size() == compiled


def test_which_types_are_keyed_by_their_host_view() -> None:
    """DLPack producers that numpy cannot read, and array-API arrays; not an object numpy
    reads through `__array__` alone (a dask array would compute for its key)."""

    class ArrayOnly:
        def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
            raise AssertionError("never asked")

    class ArrayAndDLPack(ArrayOnly):
        def __dlpack__(self, **kwargs: Any) -> Any:
            raise AssertionError("never asked")

    class Standard(ArrayAndDLPack):
        def __array_namespace__(self) -> Any:
            return None

    assert keyed_here(DLPackOnly) and keyed_here(Standard)
    assert not keyed_here(ArrayOnly) and not keyed_here(ArrayAndDLPack)


@pytest.mark.parametrize("name", list(CALLS))
def test_array_api_strict_arrays_come_back_in_their_namespace(name: str) -> None:
    """array_api_strict's arrays: compiled once, bit-exact, results its arrays."""
    xp = pytest.importorskip("array_api_strict")
    rows = np.array([4, 0, 2, 2])
    dispatch.clear_cache()
    for seed in (1, 2):
        values = _values(seed)
        got = CALLS[name](xp.asarray(values), xp.asarray(rows))
        assert _bits(got) == _bits(CALLS[name](values, rows))
        assert all(type(r) is type(xp.asarray(values)) for r in _listed(got))
        if seed == 1:
            compiled = dispatch.cache_size()
    assert dispatch.cache_size() == compiled


def test_a_result_of_a_type_the_namespace_lacks_stays_numpy() -> None:
    """array_api_strict has no float16: a cast to it gives numpy's array (the namespace took
    neither its memory nor a copy), of the right values."""
    xp = pytest.importorskip("array_api_strict")
    values = _values(4)
    got = dmlops.cast(xp.asarray(values), np.float16)
    assert type(got) is np.ndarray
    assert got.tobytes() == dmlops.cast(values, np.float16).tobytes()


def test_out_an_array_api_strict_array_is_written() -> None:
    xp = pytest.importorskip("array_api_strict")
    values = _values(3)
    out = xp.zeros((5, 4, 3), dtype=xp.float32)
    got = dmlops.slice1(xp.asarray(values), [0, 0, 0], [5, 4, 3], [-1, 1, 1], out=out)
    assert got is out
    assert np.from_dlpack(out).tobytes() == values[::-1].tobytes()
