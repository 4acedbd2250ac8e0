"""Reading ONNX models: from a ModelProto, bytes or a bounded regular file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._files import DEFAULT_MAX_FILE_BYTES, read_bounded
from ..errors import ModelError

__all__ = ["load"]


def load(model: Any, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Any:
    """A ModelProto from a ModelProto, bytes or a path; any unreadable input is a ModelError."""
    import onnx

    if isinstance(model, (str, Path)):
        data = read_bounded(model, max_file_bytes)
        where = f"{model}: "
    elif isinstance(model, (bytes, bytearray, memoryview)):
        data, where = bytes(model), ""
    elif isinstance(model, onnx.ModelProto):
        return model
    else:
        raise ModelError(f"ONNX model: expected a ModelProto, bytes or a path, not {type(model)}")
    try:
        return onnx.load_from_string(data)
    except Exception as e:  # noqa: BLE001 - protobuf raises DecodeError, RuntimeError, ...
        raise ModelError(f"{where}not an ONNX model ({type(e).__name__}: {e})") from None
