"""Torch tensors whose values are not their memory's bits: conjugate and negative views
(bits torch resolves lazily) and zero tensors are read by their values on every path, cold
and warm, a few tensors or many, CPU and CUDA; as given outputs they are refused with nothing
written; quantized and nested tensors are refused by name. Skipped without torch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import dmlops  # noqa: E402
from conftest import TORCH_DEVICES  # noqa: E402
from dmlops.calls import dispatch  # noqa: E402

# each call on a [4, 6] tensor, with torch's own answer on the tensor's values
CALLS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "slice1": (
        lambda t: dmlops.slice1(t, [0, 0], [4, 6], [-1, 2]),
        lambda v: torch.flip(v, [0])[:, ::2],
    ),
    "tile": (lambda t: dmlops.tile(t, [2, 1]), lambda v: v.repeat(2, 1)),
    "join of two": (lambda t: dmlops.join([t, t], 1), lambda v: torch.cat([v, v], 1)),
    "join of nine": (lambda t: dmlops.join([t] * 9, 0), lambda v: torch.cat([v] * 9, 0)),
    "gather": (
        lambda t: dmlops.gather(t, torch.tensor([3, 0, 3], device=t.device), 0),
        lambda v: v[[3, 0, 3]],
    ),
}


def _plain(device: str) -> Any:
    g = torch.Generator().manual_seed(5)
    return torch.randn(4, 6, dtype=torch.complex64, generator=g).to(device)


# each kind of tensor whose values are not its memory, from a plain complex [4, 6] tensor
MARKED: dict[str, Callable[[Any], Any]] = {
    "conjugate": lambda c: c.conj(),
    "negative (imag of a conjugate)": lambda c: c.conj().imag,
    "negative float": lambda c: torch._neg_view(c.real.contiguous()),
    "zero tensor": lambda c: torch._efficientzerotensor((4, 6), device=c.device),
}


def _values(t: Any) -> Any:
    if t._is_zerotensor():
        return torch.zeros(t.shape, dtype=t.dtype, device=t.device)
    return t.resolve_conj().resolve_neg()


@pytest.mark.parametrize("device", TORCH_DEVICES)
@pytest.mark.parametrize("kind", list(MARKED))
@pytest.mark.parametrize("name", list(CALLS))
def test_a_tensor_is_read_by_its_values_cold_and_after_its_memorys_twin_is_warm(
    name: str, kind: str, device: str
) -> None:
    """The marked tensor first (cold), then its plain twin of the same type, shape and
    strides three times (its call compiled and warm), then the marked one again: every
    answer is torch's on the tensor's values, and the twin's answers are its own."""
    call, want = CALLS[name]
    marked = MARKED[kind](_plain(device))
    twin = torch.empty_strided(marked.shape, marked.stride(), dtype=marked.dtype, device=device)
    twin.copy_(_values(marked) + 1)
    dispatch.clear_cache()
    assert torch.equal(call(marked), want(_values(marked))), "cold"
    for _ in range(3):
        assert torch.equal(call(twin), want(twin)), "twin"
    assert torch.equal(call(marked), want(_values(marked))), "after the twin"


@pytest.mark.parametrize("device", TORCH_DEVICES)
@pytest.mark.parametrize("kind", list(MARKED))
def test_a_marked_output_is_refused_with_nothing_written(kind: str, device: str) -> None:
    """out= a conjugate or negative view or a zero tensor: its memory is not its values, so
    writing it would change values the caller does not see; refused by field, untouched."""
    source = _plain(device)
    out = MARKED[kind](torch.zeros_like(source))
    x = _values(out) + 1  # (the output's type: complex or float)
    before = out.resolve_conj().resolve_neg().clone() if not out._is_zerotensor() else None
    for _ in range(2):  # (the second after a plain output of the same signature ran)
        with pytest.raises(dmlops.BindingError, match=r"SLICE1\.OutputTensor is a"):
            dmlops.slice1(x, [0, 0], [4, 6], [1, 1], out=out)
        if before is not None:
            assert torch.equal(out.resolve_conj().resolve_neg(), before)
        plain = torch.empty_strided(out.shape, out.stride(), dtype=out.dtype, device=device)
        assert dmlops.slice1(x, [0, 0], [4, 6], [1, 1], out=plain) is plain


@pytest.mark.parametrize("device", TORCH_DEVICES)
def test_the_torch_operators_read_values_too(device: str) -> None:
    """torch.ops.dmlops on conjugate and negative views (torch's dispatcher resolves them
    before the operator runs) agree with the functional calls."""
    c = _plain(device)
    for t in (c.conj(), c.conj().imag):
        got = torch.ops.dmlops.slice1(t, [0, 0], [4, 6], [-1, 1], None, None)
        assert torch.equal(got, torch.flip(_values(t), [0]))
        assert torch.equal(torch.ops.dmlops.join([t, t], 0, None), torch.cat([_values(t)] * 2))


@pytest.mark.filterwarnings("ignore::UserWarning")  # (torch's deprecation of quantized types)
def test_quantized_and_nested_tensors_are_refused_by_name() -> None:
    """A quantized tensor's integers mean nothing without its scale and a nested tensor has
    no one shape: refused (a BindingError saying what to pass), never a malformed result."""
    q = torch.quantize_per_tensor(torch.randn(4, 6), 0.1, 3, torch.qint8)
    with pytest.raises(dmlops.BindingError, match=r"quantized .*int_repr\(\)"):
        dmlops.slice1(q, [0, 0], [2, 6], [1, 1])
    nested = torch.nested.nested_tensor([torch.randn(2, 6), torch.randn(3, 6)])
    with pytest.raises(dmlops.BindingError, match="nested torch tensor"):
        dmlops.slice1(nested, [0, 0], [2, 6], [1, 1])


@pytest.mark.parametrize("device", TORCH_DEVICES)
def test_marked_gpu_tensors_have_no_key_and_cpu_ones_keep_theirs(device: str) -> None:
    """A GPU call binds its tensors' memory as it is, so a marked GPU tensor has no
    signature (each call binds a copy of its values), a few tensors or many; a CPU tensor's
    numpy view makes that copy at its own strides, so its key stays its type, shape and
    strides (one call compiled for both)."""
    from dmlops.backends.library_keys import array_keys, many_array_keys

    one, many = array_keys()[torch.Tensor], many_array_keys()[torch.Tensor]
    c = _plain(device)
    for marked in (c.conj(), c.conj().imag, MARKED["zero tensor"](c)):
        twin = torch.empty_strided(marked.shape, marked.stride(), dtype=marked.dtype, device=device)
        if device == "cpu":
            assert one(marked) == one(twin) is not None
            assert many([twin] * 8 + [marked]) == many([twin] * 9) is not None
        else:
            assert one(marked) is None and one(twin) is not None
            assert many([twin] * 8 + [marked]) is None and many([twin] * 9) is not None
