"""DirectML's tensor model: data types, feature levels, buffer tensor descriptions."""

from __future__ import annotations

import enum
import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from .errors import InvalidDescriptorError

EnumT = TypeVar("EnumT", bound=enum.Enum)


def member_named(cls: type[EnumT], name: str) -> EnumT | None:
    """The member of an enum called `name`, or None (plain attribute access, which torch's
    compiler traces, where `__members__` breaks its graph)."""
    member = getattr(cls, name, None)
    return member if isinstance(member, cls) else None


__all__ = [
    "UINT_MAX",
    "INT_MIN",
    "INT_MAX",
    "UINT64_MAX",
    "MAX_DIMENSION_COUNT",
    "DataType",
    "FeatureLevel",
    "TensorFlags",
    "BufferTensorDesc",
    "calc_buffer_tensor_size",
    "packed_strides",
]

UINT_MAX = 2**32 - 1
INT_MIN = -(2**31)
INT_MAX = 2**31 - 1
UINT64_MAX = 2**64 - 1
MAX_DIMENSION_COUNT = 8


class DataType(enum.IntEnum):
    """DML_TENSOR_DATA_TYPE, with DirectML's values."""

    UNKNOWN = 0
    FLOAT32 = 1
    FLOAT16 = 2
    UINT32 = 3
    UINT16 = 4
    UINT8 = 5
    INT32 = 6
    INT16 = 7
    INT8 = 8
    FLOAT64 = 9
    UINT64 = 10
    INT64 = 11

    @property
    def element_size(self) -> int:
        """Bytes per element (0 for UNKNOWN)."""
        return _ELEMENT_SIZE[self]

    @property
    def is_signed(self) -> bool:
        """Whether the type holds negative integers (INT8 to INT64)."""
        return self.name.startswith("INT")

    @property
    def numpy_dtype(self) -> np.dtype[np.generic]:
        """The numpy dtype holding this type's values."""
        if self is DataType.UNKNOWN:
            raise InvalidDescriptorError("DataType UNKNOWN has no numpy dtype")
        return np.dtype(_NUMPY_NAME[self])

    @property
    def dml_name(self) -> str:
        """DirectML's constant name, e.g. DML_TENSOR_DATA_TYPE_FLOAT32."""
        return f"DML_TENSOR_DATA_TYPE_{self.name}"

    @classmethod
    def from_numpy(cls, dtype: np.dtype[np.generic] | type | str) -> DataType:
        """The data type of a numpy dtype; DmlError for dtypes DirectML lacks."""
        dt = np.dtype(dtype)
        for member, name in _NUMPY_NAME.items():
            if dt == np.dtype(name):
                return member
        raise InvalidDescriptorError(
            f"numpy dtype {dt} has no DirectML data type: "
            "use one of float64, float32, float16, int64, int32, int16, int8, "
            "uint64, uint32, uint16, uint8"
        )

    @classmethod
    def parse(cls, value: object, field: str = "DataType") -> DataType:
        """Accept a DataType, its value, or its name in either DirectML spelling."""
        if isinstance(value, DataType):
            return value
        if isinstance(value, bool):
            raise InvalidDescriptorError(f"{field} is {value!r}: not a data type")
        if isinstance(value, int):
            try:
                return cls(value)
            except ValueError:
                raise InvalidDescriptorError(
                    f"{field} is {value}: not a DML_TENSOR_DATA_TYPE value (0..11)"
                ) from None
        if isinstance(value, str):
            name = value.removeprefix("DML_TENSOR_DATA_TYPE_")
            member = member_named(cls, name)
            if member is not None:
                return member
        raise InvalidDescriptorError(f"{field} is {value!r}: not a data type name")


_ELEMENT_SIZE = {
    DataType.UNKNOWN: 0,
    DataType.FLOAT32: 4,
    DataType.FLOAT16: 2,
    DataType.UINT32: 4,
    DataType.UINT16: 2,
    DataType.UINT8: 1,
    DataType.INT32: 4,
    DataType.INT16: 2,
    DataType.INT8: 1,
    DataType.FLOAT64: 8,
    DataType.UINT64: 8,
    DataType.INT64: 8,
}

_NUMPY_NAME = {
    DataType.FLOAT32: "float32",
    DataType.FLOAT16: "float16",
    DataType.UINT32: "uint32",
    DataType.UINT16: "uint16",
    DataType.UINT8: "uint8",
    DataType.INT32: "int32",
    DataType.INT16: "int16",
    DataType.INT8: "int8",
    DataType.FLOAT64: "float64",
    DataType.UINT64: "uint64",
    DataType.INT64: "int64",
}


@functools.cache
def _newest(levels: type[FeatureLevel]) -> FeatureLevel:
    """The largest member (once: `max` over the members costs a microsecond a call)."""
    return max(levels)


