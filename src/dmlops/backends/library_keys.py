"""Cache keys of other libraries' arrays, which the numpy and CUDA backends share: torch
tensors on any device (a GPU's ordinal, else the device's type: "cpu", "meta"), JAX arrays
(always dense: type, shape, device), and subclasses of numpy's and torch's arrays (the
subclass with its base's key). Neither torch nor JAX is imported here."""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable, Hashable, Sequence
from typing import Any, cast

import numpy as np

from ..elements import marked
from .array_api import host_view, keyed_here, on_the_host

__all__ = [
    "MANY_TORCH",
    "array_keys",
    "many_array_keys",
    "numpy_key",
    "other_host_array",
    "subclass_key",
]

MANY_TORCH = "torch tensors, a field a tuple"  # the tag of many tensors' keys


def _device(t: Any) -> int | str:
    """A tensor's GPU ordinal, else its device's type ("cpu", "meta", ...)."""
    ordinal: int = t.get_device()
    if ordinal >= 0:
        return ordinal
    return "cpu" if t.is_cpu else str(t.device.type)


def _read_torch_key(t: Any) -> tuple[Any, ...] | None:
    try:
        key = (t.dtype, t.shape, t.stride(), _device(t))
    except (RuntimeError, NotImplementedError):  # (a sparse tensor has no strides: no key)
        return None
    # (a GPU tensor whose memory is not its values has none: its call binds memory as it
    # is, so each call binds a copy of its values; a CPU tensor's numpy view makes one)
    return None if type(key[3]) is int and marked(t, key[0]) else key


GUARDS_KEPT = 8  # guards remembered for each count of tensors, each sizes of one (latest first)
# a tensor's key by the guards of a tensor of its sizes keyed before (the latest first), and
# torch's guards (`tensor_guards`, found at the first key: None where torch has none)
_ONE_GUARDS: dict[Any, list[tuple[Callable[[Any], bool], tuple[Any, ...]]]] = {}
_MOST_SIZES = 4096  # sizes remembered (all forgotten past this)
# tensors that the guards of many tensors' keys may describe at once, over every count (all
# forgotten past this: a program joining lists of ever new lengths would otherwise keep
# guards of n tensors for every n it met)
MOST_GUARDED = 1 << 16
_GUARDS: list[Any] = []


def _torch_key(t: Any) -> tuple[Any, ...] | None:
    """A tensor's key: that of the tensor of its sizes keyed before whose guards it passes
    (one C++ call, for the four fields and the marks), else read field by field."""
    try:
        sizes = t.shape
    except RuntimeError:  # (a nested tensor: no sizes, no key)
        return None
    seen = _ONE_GUARDS.get(sizes)
    if seen is not None:
        for check, found in seen:
            if check(t):
                return found
    key = _read_torch_key(t)
    if key is None:
        return None
    if not _GUARDS:
        _GUARDS.append(tensor_guards())
    guards = _GUARDS[0]
    if guards is None:
        return key
    try:
        made = guards(t, dynamic_dims_sizes=[list(sizes)], dynamic_dims_strides=[list(key[2])])
    except Exception:  # noqa: BLE001 - (a tensor torch's guards refuse: read each call)
        return key
    if len(_ONE_GUARDS) >= _MOST_SIZES:
        _ONE_GUARDS.clear()
    kept = _ONE_GUARDS.setdefault(sizes, [])
    kept.insert(0, (made.check, key))
    del kept[GUARDS_KEPT:]
    return key


def _jax_key(a: Any) -> Hashable:
    try:
        device = a.device  # (an array sharded over several devices has none: no key)
    except (ValueError, AttributeError):
        return None
    return ("jax", a.dtype, a.shape, device)


def _jax_array_type() -> type | None:
    """JAX's concrete array type (its module moved between jaxlib versions), where JAX is
    imported."""
    if "jax" not in sys.modules:
        return None
    for name in ("jaxlib._jax", "jaxlib.xla_extension"):
        found = getattr(sys.modules.get(name), "ArrayImpl", None)
        if isinstance(found, type):
            return found
    return None


def numpy_key(a: Any) -> Hashable:
    """A numpy array's key, its type (np.ndarray or a subclass) and writability in it."""
    return (type(a), a.dtype, a.shape, a.strides, a.flags.writeable)


