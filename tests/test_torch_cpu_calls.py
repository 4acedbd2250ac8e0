"""Calls on plain CPU torch tensors: keyed and cached like numpy arrays' (compiled once per
signature, bound through the tensors' numpy views), bit-exact with the same calls on numpy
arrays, results torch tensors; calls a jit trace or a mode watches still go through the
torch operators. Skipped without torch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import dmlops  # noqa: E402
from dmlops.calls import dispatch  # noqa: E402

_INDICES = np.array([[3, 0], [1, 1], [4, 2]], np.int64)

# each call on (x, indices, rows): x a [5, 4, 3] array of the case's type
CALLS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "slice1": lambda x, i, r: dmlops.slice1(x, [0, 0, 0], [5, 4, 3], [-2, 1, -1]),
    "slice": lambda x, i, r: dmlops.slice(x, [1, 0, 1], [2, 4, 2], [2, 1, 1]),
    "join": lambda x, i, r: dmlops.join([x, x[1:]], 0),
    "split": lambda x, i, r: dmlops.split(x, 1, [1, 3]),
    "tile": lambda x, i, r: dmlops.tile(x, [1, 2, 1]),
    "padding": lambda x, i, r: dmlops.padding(x, [0, 1, 0], [1, 0, 2], mode="reflection"),
    "gather": lambda x, i, r: dmlops.gather(x, r, 0),
    "gather_elements": lambda x, i, r: dmlops.gather_elements(x[:, :2, :1], i[:, :, None], 0),
    "depth_to_space": lambda x, i, r: dmlops.depth_to_space(x.reshape(1, 4, 5, 3), 2),
    "cast": lambda x, i, r: dmlops.cast(x, np.float16),
}
DTYPES = [torch.float32, torch.int16, torch.bfloat16]


def _numpy_of(t: Any) -> np.ndarray[Any, Any]:
    """A CPU tensor's elements as numpy's array of the same bits' type (bfloat16 as ml_dtypes')."""
    from dmlops.elements import torch_to_numpy

    return torch_to_numpy(t).copy()


def _bits(r: Any) -> list[bytes]:
    results = r if isinstance(r, list | tuple) else [r]
    return [_numpy_of(t).tobytes() if isinstance(t, torch.Tensor) else t.tobytes() for t in results]


def _values(seed: int, dtype: Any) -> Any:
    x = torch.from_numpy(np.random.default_rng(seed).standard_normal((5, 4, 3)) * 100)
    x[0, 0, 0] = -0.0
    return x.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(CALLS))
def test_a_warm_call_on_cpu_tensors_is_cached_and_exact(name: str, dtype: Any) -> None:
    """Two calls on tensors of one signature: compiled once (the second finds the first's
    call), each bit-exact with the call on numpy arrays, its results torch tensors of the
    input's type that share no memory with the input."""
    if name == "cast" and dtype == torch.bfloat16:
        pytest.skip("CAST has no bfloat16")
    call = CALLS[name]
    dispatch.clear_cache()
    indices, rows = torch.from_numpy(_INDICES), torch.tensor([4, 0, 2, 2])
    for seed in (1, 2):  # (other values the second time: nothing stale)
        x = _values(seed, dtype)
        got = call(x, indices, rows)
        want = call(_numpy_of(x), _INDICES, rows.numpy())
        results = got if isinstance(got, list) else [got]
        assert all(type(t) is torch.Tensor for t in results)
        assert name == "cast" or all(t.dtype == dtype for t in results)
        assert _bits(got) == _bits(want), (name, seed)
        memory = x.untyped_storage().data_ptr()
        assert all(t.untyped_storage().data_ptr() != memory for t in results)
        if seed == 1:
            compiled = dispatch.cache_size()
    assert dispatch.cache_size() == compiled  # (the numpy calls' and the tensors' alike)
    # (CAST casts the tensor's numpy view, its compiled call numpy's own)
    converted = [type(c[0]).__name__ == "_Converted" for c in dispatch._CACHE.items.values()]
    assert any(converted) != (name == "cast")