class FeatureLevel(enum.IntEnum):
    """DML_FEATURE_LEVEL, with DirectML's values."""

    FL_1_0 = 0x1000
    FL_2_0 = 0x2000
    FL_2_1 = 0x2100
    FL_3_0 = 0x3000
    FL_3_1 = 0x3100
    FL_4_0 = 0x4000
    FL_4_1 = 0x4100
    FL_5_0 = 0x5000
    FL_5_1 = 0x5100
    FL_5_2 = 0x5200
    FL_6_0 = 0x6000
    FL_6_1 = 0x6100
    FL_6_2 = 0x6200
    FL_6_3 = 0x6300
    FL_6_4 = 0x6400

    @property
    def dml_name(self) -> str:
        """DirectML's constant name, e.g. DML_FEATURE_LEVEL_4_1."""
        return "DML_FEATURE_LEVEL_" + self.name.removeprefix("FL_")

    @classmethod
    def newest(cls) -> FeatureLevel:
        """The newest feature level this library knows."""
        return _newest(cls)

    @classmethod
    def parse(cls, value: object) -> FeatureLevel:
        """Accept a FeatureLevel, its value, or a name such as '4_1' or 'FL_4_1'; None is the
        newest."""
        if value is None:
            return cls.newest()
        if isinstance(value, FeatureLevel):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                return cls(value)
            except ValueError:
                pass
        if isinstance(value, str):
            name = value.removeprefix("DML_FEATURE_LEVEL_").removeprefix("FL_")
            name = name.replace(".", "_")
            member = member_named(cls, "FL_" + name)
            if member is not None:
                return member
        raise InvalidDescriptorError(f"feature level {value!r} is not a DML_FEATURE_LEVEL")


class TensorFlags(enum.IntFlag):
    """DML_TENSOR_FLAGS."""

    NONE = 0
    OWNED_BY_DML = 1


def packed_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides, in elements, of a packed tensor with these sizes."""
    strides = [1] * len(sizes)
    for i in range(len(sizes) - 2, -1, -1):
        strides[i] = strides[i + 1] * sizes[i + 1]
    return tuple(strides)


def calc_buffer_tensor_size(
    data_type: DataType, sizes: Sequence[int], strides: Sequence[int] | None
) -> int:
    """DMLCalcBufferTensorSize: the bytes a tensor spans, rounded up to 4."""
    element_size = DataType(data_type).element_size
    if strides is None:
        index_span = math.prod(sizes)
    else:
        index_span = sum((s - 1) * t for s, t in zip(sizes, strides, strict=True)) + 1
    size = index_span * element_size
    return (size + 3) & ~3


_PLAIN_SEQUENCES = (list, tuple)
_PLAIN_INT = {int}


def int_tuple(values: Iterable[object] | None, field: str) -> tuple[int, ...]:
    """Normalise a sequence of integers; DmlError naming `field` otherwise."""
    if type(values) in _PLAIN_SEQUENCES:  # the common case: plain ints, one pass in C
        found = tuple(values)  # type: ignore[arg-type]
        if set(map(type, found)) <= _PLAIN_INT:
            return found  # type: ignore[return-value]
    if values is None:
        raise InvalidDescriptorError(f"{field} is missing")
    if isinstance(values, (str, bytes)):
        raise InvalidDescriptorError(f"{field} is {values!r}: expected a list of integers")
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise InvalidDescriptorError(f"{field}[{i}] is {v!r}: expected an integer")
        out.append(int(v))
    return tuple(out)


def check_uint(value: int, field: str, limit: int = UINT_MAX) -> None:
    """Reject a value outside DirectML's UINT range."""
    if value < 0:
        raise InvalidDescriptorError(f"{field} is {value}: a UINT field cannot be negative")
    if value > limit:
        raise InvalidDescriptorError(f"{field} is {value}: exceeds the UINT maximum {limit}")


def check_int(value: int, field: str) -> None:
    """Reject a value outside DirectML's INT range."""
    if not INT_MIN <= value <= INT_MAX:
        raise InvalidDescriptorError(
            f"{field} is {value}: outside the INT range [{INT_MIN}, {INT_MAX}]"
        )