def _torch_subclass_key(t: Any) -> Hashable:
    key = _torch_key(t)
    return None if key is None else (type(t), *key)


def _plain_on_gpus(kind: type, torch: Any) -> bool:
    """Whether a torch subclass's tensors on a GPU take the plain tensors' compiled calls: it
    leaves torch's functions alone (`nn.Parameter`: its `__torch_function__` the disabled
    one, so its `data_ptr`, `new_empty` and results are a plain tensor's)."""
    return getattr(kind, "__torch_function__", None) is torch._C._disabled_torch_function_impl


def _host_only_key(t: Any) -> Hashable:
    # (a subclass that overrides torch's functions: on the host, bound through its numpy
    # view; on a GPU, unkeyed, compiled each call)
    return None if t.get_device() >= 0 else _torch_subclass_key(t)


_SUBCLASS_KEYS: dict[type, Callable[[Any], Hashable] | None] = {}  # (found once a type)


def subclass_key(kind: type) -> Callable[[Any], Hashable] | None:
    """The key function of a subclass of numpy's array (`np.memmap`, ...) or of torch's
    tensor (`nn.Parameter` on any device; one that overrides torch's functions on the host
    only): the subclass itself with its base's key; of another array-API library's host
    arrays (array_api_strict's, ...) and DLPack-only producers: the type with its host
    view's key (`array_api.keyed_here`); None for other types."""
    try:
        return _SUBCLASS_KEYS[kind]
    except KeyError:
        found = _SUBCLASS_KEYS[kind] = _found_subclass_key(kind)
        return found


def _host_array_key(a: Any) -> Hashable:
    # (its type with its host view's numpy key; none for an array on a device)
    if not on_the_host(a):
        return None
    view = host_view(a)
    return (type(a), view.dtype, view.shape, view.strides)


def _found_subclass_key(kind: type) -> Callable[[Any], Hashable] | None:
    if issubclass(kind, np.ndarray):
        return numpy_key
    torch = sys.modules.get("torch")
    if torch is not None and issubclass(kind, torch.Tensor):  # (torch.Tensor itself: its key)
        if kind is torch.Tensor:
            return _torch_key
        return _torch_subclass_key if _plain_on_gpus(kind, torch) else _host_only_key
    jax_array = _jax_array_type()
    if jax_array is not None and issubclass(kind, jax_array):  # (JAX's own, on any device)
        return _jax_key
    return _host_array_key if keyed_here(kind) else None


def other_host_array(x: Any) -> bool:
    """Whether `x` is a host array of a library dmlops has no way of its own for (an
    array-API library's, a DLPack producer's): bound through its host view."""
    return subclass_key(type(x)) is _host_array_key and on_the_host(x)


def array_keys() -> dict[type, Callable[[Any], Hashable]]:
    """Key functions of torch.Tensor (type, sizes, strides, device) and JAX's arrays, for
    those of the two libraries that are imported."""
    keys: dict[type, Callable[[Any], Hashable]] = {}
    torch = sys.modules.get("torch")
    if torch is not None:
        keys[torch.Tensor] = _torch_key
    jax_array = _jax_array_type()
    if jax_array is not None:
        keys[jax_array] = _jax_key
    return keys


class HashedOnce:
    """A long key hashed once: the keys of many tensors, which a call finds again from their
    guards as this same object, would otherwise be hashed field by field at every lookup of
    the call's signature (1,024 tensors: tens of microseconds). Equal to another of equal
    parts (a signature read again after its guards were forgotten finds its call)."""

    __slots__ = ("hash", "parts")

    def __init__(self, parts: tuple[Hashable, ...]) -> None:
        self.parts = parts
        self.hash = hash(parts)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return self is other or (
            type(other) is HashedOnce and self.hash == other.hash and self.parts == other.parts
        )

    def __repr__(self) -> str:
        return f"HashedOnce({self.parts!r})"


def tensor_guards() -> Any:
    """torch's own batch check of tensors' metadata (`torch._C._dynamo.guards.TensorGuards`,
    what torch.compile's guards run: each tensor's type, dispatch keys, dtype, device,
    sizes and strides compared in one C++ call), where this torch has it; else None. The
    compiler stack is not imported: the class lives in torch's C module."""
    try:
        from torch._C._dynamo.guards import TensorGuards

        probe = sys.modules["torch"].zeros(1)
        made = TensorGuards(probe, dynamic_dims_sizes=[[1]], dynamic_dims_strides=[[1]])
        if made.check(probe) is not True:
            return None
    except Exception:  # noqa: BLE001 - another torch's private API: the getters serve
        return None
    return TensorGuards


