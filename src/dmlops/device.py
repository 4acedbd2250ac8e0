"""The DirectML-shaped API: a device at a feature level, compiled operators, bindings."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .backends import Backend, Executor, get_backend
from .errors import BindingError
from .ops import OperatorDesc
from .ops._base import html_view
from .overlap import describe, find_overlaps, owners_apart
from .plan import Plan
from .tensor import BufferTensorDesc, FeatureLevel

__all__ = ["Binding", "BindingTable", "CompiledGraph", "CompiledOperator", "Device"]


@dataclass(frozen=True)
class Binding:
    """DML_BUFFER_BINDING: a buffer, a byte offset into it and the bytes bound (None: the rest)."""

    buffer: Any
    offset: int = 0
    size: int | None = None


class CompiledOperator:
    """A validated operator lowered to a plan, ready to execute on its device."""

    def _repr_html_(self) -> str:
        """Notebook view: the descriptor's picture or table at the device's level, and the plan."""
        return html_view(self.desc, self.device.feature_level) + self.plan._repr_html_()

    def __init__(self, device: Device, desc: OperatorDesc, plan: Plan) -> None:
        self.device = device
        self.desc = desc
        self.plan = plan
        self._executor: Executor | None = None
        self._direct_executor: Executor | None = None  # where arrays are their own flats
        self._inputs = desc.input_fields()
        self._outputs = desc.output_fields()
        self._input_needs = [
            max(d.total_tensor_size_in_bytes, e)
            for (_, d), e in zip(self._inputs, plan.input_extents, strict=True)
        ]
        self._output_needs = [
            max(d.total_tensor_size_in_bytes, e)
            for (_, d), e in zip(self._outputs, plan.output_extents, strict=True)
        ]

    def __repr__(self) -> str:
        return f"CompiledOperator({self.desc.operator_type}, {self.device!r})"

    def _bind(
        self,
        kind: str,
        fields: list[tuple[str, BufferTensorDesc]],
        needs: list[int],
        given: Sequence[Any],
        writable: bool,
    ) -> list[Any]:
        op = self.desc.OPERATOR
        if isinstance(given, (bytes, bytearray, memoryview)) or not isinstance(given, Sequence):
            raise BindingError(f"{op}: {kind} must be a list of bindings")
        if len(given) != len(fields):
            raise BindingError(f"{op}: {len(given)} {kind} bound, the operator has {len(fields)}")
        backend = self.device.backend
        byte_view, window = backend.byte_view, backend.window
        flats = []
        for k, b in enumerate(given):
            if isinstance(b, Binding):
                buffer, offset, size = b.buffer, b.offset, b.size
            else:
                buffer, offset, size = b, 0, None
            flat, length = byte_view(buffer, writable)
            if size is None:
                size = length - offset
            need = needs[k]
            if offset < 0 or size < need or offset + size > length:
                self._refuse(fields[k], offset, size, length, need)
            align = fields[k][1].guaranteed_base_offset_alignment
            if align and offset % align:
                raise BindingError(
                    f"{op}.{fields[k][0]} binding: offset {offset} breaks "
                    f"GuaranteedBaseOffsetAlignment {align}"
                )
            flats.append(window(flat, offset, size))
        return flats

    def _refuse(
        self, field: tuple[str, BufferTensorDesc], offset: int, size: int, length: int, need: int
    ) -> None:
        where = f"{self.desc.OPERATOR}.{field[0]} binding"
        if offset < 0 or offset > length:
            raise BindingError(f"{where}: offset {offset} is outside the {length}-byte buffer")
        if size < 0 or offset + size > length:
            raise BindingError(
                f"{where}: {size} bytes at offset {offset} exceed the {length}-byte buffer"
            )
        raise BindingError(f"{where}: {size} bytes bound, TotalTensorSizeInBytes needs {need}")

    def _check_overlaps(self, ins: list[Any], outs: list[Any]) -> None:
        address = self.device.backend.address
        at_in, at_out = [address(f) for f in ins], [address(f) for f in outs]
        if self._aliased_in_place(at_in, at_out):
            return
        overlaps = find_overlaps(self.plan, at_in, at_out)
        if overlaps:
            op = self.desc.OPERATOR
            raise BindingError(
                f"{op}."
                + describe(
                    overlaps[0],
                    [f"{op}.{n}" for n, _ in self._inputs],
                    [n for n, _ in self._outputs],
                )
            )

    def _aliased_in_place(self, at_in: list[int], at_out: list[int]) -> bool:
        """Whether the operator executes in place (its page permits the output to alias the
        input: ELEMENT_WISE_IDENTITY) and the two bindings are that alias: one address, one
        tensor description, so every element is written where it was read."""
        if not getattr(self.desc, "IN_PLACE", False) or len(at_in) != 1 or len(at_out) != 1:
            return False
        (_, source), (_, target) = self._inputs[0], self._outputs[0]
        same_layout = tuple(source.sizes) == tuple(target.sizes) and tuple(
            source.effective_strides
        ) == tuple(target.effective_strides)
        return at_in[0] == at_out[0] and same_layout

    def bind(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> BindingTable:
        """Check and bind buffers once (DirectML's binding table); dispatch it many times."""
        ins = self._bind("inputs", self._inputs, self._input_needs, inputs, writable=False)
        outs = self._bind("outputs", self._outputs, self._output_needs, outputs, writable=True)
        backend = self.device.backend
        op = self.desc.OPERATOR
        named = [(f"{op}.{n}", b) for (n, _), b in zip(self._inputs, _buffers(inputs), strict=True)]
        named += [(n, b) for (n, _), b in zip(self._outputs, _buffers(outputs), strict=True)]
        queue = backend.placement(named)  # buffers on two GPUs are refused here
        if not owners_apart(backend.owner, _buffers(inputs), _buffers(outputs)):
            self._check_overlaps(ins, outs)
        if self._executor is None:
            self._executor = self.device.backend.executor(self.plan)
        run = self._executor.bound(ins, outs)
        return BindingTable(self, run, queue, (list(inputs), list(outputs)))

    def _run_fresh(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> None:
        """Run on whole buffers made for this operator's tensors, outputs newly allocated (so
        sizes are right and nothing overlaps): the binding checks are left out."""
        direct = self._direct_executor
        if direct is not None:  # contiguous arrays are their own flats
            direct(inputs, outputs, None)
            return
        backend = self.device.backend
        if self._executor is None:
            self._executor = backend.executor(self.plan)
        if backend.one_queue and backend.flat_function(0, 0, True) is None:
            self._direct_executor = self._executor
            self._executor(inputs, outputs, None)
            return
        fresh = getattr(backend, "fresh_bindings", None)  # (CUDA: torch tensors' pointers)
        made = None if fresh is None else fresh(inputs, outputs)
        if made is not None:
            self._executor(*made)
            return
        byte_view = backend.byte_view
        ins = [byte_view(b, False)[0] for b in inputs]
        outs = [byte_view(b, True)[0] for b in outputs]
        if backend.one_queue:
            self._executor(ins, outs, None)
            return
        queue = backend.placement([(n, b) for (n, _), b in zip(self._inputs, inputs, strict=True)])
        self._executor(ins, outs, queue(None))

    def execute(self, inputs: Sequence[Any], outputs: Sequence[Any], stream: Any = None) -> None:
        """Bind the buffers (checked before any byte is written) and run the plan, on
        `stream` where one is given (CUDA: a torch or CuPy stream, or a cudaStream_t), else on
        the current stream of the buffers' library on their GPU."""
        self.bind(inputs, outputs).dispatch(stream)


def _buffers(bindings: Sequence[Any]) -> list[Any]:
    return [b.buffer if isinstance(b, Binding) else b for b in bindings]


class BindingTable:
    """An operator with its buffers bound and checked: `dispatch()` runs it again."""

    def __init__(
        self,
        op: CompiledOperator,
        run: Callable[..., None],
        queue: Callable[[Any], Any],
        buffers: Any = None,
    ) -> None:
        self.operator = op
        self._run = run
        self._queue = queue
        self._buffers = buffers  # the bound buffers live as long as the table

    def dispatch(self, stream: Any = None) -> None:
        """Execute the operator on the bound buffers: on the cuda backend asynchronously, on
        `stream` if given, else on the current stream of the buffers' library."""
        self._run(self._queue(stream))


class Device:
    """An execution device at a DirectML feature level (default: the newest dmlops knows, as
    DirectML's own device runs every level its library has), on the 'numpy', 'cuda' or
    'webgpu' backend."""

    def __init__(
        self,
        feature_level: FeatureLevel | int | str | None = None,
        backend: str = "numpy",
    ) -> None:
        self.feature_level = (
            FeatureLevel.newest() if feature_level is None else FeatureLevel.parse(feature_level)
        )
        self.backend: Backend = get_backend(backend)

    def __repr__(self) -> str:
        return f"Device({self.feature_level.dml_name}, backend={self.backend.name!r})"

    def create_operator(self, desc: OperatorDesc) -> CompiledOperator:
        """Validate `desc` at this device's feature level and compile its plan."""
        desc.validate(self.feature_level)
        return CompiledOperator(self, desc, desc.lower())


class CompiledGraph:
    """A graph that needs intermediate buffers: one compiled pass per intermediate, then a
    last pass to the outputs, on the same stream in order. The intermediates belong to the
    compiled graph (made on first use, per device), so calls on one CompiledGraph must not
    overlap in time (as calls into one DirectML graph's persistent resource)."""

    def __init__(self, device: Device, desc: Any, passes: Sequence[tuple[Any, Plan]]) -> None:
        self.device = device
        self.desc = desc
        self.passes = [CompiledOperator(device, d, p) for d, p in passes]
        self.plan = passes[-1][1]  # the pass that writes the outputs
        self.notes = [d.what for d, _ in passes[:-1]]
        self._sizes = [d.output_fields()[0][1].total_tensor_size_in_bytes for d, _ in passes[:-1]]
        self._buffers: dict[Any, list[Any]] = {}

    def __repr__(self) -> str:
        return f"CompiledGraph({len(self.passes)} passes, {self.device!r})"

    def describe(self) -> str:
        """Each pass's copies, and why each intermediate buffer is there."""
        lines = []
        for op, note in zip(self.passes, [*self.notes, "the outputs"], strict=True):
            lines.append(f"pass writing {note}:")
            lines.append(op.plan.describe())
        return "\n".join(lines)

    def _intermediates(self, inputs: Sequence[Any], own: bool = False) -> list[Any]:
        """The buffers between passes: kept per device for the Device API's calls, or, with
        `own`, new ones for this call alone (sessions may run from many threads at once)."""
        backend = self.device.backend
        buffers = [b.buffer if isinstance(b, Binding) else b for b in inputs]
        if own:
            return [self._new(backend, n, buffers) for n in self._sizes]
        where = backend.placement([("InputTensors[0]", buffers[0])])(None) if buffers else None
        key = None if where is None else where[0]
        found = self._buffers.get(key)
        if found is None:
            found = self._buffers[key] = [self._new(backend, n, buffers) for n in self._sizes]
        return found

    @staticmethod
    def _new(backend: Any, nbytes: int, like: Sequence[Any]) -> Any:
        if like and type(like[0]) is np.ndarray and backend.name == "numpy":
            return np.empty(-(-nbytes // like[0].dtype.itemsize), like[0].dtype)  # (host)
        try:  # an array of the inputs' library and device, where they are arrays
            template = like[0]
            size = -(-nbytes // backend.describe(template).itemsize)
            return backend.new_like(template, (size,))
        except Exception:  # noqa: BLE001 - raw buffers have no library to follow: upload
            return backend.upload(np.zeros(nbytes, np.uint8))

    def execute(self, inputs: Sequence[Any], outputs: Sequence[Any], stream: Any = None) -> None:
        """Run every pass (each checked as `CompiledOperator.execute` checks its bindings)."""
        mids = self._intermediates(inputs)
        ins = [*inputs, *mids]
        for op, mid in zip(self.passes, mids, strict=False):
            op.execute(ins, [mid], stream)
        self.passes[-1].execute(ins, outputs, stream)

    def _run_fresh(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> None:
        mids = self._intermediates(inputs, own=True)
        ins = [*inputs, *mids]
        for op, mid in zip(self.passes, mids, strict=False):
            op._run_fresh(ins, [mid])
        self.passes[-1]._run_fresh(ins, outputs)

    def bind(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> _Passes:
        """Every pass bound: `dispatch()` runs them in order."""
        mids = self._intermediates(inputs)
        ins = [*inputs, *mids]
        tables = [op.bind(ins, [mid]) for op, mid in zip(self.passes, mids, strict=False)]
        return _Passes([*tables, self.passes[-1].bind(ins, outputs)])


class _Passes:
    """The binding tables of a CompiledGraph's passes, dispatched in order."""

    def __init__(self, tables: list[BindingTable]) -> None:
        self.tables = tables

    def dispatch(self, stream: Any = None) -> None:
        """Run every pass on the bound buffers, in order."""
        for t in self.tables:
            t.dispatch(stream)
