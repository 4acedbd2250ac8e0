"""The DirectML-shaped API: a device at a feature level, compiled operators, bindings."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .backends import Backend, get_backend
from .errors import BindingError
from .ops import OperatorDesc
from .plan import Plan
from .tensor import BufferTensorDesc, FeatureLevel

__all__ = ["Binding", "BindingTable", "CompiledOperator", "Device"]


@dataclass(frozen=True)
class Binding:
    """DML_BUFFER_BINDING: a buffer, a byte offset into it and the bytes bound (None: the rest)."""

    buffer: Any
    offset: int = 0
    size: int | None = None


class CompiledOperator:
    """A validated operator lowered to a plan, ready to execute on its device."""

    def __init__(self, device: Device, desc: OperatorDesc, plan: Plan) -> None:
        self.device = device
        self.desc = desc
        self.plan = plan

    def __repr__(self) -> str:
        return f"CompiledOperator({self.desc.operator_type}, {self.device!r})"

    def _bind(
        self,
        kind: str,
        fields: list[tuple[str, BufferTensorDesc]],
        given: Sequence[Any],
        writable: bool,
    ) -> list[Any]:
        op = self.desc.OPERATOR
        if isinstance(given, (bytes, bytearray, memoryview)) or not isinstance(given, Sequence):
            raise BindingError(f"{op}: {kind} must be a list of bindings")
        if len(given) != len(fields):
            raise BindingError(f"{op}: {len(given)} {kind} bound, the operator has {len(fields)}")
        extents = self.plan.output_extents if writable else self.plan.input_extents
        views = []
        for (name, desc), b, extent in zip(fields, given, extents, strict=True):
            binding = b if isinstance(b, Binding) else Binding(b)
            flat = self.device.backend.byte_view(binding.buffer, writable)
            length = int(flat.shape[0])
            where = f"{op}.{name} binding"
            if binding.offset < 0 or binding.offset > length:
                raise BindingError(
                    f"{where}: offset {binding.offset} is outside the {length}-byte buffer"
                )
            align = desc.guaranteed_base_offset_alignment
            if align and binding.offset % align:
                raise BindingError(
                    f"{where}: offset {binding.offset} breaks GuaranteedBaseOffsetAlignment {align}"
                )
            size = length - binding.offset if binding.size is None else binding.size
            if size < 0 or binding.offset + size > length:
                raise BindingError(
                    f"{where}: {size} bytes at offset {binding.offset} "
                    f"exceed the {length}-byte buffer"
                )
            need = max(desc.total_tensor_size_in_bytes, extent)
            if size < need:
                raise BindingError(
                    f"{where}: {size} bytes bound, TotalTensorSizeInBytes needs {need}"
                )
            views.append(flat[binding.offset : binding.offset + size])
        return views

    def bind(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> BindingTable:
        """Check and bind buffers once (DirectML's binding table); dispatch it many times."""
        ins = self._bind("inputs", self.desc.input_fields(), inputs, writable=False)
        outs = self._bind("outputs", self.desc.output_fields(), outputs, writable=True)
        return BindingTable(self, self.device.backend.bind(self.plan, ins, outs))

    def execute(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> None:
        """Bind the buffers (checked before any byte is written) and run the plan."""
        self.bind(inputs, outputs).dispatch()


class BindingTable:
    """An operator with its buffers bound and checked: `dispatch()` runs it again."""

    def __init__(self, op: CompiledOperator, run: Callable[[], None]) -> None:
        self.operator = op
        self._run = run

    def dispatch(self) -> None:
        """Execute the operator on the bound buffers (asynchronously on the cuda backend)."""
        self._run()


class Device:
    """An execution device at a DirectML feature level, on the 'numpy' or 'cuda' backend."""

    def __init__(
        self,
        feature_level: FeatureLevel | int | str = FeatureLevel.FL_4_1,
        backend: str = "numpy",
    ) -> None:
        self.feature_level = FeatureLevel.parse(feature_level)
        self.backend: Backend = get_backend(backend)

    def __repr__(self) -> str:
        return f"Device({self.feature_level.dml_name}, backend={self.backend.name!r})"

    def create_operator(self, desc: OperatorDesc) -> CompiledOperator:
        """Validate `desc` at this device's feature level and compile its plan."""
        desc.validate(self.feature_level)
        return CompiledOperator(self, desc, desc.lower())
