"""What every operator descriptor shares: support tables, validation skeleton, repr."""

from __future__ import annotations

import abc
import copy
import html
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidDescriptorError, UnsupportedFeatureLevelError, a_type
from ..plan import Fill, Layout, LogicalCopy, Plan, ValueSequence, compose, is_injective
from ..tensor import BufferTensorDesc, DataType, FeatureLevel, check_uint, int_tuple

__all__ = ["OperatorDesc", "UnaryDesc", "SupportRow", "TYPES_6", "TYPES_8", "TYPES_11", "ALL_DIMS"]

TYPES_6 = frozenset(
    {
        DataType.FLOAT32,
        DataType.FLOAT16,
        DataType.INT32,
        DataType.INT16,
        DataType.UINT32,
        DataType.UINT16,
    }
)
TYPES_8 = TYPES_6 | {DataType.INT8, DataType.UINT8}
TYPES_11 = TYPES_8 | {DataType.FLOAT64, DataType.INT64, DataType.UINT64}
ALL_DIMS = range(1, 9)


@dataclass(frozen=True)
class SupportRow:
    """One 'DML_FEATURE_LEVEL_x_y and above' row of a tensor-support table."""

    level: FeatureLevel
    dimension_counts: range
    data_types: frozenset[DataType]

    def dims_text(self) -> str:
        """'4 to 5', '4' or '1 to 8', as DirectML's tables write it."""
        r = self.dimension_counts
        return str(r.start) if len(r) == 1 else f"{r.start} to {r.stop - 1}"


def _type_list(types: Iterable[DataType]) -> str:
    order = [
        DataType.FLOAT64,
        DataType.FLOAT32,
        DataType.FLOAT16,
        DataType.INT64,
        DataType.INT32,
        DataType.INT16,
        DataType.INT8,
        DataType.UINT64,
        DataType.UINT32,
        DataType.UINT16,
        DataType.UINT8,
    ]
    return ", ".join(t.name for t in order if t in set(types))


