"""The signature fast path: compiled once per signature, validated in full on any change,
bounded, thread-safe; validation before allocation; non-arrays named."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

import dmlops
from conftest import HAS_CUDA, to_device, to_host
from dmlops import DmlError, InvalidDescriptorError, calls, functional
from dmlops.backends import get_backend
from dmlops.ops._base import OperatorDesc

A = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
WINDOW = ([0, 0, 0, 1], [1, 1, 4, 3], [1, 1, -2, 2])


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    functional.clear_cache()
    seen: list[str] = []
    original = OperatorDesc.validate

    def counting(self, level=None):  # type: ignore[no-untyped-def]
        seen.append(self.OPERATOR)
        return original(self, level)

    monkeypatch.setattr(OperatorDesc, "validate", counting)
    return seen


def test_a_repeated_signature_is_validated_once(backend: str, validations: list[str]) -> None:
    a = to_device(backend, A)
    first = to_host(dmlops.slice1(a, *WINDOW))
    for _ in range(5):
        np.testing.assert_array_equal(to_host(dmlops.slice1(a, *WINDOW)), first)
    other = to_device(backend, A + 100)  # same signature, another array
    np.testing.assert_array_equal(to_host(dmlops.slice1(other, *WINDOW)), first + 100)
    assert validations == ["SLICE1"]
    np.testing.assert_array_equal(first, [[[[14, 16], [6, 8]]]])


@pytest.mark.parametrize(
    "change",
    [
        lambda a, w: (a.astype(np.float16), w),
        lambda a, w: (np.ascontiguousarray(a.reshape(1, 4, 4).transpose(0, 2, 1))[None], w),
        lambda a, w: (np.asfortranarray(a), w),
        lambda a, w: (a, ([0, 0, 1, 1], [*w[1][:2], 3, 3], w[2])),
        lambda a, w: (a, (w[0], w[1], [1, 1, 2, 2])),
    ],
)
def test_any_change_in_the_signature_validates_again(validations: list[str], change) -> None:  # type: ignore[no-untyped-def]
    dmlops.slice1(A, *WINDOW)
    a, w = change(A, WINDOW)
    dmlops.slice1(a, *w)
    assert validations == ["SLICE1", "SLICE1"]


def test_a_cached_signature_does_not_admit_other_types(validations: list[str]) -> None:
    dmlops.slice(A, [0, 0, 1, 0], [1, 1, 2, 2], [1, 1, 2, 3])
    with pytest.raises(
        InvalidDescriptorError, match=r"SLICE.Strides\[2\] is 2.0: expected an integer"
    ):
        dmlops.slice(A, [0, 0, 1, 0], [1, 1, 2, 2], [1, 1, 2.0, 3])
    with pytest.raises(InvalidDescriptorError, match=r"SLICE.Offsets\[0\] is False"):
        dmlops.slice(A, [False, 0, 1, 0], [1, 1, 2, 2], [1, 1, 2, 3])
    np.testing.assert_array_equal(
        dmlops.slice(A, np.array([0, 0, 1, 0]), (1, 1, 2, 2), [1, 1, 2, 3]), [[[[5, 8], [13, 16]]]]
    )


def test_an_invalid_call_is_never_cached(validations: list[str]) -> None:
    for _ in range(3):
        with pytest.raises(DmlError, match=r"SLICE1.InputWindowStrides\[2\] is 0"):
            dmlops.slice1(A, [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, 0, 2])
    with pytest.raises(DmlError, match=r"SLICE1.OutputTensor.Sizes\[3\] is 3: .*MaxCopiedElements"):
        dmlops.slice1(A, [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, 2, 2], [1, 1, 2, 3])
    assert functional.cache_size() == 0


def test_read_only_output_is_refused_even_after_a_writable_one() -> None:
    out = np.empty((1, 1, 2, 2), np.float32)
    dmlops.slice1(A, *WINDOW, out=out)
    out.flags.writeable = False
    with pytest.raises(dmlops.BindingError, match="read-only"):
        dmlops.slice1(A, *WINDOW, out=out)


def test_the_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    functional.clear_cache()
    monkeypatch.setattr(calls._CACHE, "size", 8)
    for n in range(1, 30):
        x = np.arange(n, dtype=np.int32)
        assert dmlops.slice1(x, [0], [n], [-1]).tolist() == list(range(n))[::-1]
    assert functional.cache_size() == 8


def test_many_threads_mixing_signatures_get_their_own_results() -> None:
    functional.clear_cache()
    rng = np.random.default_rng(7)
    arrays = [
        rng.integers(0, 1000, (n, n + 1)).astype(dt)
        for n in (3, 4, 5)
        for dt in (np.float32, np.int64, np.uint8)
    ]
    failures: list[str] = []
    barrier = threading.Barrier(8)

    def worker(k: int) -> None:
        barrier.wait()
        for i in range(300):
            a = arrays[(k + i) % len(arrays)]
            h, w = a.shape
            step = 1 + (k + i) % 2
            got = dmlops.slice1(a, [0, 0], [h, w], [1, -step])
            parts = dmlops.split(a, 0, [1, h - 1])
            back = dmlops.join(parts, 0)
            if not (
                np.array_equal(got, a[:, ::-step])
                and np.array_equal(back, a)
                and got.dtype == a.dtype
            ):
                failures.append(f"thread {k} call {i}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_fields_are_validated_before_anything_is_allocated(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = get_backend(backend)
    monkeypatch.setattr(b, "new_like", lambda *a: pytest.fail("allocated before validating"))
    a = to_device(backend, np.zeros((2, 2), np.float32))
    with pytest.raises(InvalidDescriptorError, match=r"^SLICE.Sizes\[0\] is 9223372036854775808"):
        dmlops.slice(a, [0, 0], [2**63, 1], [1, 1])
    with pytest.raises(InvalidDescriptorError, match=r"^SLICE1.InputWindowStrides\[1\] is 0"):
        dmlops.slice1(a, [0, 0], [2, 2], [1, 0], [1, 1])
    with pytest.raises(DmlError, match=r"^SPLIT"):
        dmlops.split(a, 0, [1, 2])
    with pytest.raises(DmlError, match=r"^JOIN.Axis is 2"):
        dmlops.join([a, a], 2)


@pytest.mark.parametrize("bad", [None, "abc", b"xy", {"a": 1}])
def test_non_arrays_are_named(bad: object) -> None:
    with pytest.raises(DmlError, match=rf"^expected an array, got {type(bad).__name__}$"):
        dmlops.slice(bad, [0], [1], [1])
    with pytest.raises(DmlError, match=rf"^expected an array, got {type(bad).__name__}$"):
        dmlops.join([A, bad], 0)


def test_lists_still_work_without_a_signature() -> None:
    assert dmlops.slice1([1, 2, 3], [0], [3], [-1]).tolist() == [3, 2, 1]
    out = np.zeros(3, np.int64)
    assert dmlops.slice1(np.array([1, 2, 3]), [0], [3], [-1], out=out) is out


def test_the_call_cache_evicts_the_least_recently_used() -> None:
    """Hits take no lock and move a key at most once between two puts; eviction still
    drops the signature used longest ago."""
    from dmlops.calls import _LRU

    cache = _LRU(2)
    a, b, c = object(), object(), object()
    cache.put("a", a)  # type: ignore[arg-type]
    cache.put("b", b)  # type: ignore[arg-type]
    assert cache.get("a") is a  # now the most recent
    assert cache.get("a") is a
    cache.put("c", c)  # type: ignore[arg-type]
    assert cache.get("b") is None and cache.get("a") is a and cache.get("c") is c
    assert len(cache) == 2
    cache.clear()
    assert cache.get("a") is None and len(cache) == 0


def test_a_cached_call_never_serves_fields_of_another_type() -> None:
    """1.0 and True equal 1, but DirectML's fields are integers: a call compiled for ints
    must not answer a float or a bool where the uncached call refuses it; numpy's integers
    are integers."""
    from dmlops import DmlError

    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    want = dmlops.slice1(x, [0, 1], [4, 2], [1, 1])
    for bad in ([0.0, 1], [0, True]):
        with pytest.raises(DmlError):
            dmlops.slice1(x, bad, [4, 2], [1, 1])
    got = dmlops.slice1(x, [np.int64(0), np.int32(1)], [4, 2], [1, 1])
    assert np.array_equal(got, want)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
def test_many_torch_tensors_are_keyed_at_once_as_one_by_one(validations: list[str]) -> None:
    """A join of 16 CUDA tensors reads their keys in one pass: the fields of each tensor's
    own key, a tuple a field, so a change in any one tensor's shape, strides or type
    compiles anew, and a CPU tensor among them is refused as mixed memory."""
    torch = pytest.importorskip("torch")
    parts = [torch.full((2, 3), float(k), device="cuda") for k in range(16)]
    expected = torch.cat(parts)
    functional.backend_of(parts)  # (the backend's key functions learnt, as a first call does)
    assert calls._keyed_inputs([], parts)
    one_by_one: list[object] = []
    for p in parts:
        one_by_one.append(calls._ARRAY_KEYS[torch.Tensor](p))
    at_once: list[object] = []
    assert calls._keyed_inputs(at_once, parts)
    assert at_once[1:] == [tuple(column) for column in zip(*one_by_one, strict=True)]
    for _ in range(3):
        assert torch.equal(dmlops.join(parts, 0), expected)
    assert validations == ["JOIN"]
    changed = [*parts[:7], parts[7].t().contiguous().t(), *parts[8:]]  # other strides
    assert torch.equal(dmlops.join(changed, 0), expected)
    doubled = [*parts[:15], parts[15].double()]
    with pytest.raises(DmlError):
        dmlops.join(doubled, 0)
    assert validations[:2] == ["JOIN", "JOIN"]
    with pytest.raises(DmlError, match="host"):
        dmlops.join([*parts[:15], parts[15].cpu()], 0)


def test_each_backend_is_made_once_when_threads_first_ask_at_once() -> None:
    """Threads asking for a backend at once, before it exists (one slow to make), all get
    one object, made once."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    from dmlops.backends.base import made_once

    class Slow:
        _instance: Slow | None = None
        made = 0

        def __init__(self) -> None:
            time.sleep(0.02)
            Slow.made += 1

    with ThreadPoolExecutor(16) as pool:
        got = list(pool.map(lambda _: made_once(Slow), range(64)))
    assert Slow.made == 1 and all(g is got[0] for g in got)


