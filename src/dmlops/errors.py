"""The dmlops exception family."""

from __future__ import annotations

__all__ = [
    "BindingError",
    "DmlError",
    "IndexOutOfRangeError",
    "InvalidDescriptorError",
    "ModelError",
    "UnsupportedFeatureLevelError",
    "seen_by_tracer",
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


def seen_by_tracer(error: DmlError) -> DmlError:
    """`error` as raised while torch.compile traces a call: the same error, of a subclass
    of its own class and of AssertionError (dynamo hands an AssertionError to the caller
    as it is, and wraps any other in an InternalTorchDynamoError, which no `except DmlError`
    catches). The subclass is `Traced<ClassName>` in this module."""
    cls = type(error)
    name = f"Traced{cls.__name__}"
    traced = globals().get(name)
    if traced is None:
        doc = f"A {cls.__name__} raised while torch.compile traces a call."
        traced = type(name, (cls, AssertionError), {"__module__": __name__, "__doc__": doc})
        globals()[name] = traced
    seen: DmlError = traced(*error.args)
    seen.__dict__.update(error.__dict__)
    return seen


def a_type(name: str) -> str:
    """A type's name after its article ("an INT8", "a UINT8", "a FLOAT16"), for messages."""
    return f"{'an' if name[:1] in 'AEIOaeio' else 'a'} {name}"