def test_a_warm_call_into_a_given_cpu_tensor_writes_it() -> None:
    """out= a CPU tensor, twice: written in place, nothing compiled the second time."""
    dispatch.clear_cache()
    out = torch.zeros(4, 4, 3)
    for seed in (1, 2):
        x = _values(seed, torch.float32)
        got = dmlops.slice1(x, [1, 0, 0], [4, 4, 3], [-1, 1, -1], out=out)
        assert got is out
        assert torch.equal(out, torch.flip(x[1:], [0, 2]))
        if seed == 1:
            compiled = dispatch.cache_size()
    assert dispatch.cache_size() == compiled


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_a_tensor_that_needs_a_gradient_outside_autograd(dtype: Any) -> None:
    """Under no_grad a tensor that needs a gradient is bound as any other (its numpy view
    taken after a detach; bfloat16's as words of its size)."""
    x = _values(3, dtype).requires_grad_()
    with torch.no_grad():
        for _ in range(2):
            got = dmlops.gather(x, torch.tensor([1, 1, 0]), 0)
            assert torch.equal(got, x.detach()[[1, 1, 0]])
            assert not got.requires_grad


def test_a_jit_trace_still_records_the_operator() -> None:
    """Under torch.jit.trace a CPU call goes through the torch operators, so the trace
    records dmlops' operator, not a constant: the traced function follows new inputs."""

    def reverse(t: Any) -> Any:
        return dmlops.slice1(t, [0, 0], [2, 3], [1, -1])

    traced = torch.jit.trace(reverse, torch.zeros(2, 3), check_trace=False)
    assert "dmlops" in str(traced.graph)
    y = torch.arange(6.0).reshape(2, 3)
    assert torch.equal(traced(y), torch.flip(y, [1]))


@pytest.mark.parametrize("count", [2, 9])
def test_cpu_and_meta_tensors_are_keyed_apart(count: int) -> None:
    """A meta tensor's call never finds a CPU tensor's (both have no GPU ordinal): keys name
    the device's type, for a few tensors and for many (keyed a field at a time)."""
    from dmlops.calls.signatures import _keyed_inputs

    tensors = {d: [torch.zeros(2, 3, device=d) for _ in range(count)] for d in ("cpu", "meta")}
    keys = {}
    for device, ts in tensors.items():
        dmlops.calls.tensors.backend_of(tensors["cpu"][:1])  # (torch's key functions known)
        parts: list[Any] = []
        assert _keyed_inputs(parts, ts)
        keys[device] = tuple(parts)
    assert keys["cpu"] != keys["meta"]


def test_a_parameter_outside_autograd_is_cached() -> None:
    """An `nn.Parameter` (a tensor subclass) under no_grad: keyed by its type with a
    tensor's key, compiled once, exact; its results plain tensors."""
    weight = torch.nn.Parameter(_values(4, torch.float32))
    rows = torch.tensor([4, 0, 2])
    dispatch.clear_cache()
    with torch.no_grad():
        for _ in range(3):
            got = dmlops.gather(weight, rows, 0)
            assert type(got) is torch.Tensor and not got.requires_grad
            assert torch.equal(got, weight.detach()[[4, 0, 2]])
            assert dispatch.cache_size() == 1


def test_a_parameter_s_strided_calls_outside_autograd_are_cached() -> None:
    """SLICE1 and JOIN of an `nn.Parameter` under no_grad take the functional path (a
    Parameter is a plain tensor there, as for the indexed operators): compiled once, exact;
    with autograd on they still give a result that carries the gradient."""
    weight = torch.nn.Parameter(_values(5, torch.float32))
    for call, want in (
        (
            lambda w: dmlops.slice1(w, [0, 0, 0], [5, 4, 3], [-1, 1, 2]),
            lambda v: v.flip(0)[..., ::2],
        ),
        (lambda w: dmlops.join([w, w[:1]], 0), lambda v: torch.cat([v, v[:1]], 0)),
    ):
        dispatch.clear_cache()
        with torch.no_grad():
            for _ in range(3):
                got = call(weight)
                assert type(got) is torch.Tensor and not got.requires_grad
                assert torch.equal(got, want(weight.detach()))
                assert dispatch.cache_size() == 1
        assert call(weight).requires_grad