def test_the_engines_fields_key_keeps_each_values_type() -> None:
    """The CPU engine's `fields_key`: equal for equal values of equal types, apart where a
    type or a value differs (1 / 1.0 / True, a list / a tuple, 0.0 / -0.0, nesting), and
    None for a value it does not walk (the caller pickles it); never a pickle's bytes."""
    from dmlops.backends import cpu_engine

    module = cpu_engine.native()
    if module is None:
        pytest.skip("the engine is not built")
    key = module.fields_key
    plain = ([0, -1, 2**62], (4, 8), None, "AXIS", [[1.5, True], ()], 2**63 - 1, -(2**63))
    assert key(*plain) == key(*plain) and isinstance(key(*plain), bytes)
    others = [
        [1], [1.0], [True], [(1,)], [[1]], [0.0], [-0.0], ["1"], [None], [[]], [()],
        [[1, 2]], [[1], [2]], [[1, [2]]], [2**40], [-(2**40)], [False], [""], ["é"],
    ]  # fmt: skip
    keys = [key(*o) for o in others]
    assert len(set(keys)) == len(keys)
    assert key(1, 2) != key((1, 2)) != key([1, 2])
    for refused in (2**63, -(2**63) - 1, np.int64(3), object(), [np.float32(1)], {1: 2}):
        assert key(refused) is None
    deep: list[Any] = [1]
    for _ in range(6):
        deep = [deep]
    assert key(deep) is not None and key([deep]) is None  # (a field's lists 7 deep at most)
    long = list(range(10_000))  # (past the first buffer)
    assert key(long) == key(list(range(10_000))) != key(long[:-1])
    assert not key(1).startswith(b"\x80")  # (a pickle's first byte)


def test_calls_key_their_fields_through_the_engine_where_it_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The call cache's fields key: the engine's where it is built and enabled, pickle for
    what it refuses and where it is not."""
    import pickle

    from dmlops.backends import cpu_engine
    from dmlops.calls import signatures

    monkeypatch.setattr(signatures, "_KEYER", [None])
    fields = ([0, 1], [4, 2], [1, 1], None)
    if cpu_engine.available():
        assert signatures._fields_key(*fields) == cpu_engine.native().fields_key(*fields)
    odd = (np.int64(0), [1])
    assert signatures._fields_key(*odd) == pickle.dumps(odd, pickle.HIGHEST_PROTOCOL)
    monkeypatch.setattr(signatures, "_KEYER", [signatures._no_key])
    assert signatures._fields_key(*fields) == pickle.dumps(fields, pickle.HIGHEST_PROTOCOL)
