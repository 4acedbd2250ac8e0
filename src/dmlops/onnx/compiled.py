"""A compiled ONNX model at run time: its one plan, the arrays it is fed (constants placed on
the device once) and its outputs (new, into the caller's arrays, constants or empty)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..device import CompiledOperator, Device
from ..elements import element_of, numpy_dtype, unsigned_dtype
from ..errors import ModelError

__all__ = ["CompiledModel", "Feeds", "array_dtype", "new_array"]


def array_dtype(a: Any) -> np.dtype[Any]:
    """An array's element type as a numpy dtype (numpy, CuPy or torch; bfloat16 and float8
    through ml_dtypes; a type numpy has no dtype for as unsigned words of its size)."""
    element = element_of(a.dtype)
    found = numpy_dtype(element)
    return found if found is not None else unsigned_dtype(min(element.size, 8))


class CompiledModel:
    """A model compiled for given input shapes: `run(inputs)` executes it in one plan."""

    def __init__(
        self,
        operator: CompiledOperator | None,
        data_inputs: list[str],
        outputs: list[tuple[str, Any]],
        device: Device,
        constant_inputs: Mapping[str, np.ndarray[Any, Any]] | None = None,
        scalar_inputs: Sequence[str] = (),
    ) -> None:
        self.operator = operator
        self.data_inputs = data_inputs
        # (name, ("graph", k, shape, dtype) | ("const", value) | ("empty", shape, dtype))
        self.outputs = outputs
        self.device = device
        self._feeds = Feeds(device, data_inputs, constant_inputs or {}, scalar_inputs)
        # (output index, shape, dtype) of each output the plan writes, in the plan's order
        self._written = [
            (k, spec[2], spec[3]) for k, (_, spec) in enumerate(outputs) if spec[0] == "graph"
        ]
        # every output written by the plan, on the host: a run is its inputs, new outputs
        # and the plan (the commonest call, in few steps)
        self._host_only = (
            operator is not None
            and device.backend.name == "numpy"
            and len(self._written) == len(outputs)
        )

    @property
    def plan(self) -> Any:
        """The compiled plan (None when every output is empty)."""
        return None if self.operator is None else self.operator.plan

    def run(self, values: Mapping[str, Any], into: Mapping[int, Any] | None = None) -> list[Any]:
        """Outputs for these input arrays (on the device's backend); output k is written into
        `into[k]` where given (C-contiguous, of the output's shape and dtype)."""
        if not into and self._host_only:
            assert self.operator is not None
            made = [np.empty(shape, dtype) for _, shape, dtype in self._written]
            self.operator._run_fresh(self._feeds.arrays(values), made)
            return made
        backend = self.device.backend
        given = {k: self._checked_output(k, array) for k, array in (into or {}).items()}
        # an array in the other byte order takes its output by value, after the run
        by_value = {k: a for k, a in given.items() if not getattr(a.dtype, "isnative", True)}
        arrays: dict[int, Any] = {}
        if self.operator is not None:
            ins = self._feeds.arrays(values)
            host = backend.name == "numpy"  # new host arrays are bound whole, as they are
            for k, shape, dtype in self._written:
                if k in given and k not in by_value:
                    arrays[k] = given[k]
                elif host:
                    arrays[k] = np.empty(shape, dtype)
                else:
                    arrays[k] = new_array(backend, ins, shape, dtype)
            flats = list(arrays.values()) if host else [_flat(a) for a in arrays.values()]
            if given:  # the caller's arrays: checked above, and apart from the inputs
                _check_apart(backend, ins, list(given.values()))
            # inputs placed whole and contiguous, outputs made for the graph or checked
            self.operator._run_fresh(ins, flats)
            for k, target in by_value.items():
                target[...] = arrays[k]
                arrays[k] = target
        if len(arrays) == len(self.outputs):
            return list(arrays.values())
        result = []
        for k, (_, spec) in enumerate(self.outputs):
            if spec[0] == "graph":
                result.append(arrays[k])
            elif k in given:  # a constant or empty output written into the caller's array
                if spec[0] == "const":
                    given[k][...] = _constant(self.device, spec[1])
                result.append(given[k])
            elif spec[0] == "const":
                result.append(_constant(self.device, spec[1]))
            else:
                result.append(_empty(self.device, spec[1], spec[2]))
        return result

    def output_type(self, k: int) -> tuple[tuple[int, ...], np.dtype[Any]]:
        """The shape and dtype output k has for this compiled signature."""
        spec = self.outputs[k][1]
        if spec[0] == "graph":
            return spec[2], spec[3]
        if spec[0] == "const":
            return tuple(np.shape(spec[1])), np.asarray(spec[1]).dtype
        return tuple(spec[1]), np.dtype(spec[2])

    def _checked_output(self, k: int, array: Any) -> Any:
        """A caller's output array, if it can take output k in place."""
        name = self.outputs[k][0]
        view = self.device.backend.describe(array)
        shape, dtype = self.output_type(k)
        if tuple(view.shape) != shape or array_dtype(view) != dtype:
            raise ModelError(
                f"output '{name}' is {list(shape)} {dtype}: the bound array is "
                f"{list(view.shape)} {np.dtype(view.dtype)}"
            )
        if not view.flags.c_contiguous:
            raise ModelError(f"output '{name}': a bound output array must be C-contiguous")
        return array


def _flat(a: Any) -> Any:
    return a.reshape(-1)


def _check_apart(backend: Any, ins: Sequence[Any], outs: Sequence[Any]) -> None:
    """ModelError where a caller's output array shares memory with an input."""
    spans = []
    for a in ins:
        flat, length = backend.byte_view(a, False)
        start = backend.address(flat)
        spans.append((start, start + length))
    for o in outs:
        flat, length = backend.byte_view(o, True)
        start = backend.address(flat)
        if any(start < end and lo < start + length for lo, end in spans):
            raise ModelError("a bound output array shares memory with an input")


class Feeds:
    """A compiled graph's input arrays for one run: the model's arrays (0-D ones as their
    1-element view) and the constants it reads as data, placed on the device once."""

    def __init__(
        self,
        device: Device,
        names: Sequence[str],
        constants: Mapping[str, np.ndarray[Any, Any]],
        scalars: Sequence[str],
    ) -> None:
        self.device = device
        self.names = list(names)
        self.constants = dict(constants)
        self.scalars = set(scalars)
        self._placed: dict[tuple[str, str], Any] = {}
        # on the host each constant is read as it is (its flat view, made once)
        self._host_constants = (
            {n: c.reshape(-1) for n, c in self.constants.items()}
            if device.backend.name == "numpy"
            else None
        )

    def arrays(self, values: Mapping[str, Any]) -> list[Any]:
        """The graph's inputs in order, for these run-time values."""
        if not self.constants and not self.scalars:
            return [values[n] for n in self.names]
        host = self._host_constants
        if host is not None and not self.scalars:
            return [host[n] if n in host else values[n] for n in self.names]
        given = next((values[n] for n in self.names if n in values), None)
        out = []
        for n in self.names:
            if n in self.constants:
                out.append(self._constant(n, given))
            else:
                out.append(values[n].reshape(1) if n in self.scalars else values[n])
        return out

    def _constant(self, name: str, template: Any) -> Any:
        backend = self.device.backend
        host = self.constants[name]
        if backend.name == "numpy":
            return host.reshape(-1)
        where = str(getattr(template, "device", ""))
        key = (name, where)
        placed = self._placed.get(key)
        if placed is None:
            placed = backend.upload(np.ascontiguousarray(host.reshape(-1)))
            self._placed[key] = placed
        return placed


def new_array(backend: Any, ins: Sequence[Any], shape: tuple[int, ...], dtype: Any) -> Any:
    """A new array of `shape` and `dtype` beside the inputs `ins` (in the library and on the
    device of the first input of that type)."""
    wanted = np.dtype(dtype)
    for a in ins:
        if array_dtype(a) == wanted:
            return backend.new_like(a, shape)
    return backend.new_like(ins[0], shape, wanted)


def _empty(device: Device, shape: tuple[int, ...], dtype: Any) -> Any:
    if device.backend.name == "cuda":
        import cupy

        return cupy.empty(shape, dtype=dtype)
    return np.empty(shape, dtype=dtype)


def _constant(device: Device, value: np.ndarray[Any, Any]) -> Any:
    if device.backend.name == "cuda":
        import cupy

        return cupy.asarray(value)
    return value.copy()
