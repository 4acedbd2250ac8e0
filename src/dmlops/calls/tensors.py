"""Arrays as DirectML tensors: which backend owns a call's arrays, host arrays moved to a
named device and back, and `_Tensor` (an array, or an output still to allocate, with its
layout and byte span)."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..backends import Backend, get_backend
from ..elements import Element, element_of
from ..errors import BindingError, DmlError
from ..plan import Layout, array_byte_span
from ..tensor import BufferTensorDesc, DataType, packed_strides
from .signatures import _ARRAY_KEYS, _MANY_KEYS


def _is_gpu_array(x: Any) -> bool:
    if isinstance(x, np.ndarray):
        return False
    dev = getattr(x, "__dlpack_device__", None)
    if dev is None:
        return False
    try:
        kind = int(dev()[0])
    except Exception:  # noqa: BLE001 - a foreign object's protocol may fail in any way
        return False
    return kind in (2, 3, 13)  # kDLCUDA, kDLCUDAHost, kDLCUDAManaged


def _check_array(x: Any) -> None:
    if x is None or isinstance(x, (str, bytes, bytearray, dict, set)):
        raise DmlError(f"expected an array, got {type(x).__name__}")


def _kind(x: Any) -> str:
    """Which backend's memory an array is in: 'webgpu', 'cuda' or 'numpy' (host)."""
    own = getattr(type(x), "__dmlops_backend__", None)
    if own is not None:
        return str(own)
    return "cuda" if _is_gpu_array(x) else "numpy"


def backend_of(arrays: Sequence[Any]) -> Backend:
    """The backend that owns these arrays: 'cuda' for CUDA arrays, 'webgpu' for
    dmlops.webgpu arrays, else 'numpy'."""
    for a in arrays:
        _check_array(a)
    kinds = {_kind(a) for a in arrays}
    if len(kinds) > 1:
        names = " and ".join(sorted("host (CPU)" if k == "numpy" else k for k in kinds))
        raise BindingError(f"arrays mix {names} memory; put them on one device")
    backend = get_backend(kinds.pop() if kinds else "numpy")
    _ARRAY_KEYS.update(backend.array_keys())
    many = getattr(backend, "many_array_keys", None)
    if many is not None:
        _MANY_KEYS.update(many())
    return backend


def _on_device(
    device: str,
    ins: list[Any],
    outs: list[Any],
    run: Callable[[list[Any], list[Any]], list[Any]],
) -> list[Any]:
    """`run(ins, outs)` on `device`: host inputs are uploaded and, where any was, the
    results come back to the host (into the host outputs given, once the call succeeded)."""
    backend = get_backend(device)
    for a in ins:
        _check_array(a)
    uploaded = False
    moved = []
    for a in ins:
        kind = _kind(a)
        if kind == backend.name:
            moved.append(a)
        elif kind == "numpy":
            moved.append(backend.upload(a))
            uploaded = True
        else:
            raise BindingError(f"an input is {kind} memory, not on device {device!r}")
    # host outputs: computed into new device arrays, copied back after the call succeeds
    to_host = any(o is not None and _kind(o) != backend.name for o in outs)
    if to_host:  # an output that is an input (in place) stays its uploaded copy
        placed = [next((m for a, m in zip(ins, moved, strict=True) if a is o), None) for o in outs]
        results = run(moved, placed)
    else:
        results = run(moved, outs)
    if to_host:
        for r, o in zip(results, outs, strict=True):
            if o is not None and _kind(o) == "numpy":
                backend.download(r, o)
        return outs
    return [backend.download(r) for r in results] if uploaded else results


class _Tensor:
    """An array (or an output still to allocate) seen as a DirectML tensor."""

    def __init__(
        self,
        desc: BufferTensorDesc,
        layout: Layout,
        low: int,
        nbytes: int,
        contiguous: bool,
        writable: bool = True,
        element: Element | None = None,
    ) -> None:
        self.desc = desc
        self.layout = layout
        self.low = low
        self.nbytes = nbytes
        self.contiguous = contiguous
        self.writable = writable
        dt = desc.data_type
        # the array's own element type (the desc may describe it with a carrier type)
        self.element = element or Element(dt.name.lower(), dt.element_size, dt)

    @classmethod
    def of_array(cls, a: Any) -> _Tensor:
        """`a` (an array of the backend's kind) as a tensor: strides, not copies."""
        element = element_of(a.dtype)
        item = element.size
        shape, byte_strides = (a.shape, a.strides) if a.ndim else ((1,), (item,))  # 0-D: [1]
        low, nbytes = array_byte_span(shape, byte_strides, item)
        strides = tuple(s // item for s in byte_strides)
        c_contiguous = bool(a.flags.c_contiguous)
        desc = BufferTensorDesc(
            element.described_as,
            shape,
            None if c_contiguous else tuple(abs(s) for s in strides),
        )
        contiguous = c_contiguous or bool(a.flags.f_contiguous)
        writable = bool(getattr(a.flags, "writeable", True))
        layout = Layout(-low // item, strides)
        return cls(desc, layout, low, nbytes, contiguous, writable, element)

    def carried_by(self, data_type: DataType) -> _Tensor:
        """The same elements described with another data type (a carrier)."""
        desc = BufferTensorDesc(data_type, self.desc.sizes, self.desc.strides)
        return _Tensor(
            desc, self.layout, self.low, self.nbytes, self.contiguous, self.writable, self.element
        )

    def with_ones(self, positions: Sequence[int]) -> _Tensor:
        """The same elements with dimensions of size 1 inserted at these positions (of the
        result), as DirectML pads ranks."""
        sizes = list(self.desc.sizes)
        strides = list(self.layout.strides)
        given = None if self.desc.strides is None else list(self.desc.strides)
        for p in sorted(positions):
            sizes.insert(p, 1)
            strides.insert(p, 0)
            if given is not None:
                given.insert(p, 0)
        desc = BufferTensorDesc(self.desc.data_type, sizes, given)
        layout = Layout(self.layout.offset, tuple(strides))
        return _Tensor(
            desc, layout, self.low, self.nbytes, self.contiguous, self.writable, self.element
        )

    def window(self, sizes: Sequence[int]) -> _Tensor:
        """The box of `sizes` at this tensor's first element (a SLICE view: same strides)."""
        desc = BufferTensorDesc(self.desc.data_type, tuple(sizes), self.desc.effective_strides)
        return _Tensor(desc, self.layout, self.low, self.nbytes, False, self.writable, self.element)

    @classmethod
    def new(cls, shape: Sequence[int], dtype: Any) -> _Tensor:
        """A packed output of `shape`, allocated only after validation."""
        element = element_of(dtype)
        shape = tuple(shape)
        nbytes = builtins.max(1, int(np.prod(shape, dtype=object))) * element.size
        desc = BufferTensorDesc(element.described_as, shape)
        return cls(desc, Layout(0, packed_strides(shape)), 0, nbytes, True, True, element)