class OperatorDesc(abc.ABC):
    """A DirectML operator descriptor: validates itself and lowers to logical copies."""

    OPERATOR: str = ""
    SUPPORT: tuple[SupportRow, ...] = ()
    # whether a float type of the table may carry other elements' bits where it has no
    # unsigned type (UPSAMPLE_2D: FLOAT32 and FLOAT16 alone); dmlops' backends move bits
    FLOAT_CARRIERS = False
    INDEX_FIELD: str | None = None  # the tensor field holding indices, not data
    # whether its page permits in-place execution: the output binding aliasing the input's
    # (ELEMENT_WISE_IDENTITY); any other overlap of bindings is refused
    IN_PLACE = False
    # whether the field and rule checks hold for tensors with a size of 0 too (numpy's and
    # torch's empty arrays, which DirectML's tensors cannot describe): `check_empty_rules`
    EMPTY_RULES = False
    _carried: tuple[int, bytes | None] | None = None  # set by `carrying`

    @property
    def operator_type(self) -> str:
        """DirectML's DML_OPERATOR_TYPE name."""
        return f"DML_OPERATOR_{self.OPERATOR}"

    @abc.abstractmethod
    def input_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        """(DirectML field name, desc) of each input tensor, in binding order."""

    @abc.abstractmethod
    def output_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        """(DirectML field name, desc) of each output tensor, in binding order."""

    @abc.abstractmethod
    def _check_fields(self) -> None:
        """Array lengths and integer ranges of the operator's own fields."""

    @abc.abstractmethod
    def _check_rules(self) -> None:
        """The operator's rules relating its fields and tensors."""

    def check_empty_rules(self) -> None:
        """The checks of this descriptor that hold where a tensor is empty (a size 0): its
        fields and its rules relating sizes (a split's pieces summing to the whole), where
        `EMPTY_RULES` says they hold; none otherwise."""
        if self.EMPTY_RULES:
            self._check_fields()
            self._check_rules()

    @abc.abstractmethod
    def logical_copies(self) -> list[LogicalCopy]:
        """The copies this operator performs, in tensor coordinates."""

    def compact_copies(self) -> list[LogicalCopy]:
        """The copies of `logical_copies`, runs of like boxes as one (`LogicalCopy.repeat`):
        what `lower` composes."""
        return self.logical_copies()

    @abc.abstractmethod
    def _field_items(self) -> list[tuple[str, object]]:
        """(DirectML field name, value) pairs for repr."""

    @property
    def data_type(self) -> DataType:
        """The data type of the first input tensor."""
        return self.input_fields()[0][1].data_type

    def support_row(self, feature_level: FeatureLevel | int | str) -> SupportRow:
        """The table row that applies at `feature_level`; error if the operator is newer."""
        level = FeatureLevel.parse(feature_level)
        rows = [r for r in self.SUPPORT if r.level <= level]
        if not rows:
            raise UnsupportedFeatureLevelError(
                f"{self.OPERATOR} needs {self.SUPPORT[0].level.dml_name}: "
                f"the feature level is {level.dml_name}"
            )
        return max(rows, key=lambda r: r.level)

    def validate(self, feature_level: FeatureLevel | int | str | None = None) -> None:
        """Check every rule of DirectML for this descriptor at `feature_level` (default newest)."""
        row = self.support_row(FeatureLevel.newest() if feature_level is None else feature_level)
        self._check_fields()
        tensors = self.input_fields() + self.output_fields()
        for name, t in tensors:
            if not isinstance(t, BufferTensorDesc):
                raise InvalidDescriptorError(
                    f"{self.OPERATOR}.{name} is {type(t).__name__}: expected a BufferTensorDesc"
                )
            t.validate(f"{self.OPERATOR}.{name}")
        self._check_rules()
        for name, t in tensors:
            if t.dimension_count not in row.dimension_counts:
                raise UnsupportedFeatureLevelError(
                    f"{self.OPERATOR}.{name}.DimensionCount is {t.dimension_count}: "
                    f"{row.level.dml_name} and above supports {row.dims_text()} dimensions "
                    f"for {self.OPERATOR}{self._needed_level(t, name)}"
                )
            allowed = self._allowed_types(name, row)
            if t.data_type not in allowed:
                raise UnsupportedFeatureLevelError(
                    f"{self.OPERATOR}.{name}.DataType is {t.data_type.name}: "
                    f"{row.level.dml_name} and above supports {_type_list(allowed)} "
                    f"for {self.OPERATOR}.{name}{self._needed_level(t, name)}"
                )
        for name, t in self.output_fields():
            if not is_injective(t.sizes, t.effective_strides):
                raise InvalidDescriptorError(
                    f"{self.OPERATOR}.{name}.Strides is {list(t.effective_strides)}: "
                    f"two output elements of sizes {list(t.sizes)} would share an address"
                )

    def lower(
        self,
        input_layouts: Sequence[Layout] | None = None,
        output_layouts: Sequence[Layout] | None = None,
    ) -> Plan:
        """The strided-copy plan of this (validated) descriptor; layouts default to the descs'."""
        ins = [t for _, t in self.input_fields()]
        outs = [t for _, t in self.output_fields()]
        li = list(input_layouts) if input_layouts is not None else [Layout.of_desc(t) for t in ins]
        lo = (
            list(output_layouts)
            if output_layouts is not None
            else [Layout.of_desc(t) for t in outs]
        )
        plan = compose(
            self.element_size, self.compact_copies(), li, lo, self.fills(), self.fill_layouts()
        )
        return self._finish(plan, li, lo)

    @property
    def element_size(self) -> int:
        """Bytes of one element the plan moves: the data type's, or the size `carrying` set."""
        return self.data_type.element_size if self._carried is None else self._carried[0]

    def carrying(self, element_size: int, fill: bytes | None = None) -> OperatorDesc:
        """This descriptor lowering elements of `element_size` bytes (and writing `fill` as
        its constant, where it writes one): its data tensors describe them with a carrier
        type of another size, as the layers above the Device API do for types DirectML
        has no name for or the operator's table lacks."""
        self._carried = (element_size, fill)
        return self

    def carrier(
        self, level: FeatureLevel | int | str, element_size: int, own: DataType | None
    ) -> DataType | None:
        """The unsigned type that describes this descriptor's data tensors at `level` where
        its table lacks their own type `own` (None: a type DirectML has no name for) while
        the plan moves whole elements of `element_size` bytes: the widest whose size
        divides the element's and that every data field's table entry takes. None where the
        table takes `own`, or no carrier fits (validation then names the type)."""
        row = self.support_row(level)
        allowed = [self._allowed_types(n, row) for n, _ in self.data_fields()]
        if own is not None and all(own in a for a in allowed):
            return None
        carriers = [DataType.UINT64, DataType.UINT32, DataType.UINT16, DataType.UINT8]
        if self.FLOAT_CARRIERS:
            carriers += [DataType.FLOAT64, DataType.FLOAT32, DataType.FLOAT16]
        for c in carriers:
            if element_size % c.element_size == 0 and all(c in a for a in allowed):
                return c
        return None

    def as_carried(self, level: FeatureLevel | int | str) -> OperatorDesc:
        """This descriptor as validation sees it where the data's own type is missing from
        the table at `level`: its data described by the carrier (`carrier`), else itself
        (an operator newer than the level is named by validation)."""
        data = self.data_fields()
        if not data:
            return self
        own = data[0][1].data_type
        try:
            carrier = self.carrier(level, own.element_size, own)
        except UnsupportedFeatureLevelError:
            return self
        return self if carrier is None else self.carried_as(carrier)

    def carried_as(self, carrier: DataType) -> OperatorDesc:
        """A copy of this descriptor whose data tensors are described as `carrier` (sizes
        and strides kept), for validation: the same fields and rules, the carrier's table
        entry."""
        swap = {id(t): BufferTensorDesc(carrier, t.sizes, t.strides) for _, t in self.data_fields()}
        made = copy.copy(self)
        for attr, value in vars(self).items():
            if id(value) in swap:
                setattr(made, attr, swap[id(value)])
            elif isinstance(value, (list, tuple)) and any(id(v) in swap for v in value):
                setattr(made, attr, type(value)(swap.get(id(v), v) for v in value))
        return made

    def data_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        """The tensor fields holding the data the operator moves (not indices)."""
        return [f for f in self.input_fields() + self.output_fields() if f[0] != self.INDEX_FIELD]

    def _finish(self, plan: Plan, li: Sequence[Layout], lo: Sequence[Layout]) -> Plan:
        """The lowered plan, completed by what the operator adds beyond strided copies (the
        indexed operators' index-driven copies); unchanged by default."""
        return plan

    def fills(self) -> tuple[Fill, ...]:
        """The constants this operator writes (copies from source -1 - k write fills[k]), as
        one element's bytes each (the carried fill, where `carrying` gave one), or a tensor
        fill's rule (`ValueSequence`)."""
        own = self._own_fills()
        if self._carried is not None and self._carried[1] is not None and own:
            return (self._carried[1],)
        return own

    def _own_fills(self) -> tuple[Fill, ...]:
        """The operator's constants, encoded in its data type; none by default."""
        return ()

    def fill_layouts(self) -> tuple[Layout | None, ...]:
        """The layout of each tensor fill (FILL_VALUE_SEQUENCE's values), None for an
        element fill; none by default."""
        return ()

    def fill_text(self, src: int, at: Sequence[int] = ()) -> str:
        """The constant that fill source `src` writes (a tensor fill's at coordinate `at`),
        as the data type reads it."""
        k = -1 - src
        layouts = self.fill_layouts()
        layout = layouts[k] if k < len(layouts) else None
        element = 0
        if layout is not None:
            element = layout.offset + sum(a * t for a, t in zip(at, layout.strides, strict=True))
        fill = self.fills()[k]
        if isinstance(fill, ValueSequence):
            value = fill.values(element, element + 1)[0]
        else:
            value = np.frombuffer(fill, self.data_type.numpy_dtype)[element]
        return f"{value:g}" if isinstance(value, np.floating) else str(value)

    def _allowed_types(self, name: str, row: SupportRow) -> frozenset[DataType]:
        """The data types tensor field `name` may have under this table row."""
        return row.data_types

    def _needed_level(self, t: BufferTensorDesc, name: str = "") -> str:
        """'; N dimensions of TYPE need LEVEL', the lowest row that takes `t`, or that none does."""
        what = f"{t.dimension_count} dimensions of {t.data_type.name}"
        for r in sorted(self.SUPPORT, key=lambda r: r.level):
            if t.dimension_count in r.dimension_counts and t.data_type in self._allowed_types(
                name, r
            ):
                return f"; {what} need {r.level.dml_name}"
        return f"; no feature level supports {what}"

    # helpers for subclasses -------------------------------------------------

    def _uint_array(self, values: Sequence[int], field: str) -> None:
        for i, v in enumerate(values):
            check_uint(v, f"{self.OPERATOR}.{field}[{i}]")

    def _check_count(self, count: int | None, actual: int, field: str, of: str) -> None:
        if count is not None:
            check_uint(count, f"{self.OPERATOR}.{field}")
            if count != actual:
                raise InvalidDescriptorError(
                    f"{self.OPERATOR}.{field} is {count}: {of} has {actual} entries"
                )

    def _same_type(
        self, ref_name: str, ref: BufferTensorDesc, name: str, t: BufferTensorDesc
    ) -> None:
        if t.data_type != ref.data_type:
            raise InvalidDescriptorError(
                f"{self.OPERATOR}.{name}.DataType is {t.data_type.name}: "
                f"must equal {ref_name}.DataType {ref.data_type.name}"
            )
        if t.dimension_count != ref.dimension_count:
            raise InvalidDescriptorError(
                f"{self.OPERATOR}.{name}.DimensionCount is {t.dimension_count}: "
                f"must equal {ref_name}.DimensionCount {ref.dimension_count}"
            )

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self._field_items())
        return f"{type(self).__name__}({body})"

    def _repr_html_(self) -> str:
        """Notebook view: the picture (small tensors) or field table, with the verdict at 4_1."""
        return html_view(self)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._field_items() == other._field_items()

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self)))


