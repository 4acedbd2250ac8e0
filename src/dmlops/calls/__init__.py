"""How a functional call runs: every call's signature (the operator, its fields, the
feature level and each array's type, dtype, shape and strides) keys a cache of compiled
calls; the first call of a signature validates in full and compiles a `_Call`, later ones
read the arrays' addresses and run it; an output sharing bytes with an input is staged
through a temporary first; torch tensors that need autograd, tracing or the CPU go through
the torch wing (`route_torch_through`). The operators in `functional.py` and
`functional_indexed.py` are built on it.

`signatures.py` keys a call, `tensors.py` sees its arrays as tensors, `compiled.py` is a
compiled call, `dispatch.py` runs one (and holds the cache of them, a `cache.py` LRU),
`torch_route.py` sends torch tensors through the torch wing."""

from __future__ import annotations

from .cache import _LRU, CACHE_SIZE
from .compiled import (
    _MISS,
    _SLICE,
    _WINDOW,
    _Call,
    _compile,
    _described,
    _EmptyCall,
    _level,
    check_empty,
    check_empty_gradient,
)
from .dispatch import (
    _CACHE,
    _dims,
    _dispatch,
    _dtype_of,
    _empty_like,
    _filled,
    _quick_run,
    _shape,
    _warm,
    cache_size,
    clear_cache,
)
from .signatures import (
    _ARRAY_KEYS,
    _MANY_KEYS,
    _fields_key,
    _keyed_inputs,
    _output_key,
    _signature,
)
from .tensors import _on_device, _Tensor, backend_of
from .torch_route import _moved, _through_torch, _torch_ops, _torch_wanted, route_torch_through

__all__ = [
    "CACHE_SIZE",
    "_ARRAY_KEYS",
    "_CACHE",
    "_LRU",
    "_MANY_KEYS",
    "_MISS",
    "_SLICE",
    "_WINDOW",
    "_Call",
    "_EmptyCall",
    "_Tensor",
    "_compile",
    "_described",
    "_dims",
    "_dispatch",
    "_dtype_of",
    "_empty_like",
    "_fields_key",
    "_filled",
    "_keyed_inputs",
    "_level",
    "_moved",
    "_on_device",
    "_output_key",
    "_quick_run",
    "_warm",
    "_shape",
    "_signature",
    "_through_torch",
    "_torch_ops",
    "_torch_wanted",
    "backend_of",
    "cache_size",
    "check_empty",
    "check_empty_gradient",
    "clear_cache",
    "route_torch_through",
]
