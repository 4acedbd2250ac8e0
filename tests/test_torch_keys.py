"""Keys of many torch tensors: tensors that pass the guards of tensors keyed before (torch's
own batch check) get the key those had, and only where reading their fields would give the
same key; the guards leave no tensor alive. Skipped without torch."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from conftest import TORCH_DEVICES  # noqa: E402
from dmlops.backends import library_keys  # noqa: E402

needs_guards = pytest.mark.skipif(
    library_keys.tensor_guards() is None, reason="this torch has no TensorGuards"
)


def _keys(guarded: bool, monkeypatch: pytest.MonkeyPatch) -> Callable[[Any], Any]:
    """A fresh many-tensor key function, with torch's guards or without them."""
    if not guarded:
        monkeypatch.setattr(library_keys, "tensor_guards", lambda: None)
    made = library_keys._many_torch_keys(torch)
    monkeypatch.undo()
    return made


# one tensor of each kind the keys tell apart, each [4, 6] or a view of that shape
def _kinds(device: str) -> dict[str, Callable[[], Any]]:
    return {
        "plain": lambda: torch.zeros(4, 6, device=device),
        "float64": lambda: torch.zeros(4, 6, dtype=torch.float64, device=device),
        "transposed": lambda: torch.zeros(6, 4, device=device).t(),
        "offset": lambda: torch.zeros(5, 6, device=device)[1:],
        "stepped": lambda: torch.zeros(4, 12, device=device)[:, ::2],
        "other shape": lambda: torch.zeros(4, 7, device=device),
        "meta": lambda: torch.zeros(4, 6, device="meta"),
        "complex": lambda: torch.zeros(4, 6, dtype=torch.complex64, device=device),
        "conjugate": lambda: torch.zeros(4, 6, dtype=torch.complex64, device=device).conj(),
        "negative": lambda: torch._neg_view(torch.zeros(4, 6, device=device)),
        "zero tensor": lambda: torch._efficientzerotensor((4, 6), device=device),
        "parameter": lambda: torch.nn.Parameter(torch.zeros(4, 6, device=device), False),
    }


