"""What the calls read of many numpy arrays in C (`backends/numpy_api/arrays.c`): their key,
equal for two lists exactly where their arrays' types, sizes and strides are equal, array by
array (arrays it does not key — subclasses, flexible, object, datetime types — leave the key
to Python), which a warm call of many arrays finds its compiled call by (and without the
extension by Python's); and their owners, the numpy backend's `owner` of each."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlops
from dmlops.calls import dispatch, signatures

needs_c = pytest.mark.skipif(signatures._arrays_key is None, reason="backends._numpy_api not built")

DTYPES = ["f4", ">f4", "i8", "u1", "?", "c8", ">c16", "f2", "i2", ">u4", "f8"]


@st.composite
def _arrays(draw: Any) -> np.ndarray[Any, Any]:
    dtype = draw(st.sampled_from(DTYPES))
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    base = np.zeros(tuple(2 * n + 1 for n in shape), dtype)
    steps = tuple(draw(st.sampled_from([1, 2, -1, -2])) for _ in shape)
    if not shape:
        return base  # (a 0-D array: indexing it with () would give a scalar)
    view = base[tuple(slice(None, None, s) for s in steps)]
    return view[tuple(slice(0, n) for n in shape)]


@needs_c
@settings(max_examples=300, deadline=None)
@given(st.lists(_arrays(), min_size=1, max_size=6), st.lists(_arrays(), min_size=1, max_size=6))
def test_keys_are_equal_exactly_where_every_array_is_alike(
    xs: list[np.ndarray[Any, Any]], ys: list[np.ndarray[Any, Any]]
) -> None:
    """Random lists (each drawn twice, runs of alike arrays among them): the packed keys
    agree as the Python keys (dtype, shape, strides of each array) agree."""
    for left, right in ((xs, ys), (xs, [x.copy() if x.flags.c_contiguous else x for x in xs])):
        same = [signatures._NUMPY_KEY(a) for a in left] == [signatures._NUMPY_KEY(b) for b in right]
        assert (signatures._arrays_key(left) == signatures._arrays_key(right)) == same
    runs = xs + xs + xs  # (runs of equal records packed as one)
    assert signatures._arrays_key(runs) != signatures._arrays_key(xs) or len(xs) == 0


@needs_c
@pytest.mark.parametrize(
    "odd",
    [
        np.zeros(3, "M8[s]"),
        np.zeros(3, "m8[ms]"),
        np.zeros(3, "U2"),
        np.zeros(3, "S2"),
        np.zeros(3, object),
        np.zeros(3, [("a", "i4")]),
        np.zeros(3).view(np.matrix),
        np.ma.zeros(3),
    ],
    ids=lambda a: f"{type(a).__name__}-{a.dtype}",
)
def test_arrays_it_does_not_key_leave_the_key_to_python(odd: Any) -> None:
    """A datetime's unit, a string's length, a subclass's type: not in a packed record, so
    a list with such an array has none (its key is Python's, which holds them)."""
    assert signatures._arrays_key([np.zeros(3)] * 8 + [odd]) is None
    assert signatures.numpy_keys([np.zeros(3)] * 8 + [odd])[-1] == signatures._NUMPY_KEY(odd)


@pytest.mark.parametrize("in_c", [True, False])
def test_a_warm_call_of_many_arrays_finds_its_call(in_c: bool, monkeypatch: Any) -> None:
    """A join of nine arrays, again on other arrays alike: no second compile; arrays of other
    strides or another byte order compile their own; answers numpy's."""
    if in_c and signatures._arrays_key is None:
        pytest.skip("backends._numpy_api not built")
    if not in_c:
        monkeypatch.setattr(signatures, "_arrays_key", None)
    dispatch.clear_cache()
    parts = [np.arange(12, dtype=np.float32).reshape(3, 4) + k for k in range(9)]
    assert np.array_equal(dmlops.join(parts, 0), np.concatenate(parts, 0))
    compiled = dispatch.cache_size()
    again = [p * 2 for p in parts]
    assert np.array_equal(dmlops.join(again, 0), np.concatenate(again, 0))
    assert dispatch.cache_size() == compiled
    strided = [(np.arange(24, dtype=np.float32).reshape(3, 8) + k)[:, ::2] for k in range(9)]
    assert np.array_equal(dmlops.join(strided, 0), np.concatenate(strided, 0))
    swapped = [p.astype(">f4") for p in parts]
    assert np.array_equal(dmlops.join(swapped, 0), np.concatenate(parts, 0))
    assert dispatch.cache_size() == compiled + 2


def test_many_owners_read_in_c_are_the_backends_owner_of_each() -> None:
    """The numpy backend's owners of many arrays (one C call where built) are its `owner` of
    each: arrays owning their data, views and views of views, the engine's memory blocks,
    memory of unknown origin (a bytes object's, a subclass), in one list."""
    from dmlops.backends import cpu_engine
    from dmlops.backends.numpy_backend import NumpyBackend

    backend = NumpyBackend.instance()
    big = np.zeros((4, 64, 1024), np.float32)
    block = cpu_engine.empty((1 << 20,), np.float32)  # (the engine's memory, where built)
    arrays = [
        np.zeros(3),
        big,
        big[1],
        big[1][::2, 3:],
        block,
        block[5:9],
        np.frombuffer(b"abcdefgh", np.uint8),
        np.zeros(3).view(np.matrix),
        np.arange(4)[::-1],
    ]
    owners = backend.owners(arrays * 2)
    assert [id(o) for o in owners] == [id(backend.owner(a)) for a in arrays * 2]
    assert owners[2] is big and owners[6] is None and owners[7] is None


def test_an_output_among_many_inputs_apart_only_where_no_input_shares_its_owner() -> None:
    """Owners read at once for many inputs: apart where every input owns other memory; not
    where one input views the output's memory or has no known owner."""
    from dmlops.backends.numpy_backend import NumpyBackend
    from dmlops.overlap import owners_apart

    backend = NumpyBackend.instance()
    out = np.zeros((16, 4), np.float32)
    own = [np.zeros((1, 4), np.float32) for _ in range(15)]
    for many in (None, backend.owners):
        assert owners_apart(backend.owner, own, [out], many)
        assert not owners_apart(backend.owner, [*own, out[3:4]], [out], many)
        unknown = np.frombuffer(bytearray(16), np.float32).reshape(1, 4)
        assert not owners_apart(backend.owner, [*own, unknown], [out], many)


def test_many_addresses_read_in_c_are_each_arrays_data_address() -> None:
    """The numpy backend's addresses of many arrays (one C call where built) are each
    array's `__array_interface__` data address: views, reversed views (their first element's
    address), empty and 0-D arrays, subclasses; an item that is no array is read in Python."""
    from dmlops.backends.numpy_backend import NumpyBackend

    backend = NumpyBackend.instance()
    big = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    arrays = [big, big[1], big[:, ::-1, 2:], big[::-1], np.zeros(0), np.float64(1.5) * np.ones(())]
    arrays.append(np.zeros(3).view(np.matrix))
    want = [a.__array_interface__["data"][0] for a in arrays]
    assert backend.addresses(arrays) == want
    assert [backend.address(a) for a in arrays] == want
    with pytest.raises(AttributeError):
        backend.addresses([*arrays, object()])  # (read in Python: no array interface)


@pytest.mark.parametrize("in_c", [True, False])
def test_joins_of_many_arrays_into_out_with_and_without_the_extension(
    in_c: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A join of twelve arrays into a given output: apart (their own memory), into views of
    the output itself (staged first), and of arrays whose owner is unknown (a bytearray's
    memory: addresses read) — right with the owners and addresses read in C and in Python."""
    from dmlops.backends import numpy_backend

    if not in_c:
        monkeypatch.setattr(numpy_backend, "_OWNERS", None)
        monkeypatch.setattr(numpy_backend, "_ADDRESSES", None)
    dispatch.clear_cache()
    out = np.zeros((24, 3), np.float32)
    own = [np.full((2, 3), k, np.float32) for k in range(12)]
    assert dmlops.join(own, 0, out=out) is out and np.array_equal(out, np.concatenate(own))
    inside = [out[2 * k : 2 * k + 2] for k in range(12)][::-1]
    want = np.concatenate([v.copy() for v in inside])
    assert np.array_equal(dmlops.join(inside, 0, out=out), want)
    memory = bytearray(12 * 2 * 3 * 4)
    unknown = list(np.frombuffer(memory, np.float32).reshape(12, 2, 3))
    for k, u in enumerate(unknown):
        u[...] = -k
    assert np.array_equal(dmlops.join(unknown, 0, out=out), np.concatenate(unknown))
