"""The rest of DirectML's family on arrays: generated tensors (FILL_VALUE_CONSTANT,
FILL_VALUE_SEQUENCE, DIAGONAL_MATRIX and DIAGONAL_MATRIX1), RESAMPLE (every version), CAST
and NONZERO_COORDINATES; each call's fields made into DirectML's descriptor and run through
the call machinery (`dmlops.calls`), as `strided.py` does for the strided operators."""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from ..backends import get_backend
from ..backends.array_api import host_view, in_namespace_of
from ..backends.library_keys import other_host_array
from ..calls import (
    _MISS,
    _Call,
    _compile,
    _dims,
    _dispatch,
    _dtype_of,
    _fields_key,
    _on_device,
    _shape,
    _warm,
    backend_of,
)
from ..elements import (
    element_of,
    in_native_order,
    numpy_to_torch,
    torch_to_numpy,
    values_into,
)
from ..errors import DmlError
from ..ops import (
    CastDesc,
    DiagonalMatrix1Desc,
    DiagonalMatrixDesc,
    FillValueConstantDesc,
    FillValueSequenceDesc,
    NonzeroCoordinatesDesc,
    OperatorDesc,
    Resample1Desc,
    Resample2Desc,
    ResampleDesc,
)
from ..tensor import BufferTensorDesc, FeatureLevel, int_tuple
from .strided import _unary

__all__ = [
    "cast",
    "diagonal_matrix",
    "diagonal_matrix1",
    "fill_value_constant",
    "fill_value_sequence",
    "host_int",
    "nonzero",
    "nonzero_coordinates",
    "resample",
]


