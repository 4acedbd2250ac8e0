"""`InferenceSession`: an ONNX model loaded once and run the way onnxruntime runs it, with
one compiled graph per input signature."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _forking
from .._files import DEFAULT_MAX_FILE_BYTES
from ..device import Device
from ..errors import BindingError, ModelError
from ..tensor import FeatureLevel
from .compiled import CompiledModel
from .dynamic import DynamicModel, compile_dynamic
from .host import host_array
from .loading import load
from .lowering import _PARAMETERS
from .params import is_integer_type
from .staged import StagedModel

Compiled = CompiledModel | StagedModel | DynamicModel

__all__ = ["InferenceSession", "NodeArg", "IOBinding"]

COMPILED_SIGNATURES = 32
SMALL_INTEGER_INPUT = 64  # integer inputs up to this many elements may be parameters

# TensorProto.DataType -> onnxruntime's type strings
_TYPE_NAMES = {
    1: "float",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    8: "string",
    9: "bool",
    10: "float16",
    11: "double",
    12: "uint32",
    13: "uint64",
    14: "complex64",
    15: "complex128",
    16: "bfloat16",
}


@dataclass(frozen=True)
class NodeArg:
    """A model input or output as onnxruntime describes it: name, shape (ints for known
    dimensions, the dimension's name for symbolic ones, None where neither is given) and
    type ('tensor(float)', ...)."""

    name: str
    shape: list[int | str | None]
    type: str


def _node_arg(value_info: Any) -> NodeArg:
    tensor = value_info.type.tensor_type
    shape: list[int | str | None] = []
    for d in tensor.shape.dim:
        if d.HasField("dim_value"):
            shape.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            shape.append(str(d.dim_param))
        else:
            shape.append(None)
    return NodeArg(
        value_info.name, shape, f"tensor({_TYPE_NAMES.get(tensor.elem_type, 'undefined')})"
    )


class InferenceSession:
    """An ONNX model of data-movement nodes, loaded and checked once, run as one compiled
    dmlops graph per input signature (shapes, dtypes and the values of small integer
    inputs, which may be Slice or Reshape parameters), kept in a bounded cache.

    `model` is a ModelProto, its bytes, or the path of a regular file of at most
    max_file_bytes; `device` a dmlops Device (default: numpy backend, newest level)."""

    def __init__(
        self,
        model: Any,
        device: Device | None = None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    ) -> None:
        self._model = load(model, max_file_bytes)
        self.model = self._model  # the ModelProto
        self.device = device or Device(FeatureLevel.newest())
        graph = self._model.graph
        initialized = {i.name for i in graph.initializer}
        for v in (*graph.input, *graph.output):
            if not isinstance(v.name, str):
                raise ModelError(
                    f"ONNX model: a graph input or output name is not text: {v.name!r}"
                )
        self._inputs = [_node_arg(v) for v in graph.input if v.name not in initialized]
        self._outputs = [_node_arg(v) for v in _inferred_outputs(self._model)]
        self._input_names = [i.name for i in self._inputs]
        self._input_set = frozenset(self._input_names)
        self._parameter_inputs = parameter_inputs(self._model)
        self._output_index = {o.name: k for k, o in enumerate(self._outputs)}
        self._compiled: OrderedDict[Hashable, CompiledModel | StagedModel | DynamicModel] = (
            OrderedDict()
        )
        self._lock = _forking.lock()

    def get_inputs(self) -> list[NodeArg]:
        """The model's inputs (initializers excluded), in the graph's order."""
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        """The model's outputs, in the graph's order."""
        return list(self._outputs)

    def get_modelmeta(self) -> Any:
        """The model's producer, domain, version and graph name, as a simple namespace."""
        from types import SimpleNamespace

        m = self._model
        return SimpleNamespace(
            producer_name=m.producer_name,
            graph_name=m.graph.name,
            domain=m.domain,
            version=m.model_version,
            description=m.doc_string,
            custom_metadata_map={p.key: p.value for p in m.metadata_props},
        )

    # -- running --------------------------------------------------------------------

    def run(
        self,
        output_names: Sequence[str] | None,
        input_feed: Mapping[str, Any],
        run_options: Any = None,
    ) -> list[Any]:
        """The outputs named (None: all, in the graph's order) for these inputs."""
        wanted = None if output_names is None else self._wanted(output_names)
        compiled, values = self.compiled_for(input_feed)
        results = compiled.run(values)
        return results if wanted is None else [results[k] for k in wanted]

    def compiled_for(self, input_feed: Mapping[str, Any]) -> tuple[Compiled, dict[str, Any]]:
        """The compiled graph of these inputs' signature (compiled if new) and the inputs as
        the device's contiguous arrays."""
        values = self._placed(input_feed)
        key = self._signature(values)
        compiled = self._compiled.get(key)  # a dict read is atomic; writes take the lock
        if compiled is None:
            compiled = compile_dynamic(self._model, values, self.device)
            with self._lock:
                self._compiled[key] = compiled
                while len(self._compiled) > COMPILED_SIGNATURES:
                    self._compiled.popitem(last=False)
        return compiled, values

    def io_binding(self) -> IOBinding:
        """A binding of inputs and (optionally caller-given) output arrays."""
        return IOBinding(self)

    def run_with_iobinding(self, binding: IOBinding, run_options: Any = None) -> None:
        """Run with the binding's inputs, writing into its bound output arrays (and new
        arrays for outputs bound by name only)."""
        if binding.session is not self:
            raise ModelError("this IOBinding belongs to another session")
        compiled, values = self.compiled_for(binding.inputs)
        given = {self._output_index[n]: a for n, a in binding.outputs.items() if a is not None}
        results = compiled.run(values, given)
        names = binding.outputs or {o.name: None for o in self._outputs}
        binding.results = [results[self._output_index[n]] for n in names]

    # -- helpers --------------------------------------------------------------------

    def _wanted(self, output_names: Sequence[str] | None) -> list[int]:
        if output_names is None:
            return list(range(len(self._outputs)))
        try:
            return [self._output_index[n] for n in output_names]
        except KeyError as e:
            raise ModelError(f"ONNX model has no output named {e.args[0]!r}") from None

    def _placed(self, feed: Mapping[str, Any]) -> dict[str, Any]:
        if type(feed) is not dict and not isinstance(feed, Mapping):
            raise ModelError("input_feed must map input names to arrays")
        if not self._input_set.issuperset(feed):
            unknown = [n for n in feed if n not in self._input_set]
            raise ModelError(
                f"ONNX model has no input named {unknown[0]!r} (inputs: "
                f"{', '.join(self._input_names)})"
            )
        place = self.device.backend
        values = {}
        for name in self._input_names:
            if name not in feed:
                raise ModelError(f"ONNX model input '{name}' was not given")
            values[name] = _placed(place, feed[name])
        return values

    def _signature(self, values: Mapping[str, Any]) -> Hashable:
        parts: list[Any] = []
        for name, v in values.items():  # the names are the model's, in its order
            shape = tuple(v.shape)
            dtype = v.dtype
            parts.append(shape)
            parts.append(dtype)
            if (
                name in self._parameter_inputs
                and math.prod(shape) <= SMALL_INTEGER_INPUT
                and is_integer_type(dtype)
            ):
                parts.append(tuple(host_array(v).ravel().tolist()))
        return tuple(parts)


def parameter_inputs(model: Any) -> set[str]:
    """The model inputs whose values shape the compiled model: those that reach a parameter
    position (a Slice's starts, a Reshape's shape, OneHot's depth, ...) through any nodes.
    Others (data, run-time indices) are keyed by shape and dtype only."""
    needed = {
        n.input[k]
        for n in model.graph.node
        for k in _PARAMETERS.get(n.op_type, ())
        if k < len(n.input) and n.input[k]
    }
    for node in reversed(model.graph.node):
        if any(o in needed for o in node.output):
            needed.update(i for i in node.input if i)
    return needed & {i.name for i in model.graph.input}


class IOBinding:
    """Inputs and outputs bound to a session, as onnxruntime's IOBinding: bind arrays (numpy,
    CuPy, torch: the device's kind), run with `session.run_with_iobinding`, read the outputs.
    An output bound to an array is written in place (it must be C-contiguous and of the
    output's shape and dtype); one bound by name only gets a new array."""

    def __init__(self, session: InferenceSession) -> None:
        self.session = session
        self.inputs: dict[str, Any] = {}
        self.outputs: dict[str, Any] = {}
        self.results: list[Any] = []

    def bind_input(self, name: str, array: Any) -> None:
        """Bind an input array."""
        self.inputs[name] = array

    def bind_output(self, name: str, array: Any = None) -> None:
        """Bind an output by name, into `array` if one is given."""
        self.session._wanted([name])
        self.outputs[name] = array

    def clear_binding_inputs(self) -> None:
        """Forget the bound inputs."""
        self.inputs.clear()

    def clear_binding_outputs(self) -> None:
        """Forget the bound outputs."""
        self.outputs.clear()

    def get_outputs(self) -> list[Any]:
        """The outputs of the last run, in the order they were bound (all, if none was)."""
        return list(self.results)

    def copy_outputs_to_cpu(self) -> list[np.ndarray[Any, Any]]:
        """The outputs of the last run as numpy arrays."""
        return [host_array(r) for r in self.results]


def _inferred_outputs(model: Any) -> Any:
    """The graph's outputs with each dimension that ONNX shape inference finds a number for
    filled in (as onnxruntime reports them); the declared outputs where inference fails."""
    import onnx

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for o in probe.graph.output:  # forget the declared shapes, so inference states its own
        o.type.tensor_type.ClearField("shape")
    try:
        found = onnx.shape_inference.infer_shapes(probe).graph.output
        inferred = {o.name: o for o in found}
    except Exception:  # noqa: BLE001 - inference may fail on any odd model: keep what it says
        return model.graph.output
    outputs = []
    for declared in model.graph.output:
        merged = onnx.ValueInfoProto()
        merged.CopyFrom(declared)
        found = inferred.get(declared.name)
        dims = merged.type.tensor_type.shape.dim
        if found is not None and found.type.tensor_type.HasField("shape"):
            known = found.type.tensor_type.shape.dim
            if not merged.type.tensor_type.HasField("shape"):
                merged.type.tensor_type.shape.CopyFrom(found.type.tensor_type.shape)
            elif len(known) == len(dims):
                for mine, theirs in zip(dims, known, strict=True):
                    if theirs.HasField("dim_value"):
                        mine.dim_value = theirs.dim_value
        outputs.append(merged)
    return outputs


def _native(host: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A host array in the machine's byte order (the same values)."""
    return host if host.dtype.isnative else host.astype(host.dtype.newbyteorder("="))


def _placed(backend: Any, a: Any) -> Any:
    """The array on the device, contiguous and in the machine's byte order (a graph binds
    whole buffers and moves bytes; its outputs are in the machine's order)."""
    if (
        type(a) is np.ndarray
        and backend.name == "numpy"
        and a.flags.c_contiguous
        and a.dtype.isnative
    ):
        return a  # the commonest feed, as it is
    if isinstance(a, (np.ndarray, np.generic, int, float, list, tuple)):  # host values
        host = _native(np.asarray(a))
        host = host if host.flags.c_contiguous else host.copy()  # (0-D arrays stay 0-D)
        return host if backend.name == "numpy" else backend.upload(host)
    if backend.name == "numpy":
        try:
            arr = _native(backend.as_array(a))
        except (TypeError, ValueError, RuntimeError):
            raise BindingError(
                f"an input of type {type(a).__name__} is not host memory, and the session runs "
                "on the CPU: give the session a Device of the arrays' backend"
            ) from None
        return arr if arr.flags.c_contiguous else arr.copy()
    contiguous = getattr(a, "is_contiguous", None)  # torch
    if contiguous is not None:
        return a if contiguous() else a.contiguous()
    arr = backend.as_array(a)
    return arr if arr.flags.c_contiguous else backend.copy_of(arr)