# each operator on meta tensors: (call, output sizes)
META_CALLS: dict[str, tuple[Callable[[Any], Any], tuple[int, ...]]] = {
    "slice1": (lambda m: dmlops.slice1(m, [0, 1, 0], [5, 2, 3], [1, 1, -1]), (5, 2, 3)),
    "slice": (lambda m: dmlops.slice(m, [1, 0, 0], [2, 4, 3], [2, 1, 1]), (2, 4, 3)),
    "join": (lambda m: dmlops.join([m, m], 1), (5, 8, 3)),
    "join of many": (lambda m: dmlops.join([m] * 9, 0), (45, 4, 3)),
    "split": (lambda m: dmlops.split(m, 1, [1, 3])[1], (5, 3, 3)),
    "tile": (lambda m: dmlops.tile(m, [1, 2, 1]), (5, 8, 3)),
    "padding": (lambda m: dmlops.padding(m, [0, 1, 0], [1, 0, 2]), (6, 5, 5)),
    "gather": (lambda m: dmlops.gather(m, torch.zeros(2, dtype=torch.int64, device="meta"), 0), (2, 4, 3)),
    "depth_to_space": (lambda m: dmlops.depth_to_space(m.reshape(1, 4, 5, 3), 2), (1, 1, 10, 6)),
    "slice_grad": (lambda m: dmlops.slice_grad(m, [5, 8, 3], [0, 0, 0], [5, 8, 3], [1, 2, 1]), (5, 8, 3)),
}  # fmt: skip


@pytest.mark.parametrize("name", list(META_CALLS))
def test_meta_tensors_give_meta_outputs(name: str) -> None:
    """A call on meta tensors (shapes without memory, as `torch.device("meta")` makes a
    model's) gives meta outputs of the operator's sizes through its torch operator, checked
    as any call; before, it raised torch's TypeError from a numpy view."""
    call, sizes = META_CALLS[name]
    got = call(torch.empty(5, 4, 3, device="meta"))
    assert got.device.type == "meta" and tuple(got.shape) == sizes


def test_a_meta_call_is_checked_and_a_meta_cast_refused() -> None:
    """A meta call's descriptor is checked as any (DirectML's rule, named); CAST, which has
    no torch operator, refuses a meta tensor with a DmlError; neither leaves a numpy type
    marked as one it lacks."""
    from dmlops.elements import _TORCH_WORDS

    meta = torch.empty(5, 4, 3, device="meta")
    with pytest.raises(dmlops.DmlError, match=r"SLICE1\.InputWindowOffsets\[1\]"):
        dmlops.slice1(meta, [0, 1, 0], [5, 9, 3], [1, 1, 1])
    with pytest.raises(dmlops.DmlError, match="device meta"):
        dmlops.cast(meta, torch.float16)
    assert torch.float32 not in _TORCH_WORDS


def test_conjugate_and_negative_views_are_moved_by_value() -> None:
    """A complex tensor's lazy conjugate (and torch's negative view) is moved as its values,
    not as the bits of the memory it views."""
    z = torch.complex(torch.arange(6.0), torch.arange(6.0) + 1).reshape(2, 3)
    conj = z.conj()
    assert conj.is_conj()
    got = dmlops.slice1(conj, [0, 0], [2, 3], [1, -1])
    assert torch.equal(got, conj.resolve_conj().flip(1))
    negative = torch.arange(6.0)._neg_view()
    assert negative.is_neg()
    assert torch.equal(dmlops.join([negative, negative], 0), torch.cat([-torch.arange(6.0)] * 2))


@pytest.mark.parametrize("many", [False, True])
def test_a_sparse_tensor_is_refused_with_a_dml_error(many: bool) -> None:
    """A sparse tensor (no strides, no numpy view) is refused with a DmlError that says
    what to pass, alone and among many tensors."""
    sparse = torch.eye(3).to_sparse()
    with pytest.raises(dmlops.DmlError, match="to_dense"):
        if many:
            dmlops.join([sparse] * 9, 0)
        else:
            dmlops.slice1(sparse, [0, 0], [3, 3], [1, -1])