@needs_guards
@pytest.mark.parametrize("device", TORCH_DEVICES)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_guarded_key_is_the_key_read_from_the_tensors(
    device: str, data: st.DataObject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Calls on lists of 8 to 12 tensors of mixed kinds, some lists repeated with one
    tensor changed: every key the guarded functions give (of the list, of each tensor)
    equals the one read field by field (so no call ever finds another's)."""
    kinds = _kinds(device)
    names = sorted(kinds)
    guarded, read = _keys(True, monkeypatch), _keys(False, monkeypatch)
    base = data.draw(st.lists(st.sampled_from(names), min_size=8, max_size=12))
    for _ in range(4):
        ts = [kinds[n]() for n in base]
        if {type(t) for t in ts} == {torch.Tensor}:  # (the many keys' one type)
            assert guarded(ts) == read(ts)
        for t in ts:  # (one tensor's key: remembered by its sizes)
            assert library_keys._torch_key(t) == library_keys._read_torch_key(t)
        spot = data.draw(st.integers(0, len(base) - 1))
        base = [*base[:spot], data.draw(st.sampled_from(names)), *base[spot + 1 :]]


@needs_guards
def test_guards_are_asked_before_fields_are_read_and_keep_no_tensor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The second call on tensors like the first's reads no field (its key comes from the
    guards); the guards keep none of the tensors alive; each count keeps the latest
    GUARDS_KEPT guards (a signature's found again, else read)."""
    keys = _keys(True, monkeypatch)
    ts = [torch.zeros(2, 3) for _ in range(9)]
    first = keys(ts)
    alive = weakref.ref(ts[0])
    del ts
    gc.collect()
    assert alive() is None
    reads: list[int] = []
    real_stride = torch.Tensor.stride
    monkeypatch.setattr(torch.Tensor, "stride", lambda t, *a: reads.append(1) or real_stride(t, *a))
    again = [torch.ones(2, 3) for _ in range(9)]
    assert keys(again) == first and not reads
    for k in range(library_keys.GUARDS_KEPT - 1):  # (the first's guards still kept)
        keys([torch.zeros(2, k + 4) for _ in range(9)])
    reads.clear()
    assert keys(again) == first and not reads
    for k in range(library_keys.GUARDS_KEPT):  # (now the oldest of more than are kept)
        keys([torch.zeros(2, k + 4) for _ in range(9)])
    reads.clear()
    assert keys(again) == first and reads


def test_without_guards_keys_are_read_each_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """A torch without TensorGuards (older, or its private API changed) keys by reading each
    tensor's fields, every call."""
    keys = _keys(False, monkeypatch)
    ts = [torch.zeros(2, 3) for _ in range(9)]
    assert keys(ts) == keys([torch.ones(2, 3) for _ in range(9)])
    assert keys(ts) != keys([torch.zeros(3, 2) for _ in range(9)])


@needs_guards
def test_one_tensors_key_comes_from_guards_of_its_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tensor like one keyed before reads no field; a tensor of other strides, type or
    device of the same sizes is read and keyed apart; a nested tensor has no key."""
    library_keys._ONE_GUARDS.clear()
    first = library_keys._torch_key(torch.zeros(3, 5))
    reads: list[int] = []
    real_stride = torch.Tensor.stride
    monkeypatch.setattr(torch.Tensor, "stride", lambda t, *a: reads.append(1) or real_stride(t, *a))
    assert library_keys._torch_key(torch.ones(3, 5)) == first and not reads
    others = [torch.zeros(5, 3).t(), torch.zeros(3, 5, dtype=torch.int8), torch.zeros(3, 5)[None]]
    assert all(library_keys._torch_key(t) not in (None, first) for t in others) and reads
    monkeypatch.undo()
    nested = torch.nested.nested_tensor([torch.zeros(2, 5), torch.zeros(3, 5)])
    assert library_keys._torch_key(nested) is None


def test_threads_keying_at_once_get_their_own_answers() -> None:
    """Four threads joining CPU tensors of many signatures at once (their guards remembered
    and forgotten as they go): every answer torch.cat's."""
    import random
    import threading

    import dmlops

    wrong: list[tuple[int, int]] = []

    def work(seed: int) -> None:
        pick = random.Random(seed)
        for _ in range(100):
            count, rows, cols = pick.choice([2, 9, 12]), pick.choice([1, 3]), pick.randint(4, 12)
            ts = [torch.full((rows, cols), float(k + seed)) for k in range(count)]
            if pick.random() < 0.3:
                ts[0] = torch.full((cols, rows), -1.0).t()  # (other strides, same sizes)
            if not torch.equal(dmlops.join(ts, 0), torch.cat(ts, 0)):
                wrong.append((seed, count))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong


def test_every_backend_shares_one_many_tensor_key_function() -> None:
    """Asking again (each backend asks at every call's build) gives the same function, so
    the guards it remembers are not forgotten at each new signature."""
    first = library_keys.many_array_keys()[torch.Tensor]
    assert library_keys.many_array_keys()[torch.Tensor] is first


@needs_guards
def test_a_long_key_is_hashed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The keys of many tensors found again from their guards are the same object, whose
    hash is not computed again; a key read anew equals it."""
    keys = _keys(True, monkeypatch)
    ts = [torch.zeros(2, 3) for _ in range(9)]
    (first,) = keys(ts)
    (again,) = keys([torch.ones(2, 3) for _ in range(9)])
    assert again is first and isinstance(first, library_keys.HashedOnce)
    (read,) = _keys(False, monkeypatch)(ts)
    assert read is not first and read == first and hash(read) == hash(first)
    assert read != library_keys.HashedOnce(first.parts[:-1])


@needs_guards
def test_guards_of_ever_new_counts_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lists of ever new lengths (a join that grows by one each step): the guards kept
    describe at most MOST_GUARDED tensors, whatever the program met before."""
    monkeypatch.setattr(library_keys, "MOST_GUARDED", 200)
    keys = _keys(True, monkeypatch)
    monkeypatch.setattr(library_keys, "MOST_GUARDED", 200)
    t = torch.zeros(2)
    for n in range(8, 60):
        keys([t] * n)
    cells = [c.cell_contents for c in keys.__closure__ or ()]
    remembered = next(c for c in cells if isinstance(c, dict))
    held = sum(n * len(kept) for n, kept in remembered.items())
    assert 0 < held <= 200
    assert keys([t] * 59) == keys([t] * 59)  # (the latest still found)
