"""Running a call: its signature looked up in the cache (a warm call straight from its raw
arguments, `_quick_run`), compiled on a miss, run on a named device, or as the backend's
own arrays where it has no signature; small helpers the operators' wrappers share."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from ..backends import Backend
from ..backends.library_keys import numpy_key
from ..elements import element_of, encode, numpy_dtype
from ..errors import InvalidDescriptorError
from .cache import _LRU, CACHE_SIZE
from .compiled import _MISS, _Call, _Converted
from .signatures import _MANY, _keyed_inputs, _output_key, _signature, numpy_keys
from .tensors import _on_device, backend_of

_CACHE: _LRU[_Call] = _LRU(CACHE_SIZE)
_PLAIN = (int, bool, str, type(None))


def clear_cache() -> None:
    """Forget every compiled call signature."""
    _CACHE.clear()


def cache_size() -> int:
    """How many call signatures are compiled and cached."""
    return len(_CACHE)


def _quick_run(
    tag: tuple[Any, ...], ins: list[Any], out: Any, device: str | None, validate: bool = False
) -> tuple[Hashable | None, Any]:
    """(a call's signature from its raw arguments, before any shape work, its result where
    that signature is compiled, else `_MISS`). The signature is `tag` (the operator and its
    other arguments) and each array's key (type, shape, strides; a GPU array's device);
    None where an argument is not a plain int, bool, str or None (1.0 must not find the
    call of 1) or an array has no key (lists, foreign arrays). `_MISS` also where the
    inputs must first be staged (nothing written). Neither where a device is named or an
    index check asked (the call's general path)."""
    if device is not None or validate:
        return None, _MISS
    for v in tag:
        if type(v) not in _PLAIN:
            return None, _MISS
    parts: list[Hashable] = [tag]
    if not _keyed_inputs(parts, ins):
        return None, _MISS
    if out is not None:
        if out is ins[0] and type(out) is not np.ndarray:  # (in place: its key is read)
            parts.append((parts[1], True))
        else:
            o_key = _output_key(out)
            if o_key is None:
                return None, _MISS
            parts.append((o_key, out is ins[0]))
    key = tuple(parts)
    entry = _CACHE.items.get(key)  # (the LRU's get, in this frame)
    if entry is None:
        return key, _MISS
    call: _Call = entry[0]
    if entry[1] != _CACHE.clock:
        _CACHE.get(key)  # refresh its place
    hot = call.hot
    if hot is not None:  # (a warm call on arrays whose addresses the backend reads at once)
        return key, hot(ins, out)
    warm_one = call.warm_one if out is None else None
    if call.fresh:
        produce = call.produce
        result = produce(ins) if produce is not None else call.fresh_results(ins)[0]
    elif warm_one is not None and (made := warm_one(ins)) is not _MISS:
        result = made  # (another library's arrays bound in one pass: CPU torch tensors)
    else:
        results = call(ins, [out], _restaged)
        if results is _MISS:
            return key, _MISS
        result = results[0]
    if out is not None:
        return key, out
    shape = call.result_shape
    if shape is None or tuple(result.shape) == shape:
        return key, result
    return key, result.reshape(shape)


def _warm(
    op: str,
    fields: Hashable,
    level: Any,
    ins: list[Any],
    outs: int = 1,
    listed: bool = False,
    out: Any = None,
) -> Any:
    """The results of a compiled call on numpy arrays into `outs` new outputs (their list
    where `listed` or `outs` is not 1, else the one array), or into `out`, its one given
    output, straight from its signature: no frames of the general path (`_dispatch`);
    `_MISS` where the signature is new or its call is not a fresh one (a selection of its
    inputs, a given output it cannot run into at once: the general path)."""
    if out is not None:
        return _warm_into(op, fields, level, ins, out)
    if len(ins) == 1 and outs == 1:  # (the commonest call: its key in one tuple)
        a = ins[0]
        if type(a) is not np.ndarray:
            result = _warm_keyed(op, fields, level, ins)
            return [result] if listed and result is not _MISS else result
        key: Hashable | None = (op, fields, level, (a.dtype, a.shape, a.strides), None)
    else:
        key = _numpy_signature(op, fields, level, ins, [None] * outs)
        if key is None and outs == 1 and not listed:  # (a join of CPU torch tensors)
            return _warm_keyed(op, fields, level, ins)
    entry = _numpy_entry(key)
    if entry is None:
        return _MISS
    call: _Call = entry[0]
    if call.fresh:
        produce = call.produce
        results = [produce(ins)] if produce is not None else call.fresh_results(ins)
    elif call.fresh_flats:
        results = call(ins, [None] * outs, _restaged)
    else:
        return _MISS
    if entry[1] != _CACHE.clock:
        _CACHE.get(key)  # refresh its place
    return results if listed or outs != 1 else results[0]


def _warm_keyed(op: str, fields: Hashable, level: Any, ins: list[Any]) -> Any:
    """`_warm` of a call of one new output on other libraries' arrays (CPU torch tensors):
    its compiled call's `warm_one`, else `_MISS` (a CUDA tensor at once: its call's hot
    closure runs from the general path's lookup, with no second key made)."""
    if getattr(ins[0], "is_cuda", False):
        return _MISS
    parts: list[Hashable] = [op, fields, level]
    keyed = _keyed_inputs(parts, ins)  # (each input's key appended, as the signature's)
    key = (*parts, None) if keyed else None
    entry = _numpy_entry(key)
    if entry is None or entry[0].warm_one is None:
        return _MISS
    result = entry[0].warm_one(ins)
    if result is not _MISS and entry[1] != _CACHE.clock:
        _CACHE.get(key)  # refresh its place
    return result


def _warm_into(op: str, fields: Hashable, level: Any, ins: list[Any], out: Any) -> Any:
    """`_warm` into a given numpy output: `out` where the compiled call ran (its `into`, one
    C call, where it has one; else the call itself, its key made once), else `_MISS` (the
    general path: a new signature, or inputs that meet the output and must be staged)."""
    if type(out) is not np.ndarray:
        return _MISS
    key = _numpy_signature(op, fields, level, ins, [numpy_key(out)])
    entry = _numpy_entry(key)
    if entry is None:
        return _MISS
    call: _Call = entry[0]
    into = call.into
    if into is not None:
        if not into(ins, out):
            return _MISS
    elif call.hot is not None or call(ins, [out], _restaged) is _MISS:
        return _MISS  # (inputs to stage first: the general path stages them)
    if entry[1] != _CACHE.clock:
        _CACHE.get(key)  # refresh its place
    return out


def _numpy_signature(
    op: str, fields: Hashable, level: Any, ins: list[Any], outputs: list[Hashable]
) -> Hashable | None:
    """A call's signature where every input is a numpy array (`outputs`: the outputs' keys,
    None for a new one), as `signatures._signature` makes it; None otherwise."""
    keys: list[Hashable] = [op, fields, level]
    if len(ins) >= _MANY:  # (as `_keyed_inputs` keys them: at once)
        if set(map(type, ins)) != {np.ndarray}:
            return None
        keys.extend(numpy_keys(ins))
    else:
        for a in ins:
            if type(a) is not np.ndarray:
                return None
            keys.append((a.dtype, a.shape, a.strides))
    keys.extend(outputs)
    return tuple(keys)


def _numpy_entry(key: Hashable | None) -> list[Any] | None:
    """The cache's entry (call, clock) of a signature, without refreshing it; None where
    there is none, no signature, or an unhashable level in it (the general path says so).
    (Named for the numpy warm paths; any array's signature serves.)"""
    if key is None:
        return None
    try:
        return _CACHE.items.get(key)
    except TypeError:
        return None


def _restaged(staged: list[Any]) -> Any:
    return _MISS


def _dispatch(
    op: str,
    fields: Hashable,
    level: Any,
    ins: list[Any],
    outs: list[Any],
    build: Callable[[list[Any], list[Any]], _Call],
    device: str | None = None,
    key: Hashable | None = None,
) -> list[Any]:
    """Run the call of this signature, compiling it first if it is new (on `device`, with
    host arrays moved there and back, when one is named). `key`: the call's signature where
    the caller made it (`_quick_run`)."""
    if device is not None:
        return _on_device(device, ins, outs, lambda i, o: _dispatch(op, fields, level, i, o, build))
    if key is None:
        key = _signature(op, fields, level, ins, outs)
    call = None if key is None else _CACHE.get(key)
    if call is None:
        call = build(ins, outs)
        if key is None:  # the build may have taught _ARRAY_KEYS a GPU array type
            key = _signature(op, fields, level, ins, outs)
        if key is None:  # (no signature: lists, foreign arrays, run as the backend's own)
            again = lambda staged: _dispatch(op, fields, level, staged, outs, build)  # noqa: E731
            results: list[Any] = _Converted(call)(ins, outs, again)
            return results
        if not _own_arrays(call.backend, ins, outs):
            call = _Converted(call)  # (CPU torch tensors, JAX arrays: bound as its own)
        _CACHE.put(key, call)
    if call.fresh:  # nothing can need restaging
        return call.fresh_results(ins)
    hot = call.hot
    if hot is not None:  # (a warm call on arrays whose addresses the backend reads at once)
        result = hot(ins, outs[0])
        if result is not _MISS:
            return [result]
    return call(ins, outs, lambda staged: _dispatch(op, fields, level, staged, outs, build))


def _own_arrays(backend: Backend, ins: list[Any], outs: list[Any]) -> bool:
    """Whether the backend's compiled calls take every input and given output as it is
    (else they are bound as its arrays each call: CPU torch tensors, JAX arrays)."""
    own = getattr(backend, "own", None)
    if own is None:
        return True
    return all(map(own, ins)) and all(o is None or own(o) for o in outs)


def _shape(x: Any) -> tuple[int, ...]:
    """An array's shape (lists as numpy reads them)."""
    shape = getattr(x, "shape", None)
    return tuple(shape) if shape is not None else np.shape(x)


def _dims(view: Any) -> tuple[int, ...]:
    """A described array's sizes as a tensor has them (a 0-D array is its 1-element view)."""
    return tuple(view.shape) or (1,)


def _empty_like(x: Any, shape: tuple[int, ...]) -> Any:
    """A new array of `shape` (it holds no element) of x's library, type and device."""
    backend = backend_of([x])
    return backend.in_library_of(backend.new_like(x, shape), x)


def _filled(x: Any, value: Any, rank: int) -> Any:
    """An array of x's library, type and device holding one element, `value`, in `rank`
    dimensions of size 1."""
    backend = backend_of([x])
    element = element_of(_dtype_of(backend, x))
    dtype = numpy_dtype(element)
    if dtype is None:
        raise InvalidDescriptorError(f"no library here holds a {element.name} constant")
    host = np.frombuffer(encode(value, element, "PADDING1.PaddingValue"), dtype)
    host = host.reshape((1,) * rank).copy()
    placed = host if backend.name == "numpy" else backend.upload(host)
    return backend.in_library_of(placed, x)


def _dtype_of(backend: Backend, x: Any) -> Any:
    return backend.describe(x).dtype
