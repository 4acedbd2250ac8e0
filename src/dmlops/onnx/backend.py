"""onnx's backend interface (`onnx.backend.base.Backend`) over dmlops' sessions, as
`onnxruntime.backend` offers one: `prepare`, `run_model`, `run_node`, `supports_device`,
`is_compatible`. With it `onnx.backend.test.BackendTest(dmlops.onnx.backend, __name__)`
runs onnx's own node and model tests against dmlops unchanged.

Devices: "CPU" (the numpy backend and dmlops' CPU engine) and "CUDA" (where a CUDA backend
loads); outputs come back as numpy arrays, as the interface wants. A model that holds a
node dmlops does not lower is refused by `prepare` with a `ModelError` naming the node;
`is_compatible` says so without raising.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..device import Device
from ..errors import DmlError, ModelError
from ..tensor import FeatureLevel
from .session import InferenceSession

__all__ = [
    "ModelError",
    "DmlopsBackend",
    "DmlopsRep",
    "is_compatible",
    "prepare",
    "run",
    "run_model",
    "run_node",
    "supports_device",
]


def _device(device: str) -> Device:
    kind = device.upper().partition(":")[0]
    if kind == "CPU":
        return Device(FeatureLevel.newest())
    if kind == "CUDA":
        return Device(FeatureLevel.newest(), backend="cuda")
    raise ModelError(f"dmlops.onnx.backend: device '{device}' is not CPU or CUDA")


def _host(value: Any) -> Any:
    """An output as a numpy array (CuPy and torch arrays copied to the host)."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "get") and type(value).__module__.startswith("cupy"):
        return value.get()
    if hasattr(value, "cpu") and hasattr(value, "numpy"):
        return value.cpu().numpy()
    return np.asarray(value)


class DmlopsRep:
    """A prepared model (onnx's `BackendRep`): `run(inputs)` with the inputs in the graph's
    order (or by name), the outputs as a tuple of numpy arrays in the graph's order."""

    def __init__(self, session: InferenceSession) -> None:
        self.session = session
        self.input_names = [i.name for i in session.get_inputs()]
        self.output_names = [o.name for o in session.get_outputs()]

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        """The model's outputs for `inputs` (a list in the graph's input order, one array
        for a one-input model, or a mapping by name)."""
        if isinstance(inputs, Mapping):
            feed = dict(inputs)
        else:
            values = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
            if len(values) != len(self.input_names):
                raise ModelError(
                    f"dmlops.onnx.backend: {len(values)} inputs for a model of "
                    f"{len(self.input_names)} ({', '.join(self.input_names)})"
                )
            feed = dict(zip(self.input_names, values, strict=True))
        return tuple(_host(v) for v in self.session.run(None, feed))


class DmlopsBackend:
    """onnx's `Backend` for dmlops (every method a classmethod, as onnx's base class has)."""

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """CPU always; CUDA where dmlops' CUDA backend loads (CuPy and a GPU)."""
        kind = device.upper().partition(":")[0]
        if kind == "CPU":
            return True
        if kind != "CUDA":
            return False
        try:
            _device(device)
        except (DmlError, ImportError, RuntimeError):
            return False
        return True

    @classmethod
    def prepare(cls, model: Any, device: str = "CPU", **kwargs: Any) -> DmlopsRep:
        """The model loaded into a session on `device` (nodes lowered at the first run)."""
        from .dynamic import DATA_SHAPED_OPS
        from .host import HOST_OPS
        from .lowering import GRAPH_OPS, INDEXED_OPS

        session = InferenceSession(model, device=_device(device))
        known = set(GRAPH_OPS) | set(INDEXED_OPS) | set(HOST_OPS) | set(DATA_SHAPED_OPS)
        for node in session.model.graph.node:
            if node.domain not in ("", "ai.onnx") or node.op_type not in known:
                raise ModelError(
                    f"dmlops.onnx.backend: node '{node.name or node.op_type}' "
                    f"({node.domain or 'ai.onnx'}::{node.op_type}) is not lowered by dmlops"
                )
        return DmlopsRep(session)

    @classmethod
    def is_compatible(cls, model: Any, device: str = "CPU", **kwargs: Any) -> bool:
        """Whether `prepare` takes the model on `device`."""
        try:
            cls.prepare(model, device, **kwargs)
        except (DmlError, OSError, ValueError):
            return False
        return True

    @classmethod
    def run_model(
        cls, model: Any, inputs: Any, device: str = "CPU", **kwargs: Any
    ) -> tuple[Any, ...]:
        """`prepare(model, device).run(inputs)`."""
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: Any,
        inputs: Sequence[Any],
        device: str = "CPU",
        outputs_info: Sequence[tuple[Any, tuple[int, ...]]] | None = None,
        **kwargs: Any,
    ) -> tuple[Any, ...]:
        """One node run on `inputs` (numpy arrays, in the node's input order): the node
        made into a model of the opset given as `opset_version` (default onnx's own)."""
        from onnx import helper

        names = [n for n in node.input if n]
        if len(names) != len(inputs):
            raise ModelError(
                f"dmlops.onnx.backend: {len(inputs)} inputs for a node of {len(names)}"
            )
        arrays = [np.asarray(a) for a in inputs]
        graph_inputs = [
            helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)
            )
            for name, a in zip(names, arrays, strict=True)
        ]
        outputs = [helper.make_empty_tensor_value_info(n) for n in node.output if n]
        graph = helper.make_graph([node], "node", graph_inputs, outputs)
        opset = kwargs.get("opset_version")
        imports = [helper.make_opsetid("", int(opset))] if opset else None
        model = helper.make_model(graph, opset_imports=imports)
        return cls.run_model(model, arrays, device)


prepare = DmlopsBackend.prepare
run_model = DmlopsBackend.run_model
run_node = DmlopsBackend.run_node
supports_device = DmlopsBackend.supports_device
is_compatible = DmlopsBackend.is_compatible
run = run_model
