"""The answers a model's outputs from dmlops are held to: onnxruntime's, and where the
installed onnxruntime fails on a model or differs from dmlops, onnx's own reference evaluator
(the operators' executable specification) where it equals dmlops' bits. onnxruntime 1.23, the
newest for Python 3.10, reverses a sequence of length 0 into zeros and cannot load a Range
whose output is also a graph output; 1.32 and the reference evaluator do neither."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnxruntime as ort

from conftest import for_onnxruntime

# onnxruntime before 1.30 (1.23 is the newest for Python 3.10) runs some inputs it should
# refuse (reflect pads as long as their axis) and reads elements from outside the input where
# pads crop an axis to nothing and pad it again, and cannot load a model whose Range output is
# both read by a node and a graph output; 1.30 and 1.32 do none of these
OLD_ONNXRUNTIME = tuple(int(p) for p in ort.__version__.split(".")[:2]) < (1, 30)


def bits(a: Any) -> tuple[str, tuple[int, ...], bytes]:
    """An array's element type, shape and bytes."""
    a = np.ascontiguousarray(a)
    return a.dtype.str, a.shape, a.tobytes()


def _same(got: Sequence[Any], want: Sequence[Any]) -> bool:
    return [bits(g) for g in got] == [bits(w) for w in want]


def onnxruntime_outputs(model: Any, feeds: dict[str, Any]) -> list[Any]:
    """onnxruntime's outputs of `model` (CPU)."""
    session = ort.InferenceSession(for_onnxruntime(model), providers=["CPUExecutionProvider"])
    return list(session.run(None, feeds))


def held_to(
    model: Any, feeds: dict[str, Any], got: Sequence[Any], want: list[Any] | None = None
) -> list[Any]:
    """What `got` (dmlops' host outputs) must equal bit for bit: onnxruntime's outputs
    (`want`, where already run), else, where onnxruntime fails or differs and onnx's
    reference evaluator gives `got`'s bits, the reference's."""
    failure: Exception | None = None
    if want is None:
        try:
            want = onnxruntime_outputs(model, feeds)
        except Exception as error:  # noqa: BLE001 - onnxruntime's own failure types
            failure = error
    if want is not None and _same(got, want):
        return want
    try:
        from onnx.reference import ReferenceEvaluator

        reference = [np.asarray(r) for r in ReferenceEvaluator(model).run(None, feeds)]
    except Exception:  # noqa: BLE001 - an operator or type the evaluator lacks
        reference = None
    if reference is not None and _same(got, reference):
        return reference
    if want is None:
        assert failure is not None
        raise failure
    return want