def test_a_warm_call_on_a_plain_cpu_tensor_takes_no_general_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once compiled, a one-input call into a new output on a plain CPU tensor is answered
    from its signature (`_warm`: its views bound in one pass, its plan's producer, the result
    a torch tensor), bit-exact, a tensor that needs a gradient under no_grad included (its
    result needs none); tensors that do not bind in one pass (a conjugate view, bfloat16)
    still take the general path."""
    from dmlops.arrays import strided

    x = _values(5, torch.float32)
    calls = {
        "slice1": lambda t: dmlops.slice1(t, [0, 0, 0], [5, 4, 3], [-2, 1, -1]),
        "tile": lambda t: dmlops.tile(t, [1, 2, 1]),
        "padding": lambda t: dmlops.padding(t, [0, 1, 0], [1, 0, 2]),
        "depth_to_space": lambda t: dmlops.depth_to_space(t.reshape(1, 4, 5, 3), 2),
    }
    dispatch.clear_cache()
    want = {name: call(x.numpy()) for name, call in calls.items()}
    for call in calls.values():
        call(x)  # (compiled)

    def general(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the general path")

    monkeypatch.setattr(strided, "_dispatch", general)
    for _ in range(2):
        for name, call in calls.items():
            got = call(x)
            assert type(got) is torch.Tensor and got.dtype == x.dtype
            assert _bits(got) == _bits(want[name]), name
    with torch.no_grad():
        got = calls["tile"](x.clone().requires_grad_())
        assert _bits(got) == _bits(want["tile"]) and not got.requires_grad
    with pytest.raises(AssertionError, match="general path"):
        calls["tile"](_values(5, torch.bfloat16))  # (new signature)
    monkeypatch.undo()
    complex_x = torch.complex(x, -x)
    calls["tile"](complex_x.conj().resolve_conj())  # (compiled for the type)
    got = calls["tile"](complex_x.conj())  # (the view does not bind in one pass)
    assert torch.equal(got, torch.tile(complex_x.conj().resolve_conj(), (1, 2, 1)))


def test_a_cuda_tensor_is_not_keyed_by_the_warm_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """`_warm` leaves a CUDA tensor's call to the general path's lookup (its hot closure)
    without making its key first; a CPU tensor's it keys."""
    keyed: list[type] = []
    real = dispatch._keyed_inputs

    def keyed_inputs(parts: list[Any], ins: list[Any]) -> Any:
        keyed.extend(map(type, ins))
        return real(parts, ins)

    class OnAGpu:
        is_cuda = True

    monkeypatch.setattr(dispatch, "_keyed_inputs", keyed_inputs)
    assert dispatch._warm("SLICE1", b"", None, [OnAGpu()]) is dispatch._MISS
    assert keyed == []
    dispatch._warm("SLICE1", b"", None, [torch.zeros(2)])
    assert keyed == [torch.Tensor]


def test_a_warm_indexed_call_on_plain_cpu_tensors_binds_them_in_one_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once compiled, a gather or gather_elements on plain CPU tensors into a new output runs
    from its signature (`_quick_run`) through its converted call's `warm_one`, not the
    converted call's general binding; bit-exact, a torch tensor of the input's type."""
    from dmlops.calls.compiled import _Converted

    x = _values(6, torch.float32)
    rows = torch.tensor([4, 0, 2, 2])
    picks = torch.from_numpy(_INDICES)[:, :, None]
    calls = {
        "gather": lambda t, r, p: dmlops.gather(t, r, 0),
        "gather_elements": lambda t, r, p: dmlops.gather_elements(t[:, :2, :1], p, 0),
    }
    want = {n: c(x.numpy(), rows.numpy(), picks.numpy()) for n, c in calls.items()}
    for call in calls.values():
        call(x, rows, picks)  # (compiled)

    def general(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the converted call's general binding")

    monkeypatch.setattr(_Converted, "__call__", general)
    for _ in range(2):
        for name, call in calls.items():
            got = call(x, rows, picks)
            assert type(got) is torch.Tensor and got.dtype == x.dtype
            assert _bits(got) == _bits(want[name]), name


def test_a_split_into_one_part_is_a_list_cold_and_warm() -> None:
    """SPLIT gives a list whatever its count of parts: a one-part split of a CPU tensor too,
    on the warm path (answered from its signature) as on the first call."""
    dispatch.clear_cache()
    x = torch.arange(24.0).reshape(4, 6)
    for _ in range(3):
        parts = dmlops.split(x, 0, [4])
        assert isinstance(parts, list) and len(parts) == 1 and torch.equal(parts[0], x)


def test_a_warm_join_of_cpu_tensors_is_answered_from_its_signature(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A join of several CPU tensors (two, and nine: keyed at once) warm: its compiled call
    runs from its signature, the general path never entered; right after, tensors of another
    signature (a conjugate's values) take the general path and are right too."""
    for count in (2, 9):
        xs = [torch.randn(3, 4, dtype=torch.complex64) for _ in range(count)]
        want = torch.cat(xs, 1)
        assert torch.equal(dmlops.join(xs, 1), want)  # (compiled)
        entered: list[int] = []

        def counted(*a: Any, real: Any = dispatch._dispatch, seen: Any = entered) -> Any:
            seen.append(1)
            return real(*a)

        monkeypatch.setattr(dispatch, "_dispatch", counted)
        assert torch.equal(dmlops.join(xs, 1), want) and not entered
        conj = [x.conj() for x in xs]
        assert torch.equal(dmlops.join(conj, 1), torch.cat([x.conj_physical() for x in xs], 1))
        monkeypatch.undo()
