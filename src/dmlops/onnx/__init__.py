"""ONNX models of data-movement nodes as one compiled dmlops graph.

`InferenceSession` runs a model the way onnxruntime does (a session, `get_inputs`,
`get_outputs`, `run`, IOBinding); `run` is a one-shot helper over a cache of sessions
keyed by the model's content; `compile` gives the compiled graph for given inputs.
Slice, Split, Concat, Identity, Transpose, Reshape, Squeeze, Unsqueeze, Flatten,
DepthToSpace, SpaceToDepth (and constants and integer shape arithmetic, folded when the
model is compiled) are lowered onto SLICE1, SPLIT, JOIN, DEPTH_TO_SPACE1, SPACE_TO_DEPTH1
and Reinterpret nodes. ONNX allows empty results where DirectML forbids size 0; such
outputs are produced empty without a dispatch, as a DirectML backend must.

The package: `loading` (reading models), `params` (ONNX parameters as DirectML fields),
`indexed` (the indexed operators as calls of the array layer),
`lowering` (a model onto a Graph), `session` (InferenceSession); none imports this module.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import _forking
from .._files import DEFAULT_MAX_FILE_BYTES, read_bounded
from ..calls import backend_of
from ..device import Device
from ..errors import ModelError
from ..tensor import FeatureLevel
from .compiled import CompiledModel
from .dynamic import DynamicModel
from .loading import load
from .lowering import GRAPH_OPS, INDEXED_OPS
from .params import slice_window, split_sizes
from .session import InferenceSession, IOBinding, NodeArg
from .staged import StagedModel

__all__ = [
    "InferenceSession",
    "StagedModel",
    "DynamicModel",
    "IOBinding",
    "NodeArg",
    "run",
    "compile",
    "load",
    "slice_window",
    "split_sizes",
    "SUPPORTED_OPS",
]

SUPPORTED_OPS: tuple[str, ...] = tuple(dict.fromkeys(GRAPH_OPS + INDEXED_OPS))
"""The ONNX operators dmlops runs as data movement: those it lowers into one plan
(Slice, Split, Concat, Transpose, Reshape, Pad, Tile, Expand, DepthToSpace, ...) and the
indexed ones (Gather, GatherElements, GatherND, Scatter, ScatterElements, ScatterND, OneHot,
ReverseSequence). Integer shape arithmetic on constants (Shape, Add, Cast, Where, ...) is
evaluated when a model is compiled and is not listed."""

SESSIONS = 16
_SESSIONS: OrderedDict[Hashable, InferenceSession] = OrderedDict()
_LOCK = _forking.lock()


def _session(model: Any, device: Device | None, max_file_bytes: int) -> InferenceSession:
    """The cached session of this model's content on this kind of device."""
    device = device or Device(FeatureLevel.newest())
    where = (device.backend.name, device.feature_level)
    source = model  # a path stays the source, so that errors name the file
    if isinstance(model, (str, Path)):
        model = read_bounded(model, max_file_bytes)
    if isinstance(model, (bytes, bytearray, memoryview)):
        content: Hashable = hashlib.sha256(model).hexdigest()
        if not isinstance(source, (str, Path)):
            source = bytes(model)
    else:
        proto = load(model, max_file_bytes)
        content = ("proto", id(proto))  # the same object; checked below, it is kept alive
        model = source = proto
    key = (content, where)
    with _LOCK:
        session = _SESSIONS.get(key)
        if session is not None and (isinstance(content, str) or session.model is model):
            _SESSIONS.move_to_end(key)
            return session
    session = InferenceSession(source, device, max_file_bytes)
    with _LOCK:
        _SESSIONS[key] = session
        while len(_SESSIONS) > SESSIONS:
            _SESSIONS.popitem(last=False)
    return session


def _feed(
    session: InferenceSession, inputs: Mapping[str, Any] | Sequence[Any]
) -> Mapping[str, Any]:
    if isinstance(inputs, Mapping):
        return inputs
    names = [i.name for i in session.get_inputs()]
    if len(inputs) != len(names):
        raise ModelError(f"ONNX model takes {len(names)} inputs, {len(inputs)} given")
    return dict(zip(names, inputs, strict=True))


def run(
    model: Any,
    inputs: Mapping[str, Any] | Sequence[Any],
    device: Device | None = None,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> list[Any]:
    """Run an ONNX model once: its outputs for these inputs (a mapping by name, or a list
    in the graph's order). Sessions are cached by the model's content (or the ModelProto
    object) and the device's backend and feature level; without a device the model runs
    where its input arrays are (CuPy or torch CUDA arrays: on their GPU).

    `model` is a ModelProto, its bytes, or the path of a regular file of at most
    max_file_bytes."""
    if device is None:  # where the arrays are, as an array-layer call runs
        given = list(inputs.values()) if isinstance(inputs, Mapping) else list(inputs)
        arrays = [a for a in given if hasattr(a, "shape") and not isinstance(a, np.generic)]
        device = Device(backend=backend_of(arrays).name)
    session = _session(model, device, max_file_bytes)
    return session.run(None, _feed(session, inputs))


def compile(  # noqa: A001 - the ONNX verb
    model: Any,
    inputs: Mapping[str, Any] | Sequence[Any],
    device: Device | None = None,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> CompiledModel | StagedModel | DynamicModel:
    """The model lowered into one dmlops Graph for these inputs' shapes (see `lowering`), or
    into steps where its data flow needs values at run time (see `staged`)."""
    session = _session(model, device, max_file_bytes)
    return session.compiled_for(_feed(session, inputs))[0]