@dataclass(frozen=True, init=False)
class BufferTensorDesc:
    """DML_BUFFER_TENSOR_DESC: a tensor's type, shape and layout in a buffer."""

    data_type: DataType
    sizes: tuple[int, ...]
    strides: tuple[int, ...] | None
    total_tensor_size_in_bytes: int
    guaranteed_base_offset_alignment: int
    flags: TensorFlags

    def __init__(
        self,
        data_type: DataType | int | str,
        sizes: Sequence[int],
        strides: Sequence[int] | None = None,
        total_tensor_size_in_bytes: int | None = None,
        guaranteed_base_offset_alignment: int = 0,
        flags: TensorFlags | int = TensorFlags.NONE,
    ) -> None:
        dt = DataType.parse(data_type)
        sz = int_tuple(sizes, "Sizes")
        st = None if strides is None else int_tuple(strides, "Strides")
        if total_tensor_size_in_bytes is None:
            if st is not None and len(st) != len(sz):
                total = 0  # left for validate() to report the length mismatch
            else:
                total = calc_buffer_tensor_size(dt, sz, st)
        else:
            total = int(total_tensor_size_in_bytes)
        object.__setattr__(self, "data_type", dt)
        object.__setattr__(self, "sizes", sz)
        object.__setattr__(self, "strides", st)
        object.__setattr__(self, "total_tensor_size_in_bytes", total)
        object.__setattr__(
            self, "guaranteed_base_offset_alignment", int(guaranteed_base_offset_alignment)
        )
        object.__setattr__(
            self, "flags", TensorFlags(int(flags)) if int(flags) in (0, 1) else int(flags)
        )

    @property
    def dimension_count(self) -> int:
        """DimensionCount: the number of dimensions."""
        return len(self.sizes)

    @property
    def element_count(self) -> int:
        """Number of logical elements."""
        return math.prod(self.sizes)

    @property
    def effective_strides(self) -> tuple[int, ...]:
        """Strides in elements: the given ones, or packed row-major."""
        return self.strides if self.strides is not None else packed_strides(self.sizes)

    @property
    def implied_size_in_bytes(self) -> int:
        """The size DMLCalcBufferTensorSize gives for these sizes and strides."""
        return calc_buffer_tensor_size(self.data_type, self.sizes, self.strides)

    def __repr__(self) -> str:
        parts = [f"DataType={self.data_type.name}", f"Sizes={list(self.sizes)}"]
        if self.strides is not None:
            parts.append(f"Strides={list(self.strides)}")
        parts.append(f"TotalTensorSizeInBytes={self.total_tensor_size_in_bytes}")
        if self.guaranteed_base_offset_alignment:
            parts.append(f"GuaranteedBaseOffsetAlignment={self.guaranteed_base_offset_alignment}")
        if self.flags:
            parts.append(f"Flags={int(self.flags)}")
        return "BufferTensorDesc(" + ", ".join(parts) + ")"

    def validate(self, name: str) -> None:
        """Check every field against DirectML's rules; `name` prefixes messages."""
        if self.data_type is DataType.UNKNOWN:
            raise InvalidDescriptorError(f"{name}.DataType is UNKNOWN: never valid")
        n = len(self.sizes)
        if not 1 <= n <= MAX_DIMENSION_COUNT:
            raise InvalidDescriptorError(
                f"{name}.DimensionCount is {n}: must be 1 to {MAX_DIMENSION_COUNT}"
            )
        for i, s in enumerate(self.sizes):
            check_uint(s, f"{name}.Sizes[{i}]")
            if s == 0:
                raise InvalidDescriptorError(f"{name}.Sizes[{i}] is 0: sizes must be at least 1")
        if self.strides is not None:
            if len(self.strides) != n:
                raise InvalidDescriptorError(
                    f"{name}.Strides has {len(self.strides)} entries: must equal DimensionCount {n}"
                )
            for i, t in enumerate(self.strides):
                check_uint(t, f"{name}.Strides[{i}]")
        flags = int(self.flags)
        if flags & ~int(TensorFlags.OWNED_BY_DML):
            raise InvalidDescriptorError(
                f"{name}.Flags is {flags}: only DML_TENSOR_FLAG_NONE (0) and "
                "DML_TENSOR_FLAG_OWNED_BY_DML (1) exist"
            )
        check_uint(self.total_tensor_size_in_bytes, f"{name}.TotalTensorSizeInBytes", UINT64_MAX)
        implied = self.implied_size_in_bytes
        if self.total_tensor_size_in_bytes < implied:
            raise InvalidDescriptorError(
                f"{name}.TotalTensorSizeInBytes is {self.total_tensor_size_in_bytes}: "
                f"must be at least the implied size {implied} (DMLCalcBufferTensorSize)"
            )
        if implied > UINT64_MAX:
            raise InvalidDescriptorError(
                f"{name}.Sizes {list(self.sizes)}: the implied size {implied} exceeds UINT64"
            )
        align = self.guaranteed_base_offset_alignment
        check_uint(align, f"{name}.GuaranteedBaseOffsetAlignment")
        if align != 0 and align & (align - 1):
            raise InvalidDescriptorError(
                f"{name}.GuaranteedBaseOffsetAlignment is {align}: must be 0 or a power of two"
            )
