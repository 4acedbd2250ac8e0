"""The dmlops exception family."""

from __future__ import annotations

__all__ = [
    "BindingError",
    "DmlError",
    "IndexOutOfRangeError",
    "InvalidDescriptorError",
    "ModelError",
    "UnsupportedFeatureLevelError",
]


class DmlError(ValueError):
    """Root of every error dmlops raises for a bad descriptor, binding or model."""


class InvalidDescriptorError(DmlError):
    """An operator or tensor descriptor breaks one of DirectML's rules."""


class UnsupportedFeatureLevelError(DmlError):
    """The descriptor is well formed but not supported at the device's feature level."""


class BindingError(DmlError):
    """A buffer bound to an operator does not fit its tensor description."""


class ModelError(DmlError):
    """A model file (DxDispatch JSON, ONNX graph) cannot be read or run."""


class IndexOutOfRangeError(DmlError):
    """An index tensor holds a value outside the axis it indexes (raised before any write)."""