class UnaryDesc(OperatorDesc):
    """An operator of one InputTensor and one OutputTensor (SLICE, SLICE1, TILE, PADDING1,
    DEPTH_TO_SPACE1, SPACE_TO_DEPTH1): the two fields, listed first in its repr."""

    input_tensor: BufferTensorDesc
    output_tensor: BufferTensorDesc

    def input_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [("InputTensor", self.input_tensor)]

    def output_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [("OutputTensor", self.output_tensor)]

    def _field_items(self) -> list[tuple[str, object]]:
        return [("InputTensor", self.input_tensor), ("OutputTensor", self.output_tensor)]


class GeneratorDesc(OperatorDesc):
    """An operator that reads no tensor and writes one OutputTensor (FILL_VALUE_CONSTANT,
    DIAGONAL_MATRIX): its data type is the output's."""

    output_tensor: BufferTensorDesc

    @property
    def data_type(self) -> DataType:
        return self.output_tensor.data_type

    def input_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return []

    def output_fields(self) -> list[tuple[str, BufferTensorDesc]]:
        return [("OutputTensor", self.output_tensor)]


def scalar_bytes(value: object, data_type: DataType, field: str) -> bytes:
    """A DML_SCALAR_UNION field's value as one element of `data_type`: a number the type
    holds exactly (an integer type takes whole numbers in its range; a float type rounds)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidDescriptorError(f"{field} is {value!r}: not a number")
    dtype = np.dtype(data_type.numpy_dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype.name)
        whole = isinstance(value, (int, np.integer)) or float(value).is_integer()
        if not whole or not info.min <= int(value) <= info.max:
            raise InvalidDescriptorError(f"{field} is {value!r}: not {a_type(data_type.name)}")
        return np.array(int(value), dtype).tobytes()
    return np.array(value, dtype).tobytes()


def float_field_bytes(value: object, data_type: DataType, field: str) -> bytes:
    """A FLOAT field's value (PADDING's PaddingValue, DIAGONAL_MATRIX's Value) as one
    element of `data_type`: rounded to nearest for a float type; for an integer type
    truncated toward zero, as DirectML's pages say (10.6 becomes 10), and saturated past the
    type's range (a NaN gives 0) where they are silent."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidDescriptorError(f"{field} is {value!r}: not a number")
    single = np.float32(value)  # the field is a FLOAT
    dtype = np.dtype(data_type.numpy_dtype)
    if dtype.kind not in "iu":
        return np.array(single, dtype).tobytes()
    if np.isnan(single):
        return np.zeros((), dtype).tobytes()
    info = np.iinfo(dtype.name)
    if not np.isfinite(single):
        return np.array(info.max if single > 0 else info.min, dtype).tobytes()
    whole = int(np.trunc(np.float64(single)))
    return np.array(min(max(whole, info.min), info.max), dtype).tobytes()


def uint_list(values: object, field: str) -> tuple[int, ...]:
    """Normalise an integer array field (range checks come in validate)."""
    return int_tuple(values, field)  # type: ignore[arg-type]


HtmlView = Callable[[OperatorDesc, "FeatureLevel | int | str | None"], str]
_HTML_VIEW: list[HtmlView] = []  # dmlops.picture installs the notebook view on import


def set_html_view(view: HtmlView) -> None:
    """Install the notebook view of descriptors (dmlops.picture does, on import)."""
    _HTML_VIEW[:] = [view]


def html_view(desc: OperatorDesc, feature_level: FeatureLevel | int | str | None = None) -> str:
    """A descriptor's notebook view: the installed one, else its repr."""
    if not _HTML_VIEW:
        return f"<pre>{html.escape(repr(desc))}</pre>"
    return _HTML_VIEW[0](desc, feature_level)
