"""Element types beyond DirectML's: what an array's elements are as bits, and which
DirectML data type carries them.

DirectML names eleven data types. Arrays hold more (bool, bfloat16, float8, complex,
datetime) and the operators here only move bits, so above the Device API an element is
its size: a type DirectML names keeps its name, and one it does not, or one an operator's
table does not take at the feature level, is carried by an unsigned type of its size
(`carrier`) while the plan moves whole elements of the array's own size.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import BindingError, InvalidDescriptorError, a_type
from .tensor import DataType

__all__ = ["Element", "element_of", "MOVABLE_SIZES"]

MOVABLE_SIZES = (1, 2, 4, 8, 16)
"""Element sizes in bytes that every backend moves (16: as pairs of 8-byte words)."""

_UNSIGNED = {1: DataType.UINT8, 2: DataType.UINT16, 4: DataType.UINT32, 8: DataType.UINT64}

_BY_NAME = {
    "float64": DataType.FLOAT64,
    "float32": DataType.FLOAT32,
    "float16": DataType.FLOAT16,
    "int64": DataType.INT64,
    "int32": DataType.INT32,
    "int16": DataType.INT16,
    "int8": DataType.INT8,
    "uint64": DataType.UINT64,
    "uint32": DataType.UINT32,
    "uint16": DataType.UINT16,
    "uint8": DataType.UINT8,
}


@dataclass(frozen=True)
class Element:
    """An array element: its type's name, its size in bytes and DirectML's data type for it
    (None where DirectML has none)."""

    name: str
    size: int
    data_type: DataType | None
    swapped: bool = False  # (a numpy type in the other byte order than this machine's)

    @property
    def carrier(self) -> DataType:
        """The unsigned DirectML type of this size (UINT64 for 16-byte elements, which move
        as two words)."""
        return _UNSIGNED[min(self.size, 8)]

    @property
    def label(self) -> str:
        """The type's name in messages: DirectML's where it has one (FLOAT32), else its own."""
        return self.name if self.data_type is None else self.data_type.name

    @property
    def described_as(self) -> DataType:
        """The data type a tensor of these elements is described with: DirectML's own, else
        the carrier."""
        return self.data_type if self.data_type is not None else self.carrier


_KNOWN: dict[Any, Element] = {}  # dtypes seen (numpy and torch dtypes are hashable)


def element_of(dtype: Any) -> Element:
    """The element of a numpy dtype (ml_dtypes' bfloat16 and float8 included) or a torch
    dtype; DmlError for types whose elements are not plain bits of 1, 2, 4, 8 or 16 bytes."""
    try:
        found = _KNOWN.get(dtype)
    except TypeError:  # an unhashable argument: looked at below
        found = None
    if found is not None:
        return found
    element = _element_of(dtype)
    with contextlib.suppress(TypeError):
        _KNOWN[dtype] = element
    return element


def _element_of(dtype: Any) -> Element:
    name = str(dtype).removeprefix("torch.")
    if type(dtype).__module__ == "torch":
        size = int(dtype.itemsize)
        if name == "bool":
            return Element(name, size, None)
        if dtype.is_complex or dtype.is_floating_point or name in _BY_NAME or "int" in name:
            return _checked(name, size)
        raise InvalidDescriptorError(f"torch dtype {dtype} is not moved by dmlops")
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise InvalidDescriptorError(f"{dtype!r} is not an array data type") from None
    foreign = dt.kind == "V" and dt.type.__module__ != "ml_dtypes"  # void, structured
    if dt.kind in "OUS" or foreign or dt.hasobject or dt.subdtype is not None:
        raise InvalidDescriptorError(
            f"numpy dtype {dt} is not moved by dmlops: its elements are not plain numbers"
        )
    element = _checked(dt.name, dt.itemsize)
    if dt.itemsize > 1 and not dt.isnative:
        return Element(element.name, element.size, element.data_type, swapped=True)
    return element


def word_element(dtype: Any, mover: str) -> Element:
    """The element of `dtype` for `mover`, whose plans move elements of up to 8 bytes (graphs,
    Dask chunks); DmlError naming the type for larger ones."""
    element = element_of(dtype)
    if element.size > 8:
        raise InvalidDescriptorError(
            f"{mover}: {element.name} has {element.size}-byte elements; {mover} moves "
            "elements of up to 8 bytes (the functional API moves them)"
        )
    return element


def _checked(name: str, size: int) -> Element:
    if size not in MOVABLE_SIZES:
        raise InvalidDescriptorError(
            f"data type {name} has {size}-byte elements: dmlops moves 1, 2, 4, 8 and 16"
        )
    return Element(name, size, _BY_NAME.get(name))


def unsigned_dtype(size: int) -> np.dtype[Any]:
    """The numpy unsigned dtype of `size` bytes (1, 2, 4 or 8)."""
    return np.dtype(f"u{size}")


def numpy_dtype(element: Element) -> np.dtype[Any] | None:
    """The numpy dtype of this element type (ml_dtypes' where numpy lacks it), or None."""
    try:
        return np.dtype(element.name)
    except TypeError:
        pass
    try:
        import ml_dtypes
    except ImportError:
        return None
    found = getattr(ml_dtypes, element.name, None)
    return None if found is None else np.dtype(found)


def encode(value: Any, element: Element, field: str = "the value") -> bytes:
    """`value` as one element of this type (its bytes); DmlError where it is not a number the
    type holds."""
    if isinstance(value, (bool, np.bool_)) and element.name != "bool":
        raise InvalidDescriptorError(f"{field} is {value!r}: not a number")
    if not isinstance(value, (int, float, complex, np.number, np.bool_)):
        raise InvalidDescriptorError(f"{field} is {value!r}: not a number")
    dtype = numpy_dtype(element)
    if dtype is None:
        torch = _torch_module()
        if torch is None:
            raise InvalidDescriptorError(f"no library here encodes a value as {element.name}")
        t = torch.tensor(value, dtype=getattr(torch, element.name)).reshape(1)
        return bytes(t.view(torch.uint8).numpy().tobytes())
    if dtype.kind in "iub":
        whole = isinstance(value, (int, np.integer, np.bool_)) or (
            not isinstance(value, complex) and float(value).is_integer()
        )
        low, high = (0, 1) if dtype.kind == "b" else (np.iinfo(dtype).min, np.iinfo(dtype).max)
        number = int(value.real) if isinstance(value, complex) else int(value)
        if not whole or not low <= number <= high:
            raise InvalidDescriptorError(f"{field} is {value!r}: not {a_type(element.label)}")
        return np.array(number).astype(dtype).tobytes()
    if isinstance(value, complex) and dtype.kind != "c":
        raise InvalidDescriptorError(f"{field} is {value!r}: not {a_type(element.name)}")
    return np.array(value).astype(dtype).tobytes()


def in_native_order(a: Any) -> Any:
    """A numpy array whose values an operator reads (indices, lengths, a conversion's or a
    zero test's input) in this machine's byte order: a byte-swapped copy of the same values
    where it is in the other one; anything else as it is (moves copy bytes: order kept)."""
    if type(a) is np.ndarray and not a.dtype.isnative:
        return a.astype(a.dtype.newbyteorder("="))
    return a


def values_into(out: Any, run: Any) -> Any:
    """`run(target)` writes values (a conversion's) into `target`: `out` itself, or, where
    `out` is a numpy array in the other byte order, a native one whose values are then
    assigned to it (byte-swapped). Returns `out`."""
    if type(out) is np.ndarray and not out.dtype.isnative:
        made = np.empty(out.shape, out.dtype.newbyteorder("="))
        run(made)
        out[...] = made
        return out
    return run(out)


def _torch_module() -> Any:
    return sys.modules.get("torch")


def torch_dtype_as_numpy(dtype: Any) -> np.dtype[Any] | None:
    """The numpy dtype (ml_dtypes' for bfloat16 and float8) holding a torch dtype's
    elements, or None."""
    name = str(dtype).removeprefix("torch.")
    return numpy_dtype(Element(name, int(dtype.itemsize), None))


# torch types numpy lacks: (torch's integer type of their size, numpy's type of their
# elements), found at the first tensor of each
_TORCH_WORDS: dict[Any, tuple[Any, np.dtype[Any]]] = {}
_NUMPY_WORDS: set[np.dtype[Any]] = set()  # numpy's types torch.from_numpy refuses


def torch_refusal(t: Any) -> BindingError | None:
    """Why dmlops cannot move a torch tensor's memory as strided elements: a layout without
    strides (sparse, mkldnn), a nested tensor (its parts' sizes differ), a quantized one (its
    integers mean nothing without its scale: a copy would lose it); None where it can."""
    if t.layout is not sys.modules["torch"].strided:
        return BindingError(
            f"a torch tensor of layout {t.layout} is not moved by dmlops: pass tensor.to_dense()"
        )
    if t.is_nested:
        return BindingError(
            "a nested torch tensor is not moved by dmlops: pass its parts (tensor.unbind()) "
            "or a padded tensor (tensor.to_padded_tensor(0))"
        )
    if t.is_quantized:
        return BindingError(
            f"a quantized torch tensor ({t.dtype}) is not moved by dmlops: pass its integers "
            "(tensor.int_repr()) or its values (tensor.dequantize())"
        )
    return None


def marked(t: Any, dtype: Any = None) -> bool:
    """Whether a torch tensor's values are not its memory's: a conjugate or negative view
    (a bit torch resolves lazily), or a zero tensor (no memory at all). `dtype`: the
    tensor's, where the caller has read it (the conjugate bit is asked of complex types
    only: no other has it)."""
    if t.is_neg() or t._is_zerotensor():
        return True
    return bool((t.dtype if dtype is None else dtype).is_complex and t.is_conj())


def torch_values(t: Any) -> Any:
    """A torch tensor whose memory holds `t`'s values at `t`'s own strides: `t` itself, or,
    for a conjugate or negative view or a zero tensor, a new one (the values of the span its
    strides reach, viewed as `t` views its memory: a call compiled for `t`'s layout reads it
    as it is)."""
    if not marked(t):
        return t
    torch = sys.modules["torch"]
    shape, strides = tuple(t.shape), tuple(t.stride())
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) if t.numel() else 0
    if t._is_zerotensor():
        flat = torch.zeros(span, dtype=t.dtype, device=t.device)
    else:
        flat = t.as_strided((span,), (1,)).resolve_conj().resolve_neg()
    return flat.as_strided(shape, strides, 0)


def marked_error(t: Any, use: str = "write") -> BindingError | None:
    """Why dmlops cannot `use` a torch tensor's memory as it is (write it as an output, bind
    it to a table dispatched later): its memory does not hold its values (a conjugate or
    negative view, a zero tensor); None for any other array."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(t, torch.Tensor) or not marked(t):
        return None
    bit = "a zero tensor" if t._is_zerotensor() else "a conjugate or negative view"
    return BindingError(
        f"is {bit}: its memory does not hold its values, so dmlops cannot {use} it; pass a "
        "tensor without the bit (tensor.resolve_conj().resolve_neg()) and use it"
    )


def _read_only(a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """`a`, marked read-only: a copy of a tensor's values, which a write would not reach."""
    a.flags.writeable = False
    return a


def _unmovable_error(t: Any) -> BindingError | None:
    """Why a torch tensor has no numpy view of its elements: it is not on the CPU (meta,
    ...), or not strided; None where it has one."""
    if not t.is_cpu:
        return BindingError(
            f"a torch tensor on device {t.device} has no memory on the host: pass one on the "
            "CPU or a GPU"
        )
    return torch_refusal(t)


def torch_to_numpy(t: Any) -> np.ndarray[Any, Any]:
    """A CPU torch tensor's memory as a numpy array of the same elements (bfloat16 and float8
    through ml_dtypes; a type numpy has no dtype for as unsigned words of its size; a
    conjugate or negative view's values, and a zero tensor's, made first)."""
    if t.requires_grad:
        t = t.detach()
    found = _TORCH_WORDS.get(t.dtype)
    if found is None:
        try:
            return t.numpy()  # type: ignore[no-any-return]
        except RuntimeError:
            refused = _unmovable_error(t)
            if refused is not None:
                raise refused from None
            if not marked(t):
                raise
            return _read_only(torch_to_numpy(torch_values(t)))  # (its values, not its bits)
        except TypeError:  # (a type numpy lacks: its words, from now on)
            refused = _unmovable_error(t)
            if refused is not None:
                raise refused from None
            size = int(t.element_size())
            dtype = torch_dtype_as_numpy(t.dtype)
            words = getattr(_torch_module(), f"int{8 * size}")
            found = (words, dtype if dtype is not None else unsigned_dtype(size))
            _TORCH_WORDS[t.dtype] = found
    try:
        return t.view(found[0]).numpy().view(found[1])  # type: ignore[no-any-return]
    except RuntimeError:
        if not marked(t):
            raise
        return _read_only(torch_to_numpy(torch_values(t)))


def numpy_to_torch(a: np.ndarray[Any, Any], dtype: Any) -> Any:
    """A numpy array's memory as a torch tensor of `dtype` (the inverse of torch_to_numpy)."""
    from_numpy = sys.modules["torch"].from_numpy
    if a.dtype in _NUMPY_WORDS:
        t = from_numpy(a.view(f"i{a.dtype.itemsize}"))
    else:
        try:
            t = from_numpy(a)
        except TypeError:  # (a type torch does not take from numpy: its words, from now on)
            _NUMPY_WORDS.add(a.dtype)
            t = from_numpy(a.view(f"i{a.dtype.itemsize}"))
    return t if t.dtype == dtype else t.view(dtype)
