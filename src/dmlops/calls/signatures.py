"""A call's signature: the operator, its fields (pickled, so 1.0 never finds the call of
1), the feature level and each array's key (type, dtype, shape, strides; a backend's own
key function for its arrays, many arrays keyed at once)."""

from __future__ import annotations

import operator
import pickle
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from ..backends.library_keys import numpy_key, subclass_key


def _key_function(kind: type) -> Callable[[Any], Hashable] | None:
    """The key function of arrays of this type: a backend's, else, for a subclass of
    numpy's array or torch's tensor (`np.memmap`, `nn.Parameter`), the subclass with its
    base's key (a numpy subclass bound as a plain view each call)."""
    found = _ARRAY_KEYS.get(kind)
    return found if found is not None else subclass_key(kind)


_ARRAY_KEYS: dict[type, Callable[[Any], Hashable]] = {np.ndarray: numpy_key}
# for many arrays of one type, a function giving all their keys at once (each as the type's
# own key function gives it), or None where one has none
_MANY = 8  # arrays in a call from which their keys are read at once
_NUMPY_KEY = operator.attrgetter("dtype", "shape", "strides")  # a numpy array's key
try:  # (the keys of many numpy arrays read in C, where that extension was built)
    from ..backends._numpy_api import arrays_key as _arrays_key  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - (built without numpy's headers or a compiler)
    _arrays_key = None
NUMPY_ARRAYS = "numpy arrays, packed"  # the tag of many numpy arrays' key read in C


def numpy_keys(arrays: Sequence[Any]) -> list[Hashable]:
    """The keys of many numpy arrays: one packed record of their types, sizes and strides
    read in C (`backends/numpy_api/arrays.c`; 17 µs for 1,024 arrays, where three attribute
    reads an array and the tuples' hash took about 190), else each array's (dtype, shape,
    strides)."""
    if _arrays_key is not None:
        packed = _arrays_key(arrays)
        if packed is not None:
            return [(NUMPY_ARRAYS, packed)]
    return list(map(_NUMPY_KEY, arrays))  # (one C call an array)


_MANY_KEYS: dict[type, Callable[[Sequence[Any]], list[Hashable] | None]] = {np.ndarray: numpy_keys}


_UNKEYABLE = object()


def _no_key(*fields: Any) -> None:
    return None


def _keyer() -> Callable[..., bytes | None]:
    """The CPU engine's `fields_key` (a C walk of plain values: 0.14 µs against pickle's 0.34
    for SLICE1's three lists), where the engine is built and enabled; else no key (pickle)."""
    from ..backends import cpu_engine

    module = cpu_engine.native() if cpu_engine.available() else None
    found = getattr(module, "fields_key", None)
    return found if found is not None else _no_key


_KEYER: list[Callable[..., bytes | None] | None] = [None]  # (chosen at the first key)


def _fields_key(*fields: Any) -> Hashable:
    """An operator's fields as one key: their values with their types (the CPU engine's
    `fields_key` for plain values, else pickled), so that 1.0 or True never finds the call
    compiled for 1 and skips the check that refuses it."""
    made = _KEYER[0]
    if made is None:
        made = _KEYER[0] = _keyer()
    key = made(*fields)
    if key is not None:
        return key
    try:
        return pickle.dumps(fields, pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError, ValueError, RecursionError):
        # an argument that does not pickle: always compiled
        return _UNKEYABLE


def _signature(
    op: str, fields: Hashable, level: Any, ins: Sequence[Any], outs: Sequence[Any]
) -> Hashable | None:
    """The call's cache key, or None where an argument cannot be keyed (always compiled)."""
    if fields is _UNKEYABLE:
        return None
    if level is not None:
        try:
            hash(level)
        except TypeError:
            return None
    if len(ins) == 1 and len(outs) == 1 and outs[0] is None and type(ins[0]) is np.ndarray:
        a = ins[0]
        return op, fields, level, (a.dtype, a.shape, a.strides), None
    parts: list[Hashable] = [op, fields, level]
    if not _keyed_inputs(parts, ins):
        return None
    for o in outs:
        key = None if o is None else _output_key(o)
        if key is None and o is not None:
            return None
        parts.append(key)
    return tuple(parts)


def _keyed_inputs(parts: list[Hashable], ins: Sequence[Any]) -> bool:
    """Each input array's key appended to `parts` (numpy's inline: many-array calls key
    each array); False where one has none (no key function, or one that declines: a JAX
    array sharded over devices)."""
    if len(ins) >= _MANY:
        kinds = set(map(type, ins))
        many = _MANY_KEYS.get(kinds.pop()) if len(kinds) == 1 else None
        if many is not None:
            found = many(ins)
            if found is None:
                return False
            parts.extend(found)
            return True
    ndarray = np.ndarray
    append = parts.append
    keys = _ARRAY_KEYS
    for a in ins:
        if type(a) is ndarray:
            append((a.dtype, a.shape, a.strides))
            continue
        f = keys.get(type(a)) or subclass_key(type(a))
        key = None if f is None else f(a)
        if key is None:
            return False
        append(key)
    return True


def _output_key(o: Any) -> Hashable | None:
    """A given output's key (a numpy one's writability included), or None."""
    f = _key_function(type(o))
    return None if f is None else f(o)