_MANY_TORCH_KEYS: list[Callable[[Sequence[Any]], list[Hashable] | None]] = []  # (made once)


def many_array_keys() -> dict[type, Callable[[Sequence[Any]], list[Hashable] | None]]:
    """Keys of many torch tensors at once (a tag, then their types, sizes, strides and
    devices, each field a tuple, as one `HashedOnce`): four passes of C calls instead of a
    Python call per tensor; and tensors that pass the guards (`tensor_guards`) of tensors
    keyed before, in one C++ call, that key again (guards compare every field of the key
    and more: a conjugate, negative or zero tensor, whose key is none on a GPU, never passes
    a plain tensor's). One function for the process: every backend that asks gets it, with
    the guards it remembers."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {}
    if not _MANY_TORCH_KEYS:
        _MANY_TORCH_KEYS.append(_many_torch_keys(torch))
    return {torch.Tensor: _MANY_TORCH_KEYS[0]}


def _many_torch_keys(torch: Any) -> Callable[[Sequence[Any]], list[Hashable] | None]:
    tensor = torch.Tensor
    dtype, shape = operator.attrgetter("dtype"), operator.attrgetter("shape")
    is_cpu = operator.attrgetter("is_cpu")
    is_conj, is_neg, is_zero = tensor.is_conj, tensor.is_neg, tensor._is_zerotensor
    guards = tensor_guards()
    remembered: dict[int, list[tuple[Any, list[Hashable]]]] = {}  # by count: (guards, key)
    guarded = [0]  # the tensors their guards describe

    def _any_marked(ts: Sequence[Any], dtypes: tuple[Any, ...]) -> bool:
        # (as `marked`, a pass a bit; the conjugate bit's only where a type is complex)
        if any(map(is_neg, ts)) or any(map(is_zero, ts)):
            return True
        one_type = dtypes.count(dtypes[0]) == len(dtypes)
        if one_type and not dtypes[0].is_complex:
            return False
        return any(map(is_conj, ts))

    def read_keys(ts: Sequence[Any]) -> list[Hashable] | None:
        # (a column a field: four flat tuples, not a tuple an array, to make and hash)
        try:
            strides = tuple(map(tensor.stride, ts))
        except (RuntimeError, NotImplementedError):  # (a sparse tensor among them: no key)
            return None
        fields = (tuple(map(dtype, ts)), tuple(map(shape, ts)), strides)
        ordinals = tuple(map(tensor.get_device, ts))
        if max(ordinals) >= 0 and _any_marked(ts, fields[0]):  # (GPU tensors: `_torch_key`)
            return None
        devices: Hashable = ordinals
        if min(ordinals) < 0:  # (host or meta tensors among them: their devices' types)
            # (all on the host, the commonest: one mark, no Python call a tensor)
            devices = "cpu" if all(map(is_cpu, ts)) else tuple(map(_device, ts))
        return [HashedOnce((MANY_TORCH, *fields, devices))]

    def torch_keys(ts: Sequence[Any]) -> list[Hashable] | None:
        seen = remembered.get(len(ts))
        if seen is not None:
            for check, found in seen:
                if check(*ts):
                    return found
        key = read_keys(ts)
        if key is None or guards is None:
            return key
        parts = cast(HashedOnce, key[0]).parts
        shapes, strides = cast(tuple[Any, ...], parts[2]), cast(tuple[Any, ...], parts[3])
        try:
            made = guards(
                *ts,
                dynamic_dims_sizes=[list(s) for s in shapes],  # (every size and stride fixed)
                dynamic_dims_strides=[list(s) for s in strides],
            )
        except Exception:  # noqa: BLE001 - (a tensor torch's guards refuse: keyed each call)
            return key
        if guarded[0] + len(ts) > MOST_GUARDED:
            remembered.clear()
            guarded[0] = 0
        kept = remembered.setdefault(len(ts), [])
        kept.insert(0, (made.check, key))
        guarded[0] += len(ts) - len(ts) * len(kept[GUARDS_KEPT:])
        del kept[GUARDS_KEPT:]
        return key

    return torch_keys