def fill_value_constant(
    sizes: Sequence[int],
    value: float | int,
    dtype: Any = np.float32,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML FILL_VALUE_CONSTANT: an array of `sizes` and `dtype` (out's where given) holding
    `value` everywhere (numpy.full)."""
    shape = int_tuple(sizes, "FILL_VALUE_CONSTANT.OutputTensor.Sizes")
    fields = (_fields_key(shape), np.dtype(dtype), repr(value), type(value))
    return _generated(
        "FILL_VALUE_CONSTANT",
        fields,
        shape,
        dtype,
        value,
        lambda o: FillValueConstantDesc(o, None, value),
        feature_level,
        out,
        device,
    )


def _device_empty(device: str, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Any:
    """A new array on `device` (a CuPy array on CuPy's current device, or a WebGPU one),
    or None on the CPU."""
    backend = get_backend(device)
    if backend.name == "cuda":
        import cupy

        return cupy.empty(shape, dtype)
    if backend.name == "webgpu":
        return backend.empty(shape, dtype)  # type: ignore[attr-defined]
    return None


def _generated(
    op: str,
    fields: Hashable,
    shape: tuple[int, ...],
    dtype: Any,
    value: float | int | None,
    make: Callable[[BufferTensorDesc], OperatorDesc],
    feature_level: Any,
    out: Any,
    device: str | None,
) -> Any:
    """Run an operator that reads nothing and writes `value` (FILL_VALUE_CONSTANT,
    DIAGONAL_MATRIX): `make(output desc)` its descriptor; a new array of `shape` and `dtype`
    (numpy's, or `device`'s), or `out` of any library."""

    if device is not None and out is None:  # made there: a generator reads no host array
        out = _device_empty(device, shape, np.dtype(dtype))

    def build(ins: list[Any], outs: list[Any]) -> _Call:
        backend = backend_of([] if outs[0] is None else [outs[0]])
        kind = np.dtype(dtype) if outs[0] is None else _dtype_of(backend, outs[0])
        new = [shape if outs[0] is None else None]
        return _compile(
            backend, feature_level, lambda i, o: make(o[0]), [], outs, new, kind, fill=value
        )

    return _dispatch(op, fields, feature_level, [], [out], build, device)[0]


def diagonal_matrix(
    sizes: Sequence[int],
    offset: int = 0,
    value: float = 1.0,
    dtype: Any = np.float32,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML DIAGONAL_MATRIX: matrices of `sizes` (leading dimensions a batch) holding `value`
    where row + offset == column and zeros elsewhere (numpy.eye's k is offset)."""
    shape = int_tuple(sizes, "DIAGONAL_MATRIX.OutputTensor.Sizes")
    fields = (_fields_key(shape), offset, np.dtype(dtype), repr(value), type(value))
    return _generated(
        "DIAGONAL_MATRIX",
        fields,
        shape,
        dtype,
        value,
        lambda o: DiagonalMatrixDesc(o, offset, value),
        feature_level,
        out,
        device,
    )


def diagonal_matrix1(
    x: Any,
    diagonal_fill_begin: int = 0,
    diagonal_fill_end: int = 1,
    value: float | int = 1,
    *,
    sizes: Sequence[int] | None = None,
    dtype: Any = None,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML DIAGONAL_MATRIX1: `value` on the diagonals column - row in [begin, end) (outside
    [end, begin) where begin > end), x's elements elsewhere; without x, zeros elsewhere and a
    new array of `sizes` and `dtype` (float32 by default)."""
    begin, end = diagonal_fill_begin, diagonal_fill_end

    def make(i: BufferTensorDesc | None, o: BufferTensorDesc) -> OperatorDesc:
        return DiagonalMatrix1Desc(i, o, None, value, begin, end)

    fields = (begin, end, repr(value), type(value))
    if x is not None:
        return _unary(
            "DIAGONAL_MATRIX1",
            fields,
            x,
            out,
            feature_level,
            device,
            lambda view: tuple(_dims(view)),
            make,
            fill=value,
        )
    if sizes is None and out is None:
        raise DmlError("DIAGONAL_MATRIX1: give an input, sizes or out (the output's sizes)")
    kind = np.float32 if dtype is None else dtype
    shape = (
        tuple(int(n) for n in out.shape)
        if sizes is None
        else int_tuple(sizes, "DIAGONAL_MATRIX1.OutputTensor.Sizes")
    )
    return _generated(
        "DIAGONAL_MATRIX1",
        (_fields_key(shape), *fields, np.dtype(kind)),
        shape,
        kind,
        value,
        lambda o: make(None, o),
        feature_level,
        out,
        device,
    )


def resample(
    x: Any,
    scales: Sequence[float],
    *,
    sizes: Sequence[int] | None = None,
    input_pixel_offsets: Sequence[float] | None = None,
    output_pixel_offsets: Sequence[float] | None = None,
    rounding_direction: Any = None,
    interpolation_mode: Any = "NEAREST_NEIGHBOR",
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML RESAMPLE (no offsets, no rounding direction), RESAMPLE1 (offsets) or RESAMPLE2
    (a rounding direction), nearest neighbour: each output element the input element its
    coordinate maps back to; the output of `sizes` (out's, or each size times its scale,
    rounded down)."""
    factors = tuple(float(v) for v in scales)
    rank = len(factors)
    given = (input_pixel_offsets, output_pixel_offsets)
    ins = tuple(0.5 for _ in range(rank)) if given[0] is None else tuple(given[0])
    outs = tuple(-0.5 for _ in range(rank)) if given[1] is None else tuple(given[1])

    def make(i: BufferTensorDesc, o: BufferTensorDesc) -> OperatorDesc:
        if rounding_direction is not None:
            return Resample2Desc(i, o, factors, ins, outs, rounding_direction, interpolation_mode)
        if given != (None, None):
            return Resample1Desc(i, o, factors, ins, outs, interpolation_mode)
        return ResampleDesc(i, o, factors, interpolation_mode)

    def shape_of(view: Any) -> tuple[int, ...]:
        if sizes is not None:
            return int_tuple(sizes, "RESAMPLE.OutputTensor.Sizes")
        return ResampleDesc.output_sizes_for(_dims(view), factors)

    direction = (
        rounding_direction
        if isinstance(rounding_direction, (int, str, type(None)))
        else repr(rounding_direction)
    )
    mode_key = (
        interpolation_mode
        if isinstance(interpolation_mode, (int, str))
        else repr(interpolation_mode)
    )
    fields = (
        factors,
        ins if given[0] is not None else None,
        outs if given[1] is not None else None,
        direction,
        mode_key,
        None if sizes is None else _fields_key(int_tuple(sizes, "RESAMPLE.OutputTensor.Sizes")),
    )
    return _unary("RESAMPLE", fields, x, out, feature_level, device, shape_of, make)


def fill_value_sequence(
    sizes: Sequence[int],
    start: float | int,
    delta: float | int,
    dtype: Any = np.float32,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML FILL_VALUE_SEQUENCE: an array of `sizes` whose elements, in order, are start,
    start + delta, ... in `dtype` (out's type where `out` is given)."""
    shape = int_tuple(sizes, "FILL_VALUE_SEQUENCE.OutputTensor.Sizes")
    fields = (_fields_key(shape), repr(start), type(start), repr(delta), type(delta))
    return _generated(
        "FILL_VALUE_SEQUENCE",
        (*fields, np.dtype(dtype)),
        shape,
        dtype,
        None,
        lambda o: FillValueSequenceDesc(o, None, start, delta),
        feature_level,
        out,
        device,
    )


def _numpy_type(dtype: Any) -> np.dtype[Any]:
    """A numpy type from a numpy or torch one (CAST's: one of DirectML's 11 types)."""
    try:
        named: np.dtype[Any] = np.dtype(dtype)
        return named
    except TypeError:
        element = element_of(dtype)
        if element.data_type is None:
            raise DmlError(f"CAST: {element.name} is not one of DirectML's data types") from None
        return np.dtype(element.data_type.numpy_dtype)


_TORCH_TYPES: dict[np.dtype[Any], Any] = {}  # numpy's types as torch's (their names alike)


def _torch_type(torch: Any, dtype: np.dtype[Any]) -> Any:
    found = _TORCH_TYPES.get(dtype)
    if found is None:
        found = _TORCH_TYPES[dtype] = getattr(torch, dtype.name)
    return found


def cast(
    x: Any,
    dtype: Any,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: Any = None,
    device: str | None = None,
) -> Any:
    """DML CAST: x's elements converted to `dtype` (out's type where `out` is given) by
    CAST's rules (`dmlops.conversion`), into a new array of x's library and device or out."""
    target = _numpy_type(dtype)
    if type(x) is not np.ndarray and other_host_array(x):
        # (another array-API library's host array: its numpy view's cast, the result an
        # array of its namespace)
        made = cast(host_view(x), target, feature_level=feature_level, out=out, device=device)
        return made if out is not None else in_namespace_of(made, x)
    if out is None and device is None and target.isnative:  # (compiled: its checks passed)
        torch = sys.modules.get("torch")
        if torch is not None and type(x) is torch.Tensor and x.is_cpu:
            # (its numpy view's cast, a new array the call makes, as a tensor of the type)
            made = cast(torch_to_numpy(x), target, feature_level=feature_level)
            return numpy_to_torch(made, _torch_type(torch, target))
        done = _warm("CAST", (target.str,), feature_level, [x])
        if done is not _MISS:
            return done
    for field, kind in (("InputTensor", getattr(x, "dtype", None)), ("OutputTensor", target)):
        element = None if kind is None else element_of(kind)
        if element is not None and element.data_type is None:
            raise DmlError(
                f"CAST.{field}.DataType is {element.name}: not one of DirectML's 11 types "
                "(a conversion reads values of its types; no other type carries them)"
            )
    if device is not None:
        return _on_device(
            device,
            [x],
            [out],
            lambda i, o: [cast(i[0], target, feature_level=feature_level, out=o[0])],
        )[0]
    x = in_native_order(x)  # (values are read: in this machine's byte order)
    if out is None and not target.isnative:  # (a byte order asked for: numpy's astype's)
        return cast(x, target.newbyteorder("="), feature_level=feature_level).astype(target)
    make = lambda i, o: CastDesc(i[0], o[0])  # noqa: E731
    if out is None and type(x) is np.ndarray:  # (made by the call: numpy's, in its cache)

        def build_new(ins: list[Any], outs: list[Any]) -> _Call:
            shape = tuple(ins[0].shape)
            return _compile(backend_of(ins), feature_level, make, ins, outs, [shape], target)

        return _dispatch("CAST", (target.str,), feature_level, [x], [None], build_new)[0]
    library = None  # (the backend whose array made here is given back in x's library)
    if out is None:
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(x, torch.Tensor):  # a torch tensor of the type
            out = torch.empty(tuple(x.shape), dtype=_torch_type(torch, target), device=x.device)
        else:
            library = backend_of([x])
            out = library.new_like(x, _shape(x), target)

    def build(ins: list[Any], outs: list[Any]) -> _Call:
        backend = backend_of([ins[0], outs[0]])
        return _compile(backend, feature_level, make, ins, outs, [None], target)

    def into(given: Any) -> Any:
        target_of = given.dtype if type(given) is np.ndarray else target
        return _dispatch("CAST", (target_of.str,), feature_level, [x], [given], build)[0]

    result = values_into(out, into)
    return result if library is None else library.in_library_of(result, x)


def _new_array(x: Any, shape: tuple[int, ...], dtype: np.dtype[Any], zeroed: bool = True) -> Any:
    """A new array of `shape` and `dtype` in x's library and on its device: zeros, or
    uncleared where not `zeroed`."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        make = torch.zeros if zeroed else torch.empty
        return make(shape, dtype=getattr(torch, dtype.name), device=x.device)
    backend = backend_of([x])
    made = backend.new_like(x, shape, dtype)
    if not zeroed:
        return made
    if backend.name == "webgpu":  # (its arrays take no assignment: an upload of zeros)
        return backend.upload(np.zeros(shape, dtype))
    made.fill(0)  # numpy and CuPy
    return made


def _is_webgpu(x: Any) -> bool:
    return type(x).__module__.startswith("dmlops.")


def _bools_as_bytes(x: Any) -> Any:
    """A bool array (numpy, CuPy, torch) viewed as UINT8, the type NONZERO_COORDINATES'
    table has for it; any other array as it is."""
    if str(x.dtype) not in ("bool", "torch.bool"):
        return x
    if type(x).__module__.split(".")[0] == "torch":
        import torch

        return x.view(torch.uint8)
    return x.view(np.uint8)


def nonzero_coordinates(
    x: Any,
    columns: int | None = None,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    out: tuple[Any, Any] | None = None,
    device: str | None = None,
) -> tuple[Any, Any]:
    """DML NONZERO_COORDINATES of a 4- or 5-D array: (the count of its nonzero elements, a
    [1, .., M, N] UINT32 array whose first `count` rows are their coordinates' last N =
    `columns` entries, the effective rank by default), new arrays of x's library (rows past
    the count zeros) or `out`."""
    if device is not None:
        again = lambda i, o: list(  # noqa: E731
            nonzero_coordinates(
                i[0],
                columns,
                feature_level=feature_level,
                out=None if o[0] is None else (o[0], o[1]),
            )
        )
        given = [None, None] if out is None else list(out)
        return tuple(_on_device(device, [x], given, again))
    x = in_native_order(_bools_as_bytes(x))  # (a mask: True is 1, False 0, as UINT8 reads
    # them; a float's zero test finds its sign bit in this machine's byte order)
    shape = tuple(int(n) for n in _shape(x))
    count_shape, coords_shape = NonzeroCoordinatesDesc.output_sizes_for(shape, columns)
    if out is None:
        uint32 = np.dtype(np.uint32)
        out = (_new_array(x, count_shape, uint32), _new_array(x, coords_shape, uint32))

    def build(ins: list[Any], outs: list[Any]) -> _Call:
        backend = backend_of([ins[0], *outs])
        make = lambda i, o: NonzeroCoordinatesDesc(i[0], o[0], o[1])  # noqa: E731
        return _compile(backend, feature_level, make, ins, outs, [None, None], np.uint32)

    made = _dispatch("NONZERO_COORDINATES", (columns,), feature_level, [x], list(out), build)
    return made[0], made[1]


def nonzero(
    x: Any,
    *,
    feature_level: FeatureLevel | int | str | None = None,
    device: str | None = None,
) -> Any:
    """The [count, rank] int64 coordinates of x's nonzero elements in ascending element order
    (numpy.argwhere), of x's library: one NONZERO_COORDINATES (x viewed with leading
    dimensions of size 1 to its 4 or 5), the count read back (a synchronisation), one CAST
    to int64. 1 to 5 dimensions. 64-bit elements, which NONZERO_COORDINATES' table lacks,
    are compared with zero in x's library first (numpy, CuPy, torch: -0.0 is zero, NaN is
    not), and that mask's nonzero elements found."""
    if element_of(x.dtype).size == 8 and not _is_webgpu(x):
        x = x != 0
    shape = tuple(int(n) for n in x.shape)
    rank = len(shape)
    if not 1 <= rank <= 5:
        raise DmlError(
            f"nonzero: x has {rank} dimensions; NONZERO_COORDINATES takes 1 to 5 (as 4 or 5)"
        )
    wide = x if rank >= 4 else x.reshape((1,) * (4 - rank) + shape)
    out = None
    if device is None:  # (the rows past the count are never read: left uncleared)
        count_shape, coords_shape = NonzeroCoordinatesDesc.output_sizes_for(wide.shape, rank)
        uint32 = np.dtype(np.uint32)
        coords = _new_array(wide, coords_shape, uint32, zeroed=False)
        out = (_new_array(wide, count_shape, uint32), coords)
    count, coords = nonzero_coordinates(
        wide, rank, feature_level=feature_level, out=out, device=device
    )
    found = host_int(count)
    rows = coords.reshape(coords.shape[-2], rank)[:found]
    return cast(rows, np.int64, feature_level=feature_level)


def host_int(a: Any) -> int:
    """The one element of a (any library's: numpy, CuPy, torch, WebGPU) as a Python int."""
    one = a.reshape(-1)[0]
    if hasattr(one, "item"):
        return int(one.item())
    return int(one.numpy())  # (a WebGPU array)
