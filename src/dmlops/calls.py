"""How a functional call runs: every call's signature (the operator, its fields, the
feature level and each array's type, dtype, shape and strides) keys a cache of compiled
calls; the first call of a signature validates in full and compiles a `_Call`, later ones
read the arrays' addresses and run it; an output sharing bytes with an input is staged
through a temporary first; torch tensors that need autograd, tracing or the CPU go through
the torch wing (`route_torch_through`). The operators in `functional.py` and
`functional_indexed.py` are built on it."""

from __future__ import annotations

import builtins
import operator
import pickle
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from .backends import Backend, get_backend
from .elements import Element, element_of, encode, numpy_dtype
from .errors import BindingError, DmlError, InvalidDescriptorError, UnsupportedFeatureLevelError
from .ops import (
    OperatorDesc,
)
from .overlap import ManySpans, find_overlaps, owners_apart, spans_meet
from .plan import Layout, Plan, array_byte_span, in_units
from .tensor import BufferTensorDesc, DataType, FeatureLevel, packed_strides

CACHE_SIZE = 1024
# span pairs up to which a call's overlap test is a Python loop (each write against every read
# and every other write: a join of 64 arrays into one output is 65 pairs, not a numpy test)
_FEW_SPAN_PAIRS = 256


class _LRU:
    """A bounded, thread-safe map from call signatures to compiled calls."""

    def __init__(self, size: int) -> None:
        self.size = size
        # each key's call and the put count when it was last moved: one lookup per hit (read
        # by _dispatch too)
        self.items: OrderedDict[Hashable, list[Any]] = OrderedDict()
        self.clock = 0  # puts so far
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> _Call | None:
        entry = self.items.get(key)  # a dict read is atomic: hits take no lock
        if entry is None:
            return None
        if entry[1] != self.clock:  # (a current place: one dict read, nothing refreshed)
            with self._lock:  # refresh its place at most once per put
                if key in self.items:
                    self.items.move_to_end(key)
                    entry[1] = self.clock
        call: _Call = entry[0]
        return call

    def put(self, key: Hashable, call: _Call) -> None:
        with self._lock:
            self.clock += 1
            self.items[key] = [call, self.clock]
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self.items.clear()

    def __len__(self) -> int:
        return len(self.items)


_CACHE = _LRU(CACHE_SIZE)


def clear_cache() -> None:
    """Forget every compiled call signature."""
    _CACHE.clear()


def cache_size() -> int:
    """How many call signatures are compiled and cached."""
    return len(_CACHE)


# -- signatures -----------------------------------------------------------------------


def _numpy_key(a: Any) -> Hashable:
    return (np.ndarray, a.dtype, a.shape, a.strides, a.flags.writeable)


_ARRAY_KEYS: dict[type, Callable[[Any], Hashable]] = {np.ndarray: _numpy_key}
# for many arrays of one type, a function giving all their keys at once (each as the type's
# own key function gives it), or None where one has none
_MANY = 8  # arrays in a call from which their keys are read at once
_NUMPY_KEY = operator.attrgetter("dtype", "shape", "strides")  # a numpy array's key
_MANY_KEYS: dict[type, Callable[[Sequence[Any]], list[Hashable] | None]] = {
    np.ndarray: lambda arrays: list(map(_NUMPY_KEY, arrays))  # (one C call an array)
}


_UNKEYABLE = object()


def _fields_key(*fields: Any) -> Hashable:
    """An operator's fields as one key: their values with their types (pickled), so that
    1.0 or True never finds the call compiled for 1 and skips the check that refuses it."""
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
    each array); False where one has none (no key function, or one that declines: a CPU
    torch tensor)."""
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
        f = keys.get(type(a))
        key = None if f is None else f(a)
        if key is None:
            return False
        append(key)
    return True


def _output_key(o: Any) -> Hashable | None:
    """A given output's key (a numpy one's writability included), or None."""
    f = _ARRAY_KEYS.get(type(o))
    return None if f is None else f(o)


# -- arrays as tensors ----------------------------------------------------------------


def _is_gpu_array(x: Any) -> bool:
    if isinstance(x, np.ndarray):
        return False
    dev = getattr(x, "__dlpack_device__", None)
    if dev is None:
        return False
    try:
        kind = int(dev()[0])
    except Exception:  # noqa: BLE001 - a foreign object's protocol may fail in any way
        return False
    return kind in (2, 3, 13)  # kDLCUDA, kDLCUDAHost, kDLCUDAManaged


def _check_array(x: Any) -> None:
    if x is None or isinstance(x, (str, bytes, bytearray, dict, set)):
        raise DmlError(f"expected an array, got {type(x).__name__}")


def _kind(x: Any) -> str:
    """Which backend's memory an array is in: 'webgpu', 'cuda' or 'numpy' (host)."""
    own = getattr(type(x), "__dmlops_backend__", None)
    if own is not None:
        return str(own)
    return "cuda" if _is_gpu_array(x) else "numpy"


def backend_of(arrays: Sequence[Any]) -> Backend:
    """The backend that owns these arrays: 'cuda' for CUDA arrays, 'webgpu' for
    dmlops.webgpu arrays, else 'numpy'."""
    for a in arrays:
        _check_array(a)
    kinds = {_kind(a) for a in arrays}
    if len(kinds) > 1:
        names = " and ".join(sorted("host (CPU)" if k == "numpy" else k for k in kinds))
        raise BindingError(f"arrays mix {names} memory; put them on one device")
    backend = get_backend(kinds.pop() if kinds else "numpy")
    _ARRAY_KEYS.update(backend.array_keys())
    many = getattr(backend, "many_array_keys", None)
    if many is not None:
        _MANY_KEYS.update(many())
    return backend


def _on_device(
    device: str,
    ins: list[Any],
    outs: list[Any],
    run: Callable[[list[Any], list[Any]], list[Any]],
) -> list[Any]:
    """`run(ins, outs)` on `device`: host inputs are uploaded and, where any was, the
    results come back to the host (into the host outputs given, once the call succeeded)."""
    backend = get_backend(device)
    for a in ins:
        _check_array(a)
    uploaded = False
    moved = []
    for a in ins:
        kind = _kind(a)
        if kind == backend.name:
            moved.append(a)
        elif kind == "numpy":
            moved.append(backend.upload(a))
            uploaded = True
        else:
            raise BindingError(f"an input is {kind} memory, not on device {device!r}")
    # host outputs: computed into new device arrays, copied back after the call succeeds
    to_host = any(o is not None and _kind(o) != backend.name for o in outs)
    if to_host:  # an output that is an input (in place) stays its uploaded copy
        placed = [next((m for a, m in zip(ins, moved, strict=True) if a is o), None) for o in outs]
        results = run(moved, placed)
    else:
        results = run(moved, outs)
    if to_host:
        for r, o in zip(results, outs, strict=True):
            if o is not None and _kind(o) == "numpy":
                backend.download(r, o)
        return outs
    return [backend.download(r) for r in results] if uploaded else results


class _Tensor:
    """An array (or an output still to allocate) seen as a DirectML tensor."""

    def __init__(
        self,
        desc: BufferTensorDesc,
        layout: Layout,
        low: int,
        nbytes: int,
        contiguous: bool,
        writable: bool = True,
        element: Element | None = None,
    ) -> None:
        self.desc = desc
        self.layout = layout
        self.low = low
        self.nbytes = nbytes
        self.contiguous = contiguous
        self.writable = writable
        dt = desc.data_type
        # the array's own element type (the desc may describe it with a carrier type)
        self.element = element or Element(dt.name.lower(), dt.element_size, dt)

    @classmethod
    def of_array(cls, a: Any) -> _Tensor:
        """`a` (an array of the backend's kind) as a tensor: strides, not copies."""
        element = element_of(a.dtype)
        item = element.size
        shape, byte_strides = (a.shape, a.strides) if a.ndim else ((1,), (item,))  # 0-D: [1]
        low, nbytes = array_byte_span(shape, byte_strides, item)
        strides = tuple(s // item for s in byte_strides)
        c_contiguous = bool(a.flags.c_contiguous)
        desc = BufferTensorDesc(
            element.described_as,
            shape,
            None if c_contiguous else tuple(abs(s) for s in strides),
        )
        contiguous = c_contiguous or bool(a.flags.f_contiguous)
        writable = bool(getattr(a.flags, "writeable", True))
        layout = Layout(-low // item, strides)
        return cls(desc, layout, low, nbytes, contiguous, writable, element)

    def carried_by(self, data_type: DataType) -> _Tensor:
        """The same elements described with another data type (a carrier)."""
        desc = BufferTensorDesc(data_type, self.desc.sizes, self.desc.strides)
        return _Tensor(
            desc, self.layout, self.low, self.nbytes, self.contiguous, self.writable, self.element
        )

    def with_ones(self, positions: Sequence[int]) -> _Tensor:
        """The same elements with dimensions of size 1 inserted at these positions (of the
        result), as DirectML pads ranks."""
        sizes = list(self.desc.sizes)
        strides = list(self.layout.strides)
        given = None if self.desc.strides is None else list(self.desc.strides)
        for p in sorted(positions):
            sizes.insert(p, 1)
            strides.insert(p, 0)
            if given is not None:
                given.insert(p, 0)
        desc = BufferTensorDesc(self.desc.data_type, sizes, given)
        layout = Layout(self.layout.offset, tuple(strides))
        return _Tensor(
            desc, layout, self.low, self.nbytes, self.contiguous, self.writable, self.element
        )

    def window(self, sizes: Sequence[int]) -> _Tensor:
        """The box of `sizes` at this tensor's first element (a SLICE view: same strides)."""
        desc = BufferTensorDesc(self.desc.data_type, tuple(sizes), self.desc.effective_strides)
        return _Tensor(desc, self.layout, self.low, self.nbytes, False, self.writable, self.element)

    @classmethod
    def new(cls, shape: Sequence[int], dtype: Any) -> _Tensor:
        """A packed output of `shape`, allocated only after validation."""
        element = element_of(dtype)
        shape = tuple(shape)
        nbytes = builtins.max(1, int(np.prod(shape, dtype=object))) * element.size
        desc = BufferTensorDesc(element.described_as, shape)
        return cls(desc, Layout(0, packed_strides(shape)), 0, nbytes, True, True, element)


class _Call:
    """A validated, compiled call: allocate outputs, read addresses, run the plan."""

    # the conventional shape of the one result, where it differs from the plan's padded one
    result_shape: tuple[int, ...] | None = None
    # the whole warm call in one frame, where the lean bindings allow it (`_hot_call`)
    hot: Callable[[list[Any], Any], Any] | None = None

    def __init__(
        self,
        backend: Backend,
        desc: OperatorDesc,
        plan: Plan,
        inputs: Sequence[_Tensor],
        outputs: Sequence[_Tensor],
        new_shapes: Sequence[tuple[int, ...] | None],
        queue: Callable[[Any], Any],
        like: int = 0,
        dtype: Any = None,
    ) -> None:
        """`dtype`: the library's type of new outputs (a numpy one lets the plan make its
        output itself)."""
        self.like = like  # the input whose library, device and dtype new outputs take
        self.backend = backend
        self.queue = queue
        self.operator = desc.OPERATOR
        self.plan = plan
        # (an Executor; typed Any: a backend's optional hooks are read off it)
        self.run: Any = backend.executor(plan)
        flat = backend.flat_function
        self.in_flats = [flat(t.low, t.nbytes, t.contiguous) for t in inputs]
        self.out_flats = [flat(t.low, t.nbytes, t.contiguous) for t in outputs]
        self.direct = all(f is None for f in self.in_flats + self.out_flats)
        # flat buffers that are their own addresses (device pointers): none to read
        self.flats_are_addresses = bool(getattr(backend, "flats_are_addresses", False))
        self.allocate = [(k, shape) for k, shape in enumerate(new_shapes) if shape is not None]
        self.any_given = len(self.allocate) < len(new_shapes)
        # inputs the plan reads (an in-place scatter's own input is not read): only these
        # can meet a caller's output
        self.read = [k for k, (lo, hi) in enumerate(plan.input_spans) if hi > lo]
        # the bytes each read input and each output spans, for a quick test before the exact
        # one (few bindings only: many go straight to find_overlaps' vectorised test)
        spans = [(k, *plan.input_spans[k]) for k in self.read]
        writes = [(j, lo, hi) for j, (lo, hi) in enumerate(plan.output_spans) if hi > lo]
        few = len(writes) * (len(spans) + len(writes)) <= _FEW_SPAN_PAIRS
        self.read_spans = spans if few else None
        self.write_spans = writes
        # the same test over many spans, vectorised
        self.many_spans = None if few else ManySpans(spans, writes)
        self.select: list[int] | None = None
        # contiguous arrays in, every output new: nothing to flatten, nothing can overlap
        self.fresh = self.direct and not self.any_given
        self.new_shapes = [shape for shape in new_shapes if shape is not None]
        self.one_shape = new_shapes[0] if len(new_shapes) == 1 else None
        one_new = self.fresh and self.one_shape is not None
        producer = getattr(self.run, "producer", None) if one_new else None
        made_as = dtype if isinstance(dtype, np.dtype) else None  # its byte order included
        self.produce = None if producer is None else producer(self.one_shape, made_as)
        # the one new numpy output made here (the key fixes the type): no call to the backend's
        one_numpy = backend.name == "numpy" and self.one_shape is not None
        self.made_as = made_as if one_numpy else None
        # several new numpy outputs of that type (a split's parts): made in one pass
        many_numpy = backend.name == "numpy" and len(self.new_shapes) > 1
        self.many_made_as = made_as if many_numpy else None
        # a backend's run into new outputs that nothing else sees (it may write them before
        # it finds an index out of range)
        self.run_fresh = getattr(self.run, "run_fresh", None) if self.fresh else None
        # where the backend reads the addresses of this call's arrays and makes its new
        # outputs in C calls (torch CUDA tensors): asked at the first run, from its arrays
        self.in_lows = [t.low for t in inputs]
        self.out_lows = [t.low for t in outputs]
        self.lean: Any = _UNASKED

    def reading(self, select: list[int]) -> _Call:
        """This call, reading only inputs `select` of those it is given."""
        self.select = select
        self.fresh = False
        return self

    def fresh_results(self, ins: Sequence[Any]) -> list[Any]:
        """The call where it is `fresh`: new outputs like input `like`, then the run."""
        if self.produce is not None:  # the output made by the copy itself
            return [self.produce(ins)]
        made_as, one_shape = self.made_as, self.one_shape
        if one_shape is not None:  # (a numpy one made here, of the type the key fixes)
            results = [
                self.backend.empty(one_shape, made_as)  # type: ignore[attr-defined]
                if made_as is not None
                else self.backend.new_like(ins[self.like], one_shape)
            ]
        elif self.many_made_as is not None:
            results = self.backend.empties(self.new_shapes, self.many_made_as)  # type: ignore[attr-defined]
        else:
            new_like, like = self.backend.new_like, ins[self.like]
            results = [new_like(like, shape) for shape in self.new_shapes]
        run_fresh = self.run_fresh
        if run_fresh is not None:
            first = self.run.fresh_first  # (a backend with run_fresh has it: its first try)
            if first is None or not first(ins, results):
                run_fresh(ins, results)
        else:
            self.run(ins, results, self.queue(None))
        return results

    def __call__(
        self, ins: Sequence[Any], outs: Sequence[Any], restage: Callable[[list[Any]], list[Any]]
    ) -> list[Any]:
        if self.fresh:
            return self.fresh_results(ins)
        if self.select is not None:  # the inputs the call reads (a join's non-empty pieces)
            ins = [ins[k] for k in self.select]
        lean = self.lean
        if lean is _UNASKED:
            lean = self.lean = self._lean_bindings(ins, outs)
            if lean is not None:
                self.hot = self._hot_call(lean)
        if lean is not None:
            return self._lean_call(lean, ins, outs, restage)
        results = self._allocated(ins, outs)
        if self.direct:
            in_flats, out_flats = ins, results
        else:
            in_flats = [x if f is None else f(x) for f, x in zip(self.in_flats, ins, strict=True)]
            out_flats = [
                o if f is None else f(o) for f, o in zip(self.out_flats, results, strict=True)
            ]
        read = ins if len(self.read) == len(ins) else [ins[k] for k in self.read]
        if (
            self.any_given
            and not owners_apart(self.backend.owner, read, results)
            and self._spans_meet(in_flats, out_flats)
        ):
            staged = self._stage(ins, in_flats, out_flats)
            if staged is not None:
                return restage(staged)
        self.run(in_flats, out_flats, self.queue(None))
        return results

    def _lean_bindings(self, ins: Sequence[Any], outs: Sequence[Any]) -> Any:
        """The backend's (an array's address, a new output like an array) functions for
        arrays like these, or None (the general path)."""
        ask = getattr(self.backend, "lean_bindings", None)
        if ask is None or not self.flats_are_addresses:
            return None
        given = [o for o in outs if o is not None]
        return ask([*ins, *given], self.in_lows, self.out_lows)

    def _hot_call(self, lean: Any) -> Callable[[list[Any], Any], Any] | None:
        """A warm call of one output on arrays the lean bindings read, as one closure
        `(inputs, out) -> result` (`_MISS` where a given output meets what the call reads:
        the general path stages it); None where the call reads a selection of its inputs or
        has several outputs, or many spans to test (the general path)."""
        if self.select is not None or len(self.out_lows) != 1:
            return None
        address, new_empty = lean
        run, queue, like = self.run, self.queue, self.like
        if self.allocate:  # (its key says no output is given)
            shape = self.allocate[0][1]
            final = self.result_shape
            reshape = final is not None and tuple(final) != tuple(shape)

            def hot_new(ins: list[Any], out: Any) -> Any:
                result = new_empty(ins[like], shape)
                run(list(map(address, ins)), [address(result)], queue(None))
                return result.reshape(final) if reshape else result

            return hot_new
        writes, meets = self.write_spans, self._spans_meet

        def hot_given(ins: list[Any], out: Any) -> Any:
            flats = list(map(address, ins))
            at = address(out)
            if writes and meets(flats, [at]):
                return _MISS
            run(flats, [at], queue(None))
            return out

        return hot_given

    def _lean_call(
        self,
        lean: Any,
        ins: Sequence[Any],
        outs: Sequence[Any],
        restage: Callable[[list[Any]], list[Any]],
    ) -> list[Any]:
        """`__call__` on arrays whose addresses the backend reads at once (no per-array
        flat buffers; an output's owner is never known, so given outputs take the span
        test directly)."""
        address, new_empty = lean
        results = outs if isinstance(outs, list) else list(outs)
        if self.allocate:
            results = list(results)
            template = ins[self.like]
            for k, shape in self.allocate:
                results[k] = new_empty(template, shape)
        in_flats, out_flats = list(map(address, ins)), list(map(address, results))
        if self.any_given and self._spans_meet(in_flats, out_flats):
            staged = self._stage(ins, in_flats, out_flats)
            if staged is not None:
                return restage(staged)
        self.run(in_flats, out_flats, self.queue(None))
        return results

    def _allocated(self, ins: Sequence[Any], outs: Sequence[Any]) -> list[Any]:
        """The outputs: the given ones, and new arrays like input `like` for the others."""
        if not self.allocate:
            return outs if isinstance(outs, list) else list(outs)
        results = list(outs)
        new_like = self.backend.new_like
        for k, shape in self.allocate:
            results[k] = new_like(ins[self.like], shape)
        return results

    def _spans_meet(self, in_flats: Sequence[Any], out_flats: Sequence[Any]) -> bool:
        """Whether any output's bytes may meet a read input's or another output's (False:
        none can overlap; True: find_overlaps decides)."""
        if not self.flats_are_addresses:
            address = self.backend.address
            in_flats, out_flats = list(map(address, in_flats)), list(map(address, out_flats))
        if self.read_spans is None:
            assert self.many_spans is not None  # (one of the two is set)
            return self.many_spans(in_flats, out_flats)
        return spans_meet(self.read_spans, in_flats, self.write_spans, out_flats)

    def _stage(
        self, ins: Sequence[Any], in_flats: Sequence[Any], out_flats: Sequence[Any]
    ) -> list[Any] | None:
        """Inputs with every one that meets an output replaced by a copy; None if none does."""
        address = self.backend.address
        overlaps = find_overlaps(
            self.plan, [address(f) for f in in_flats], [address(f) for f in out_flats]
        )
        if not overlaps:
            return None
        for o in overlaps:
            if o.kind == "output":
                raise BindingError(
                    f"{self.operator}: outputs {o.other} and {o.output} share memory "
                    f"(bytes [{o.low}, {o.high}) of output {o.output})"
                )
        meeting = {o.other for o in overlaps}
        return [self.backend.copy_of(x) if i in meeting else x for i, x in enumerate(ins)]


def _level(feature_level: FeatureLevel | int | str | None) -> FeatureLevel:
    return FeatureLevel.newest() if feature_level is None else FeatureLevel.parse(feature_level)


def _compile(
    backend: Backend,
    level: Any,
    make_desc: Callable[[list[BufferTensorDesc], list[BufferTensorDesc]], OperatorDesc],
    ins: Sequence[Any],
    outs: Sequence[Any],
    new_shapes: Sequence[tuple[int, ...] | None],
    dtype: Any,
    tensors: tuple[list[_Tensor], list[_Tensor]] | None = None,
    like: int = 0,
    edit: Callable[[Plan], Plan] | None = None,
    fill: Any = None,
) -> _Call:
    """Describe, validate (before anything is allocated), lower and compile one call.
    `tensors`: the inputs and outputs as tensors already (else described from the arrays);
    `like`: the input new outputs are made like; `edit`: a change to the lowered plan;
    `fill`: the constant the operator writes (PADDING1's value), encoded as the data's own
    type where a carrier describes it."""
    if tensors is None:
        in_t = [_Tensor.of_array(backend.describe(x)) for x in ins]
        out_t = [
            _Tensor.of_array(backend.describe(o)) if shape is None else _Tensor.new(shape, dtype)
            for o, shape in zip(outs, new_shapes, strict=True)
        ]
    else:
        in_t, out_t = tensors
    if any(0 in t.desc.sizes for t in [*in_t, *out_t]):
        return _empty_call(backend, make_desc, in_t, out_t, new_shapes, like, dtype)
    desc = _described(make_desc, in_t, out_t, _level(level), fill)
    desc.validate(_level(level))
    for t in out_t:
        if not t.writable:
            raise BindingError(f"{desc.OPERATOR}: an output array is read-only")
    op = desc.OPERATOR
    named = [(f"{op}.{n}", x) for (n, _), x in zip(desc.input_fields(), ins, strict=True)]
    named += [
        (f"{op}.{n}", o)
        for (n, _), o, shape in zip(desc.output_fields(), outs, new_shapes, strict=True)
        if shape is None
    ]
    queue = backend.placement(named)  # arrays on two GPUs are refused here
    plan = desc.lower([t.layout for t in in_t], [t.layout for t in out_t])
    if plan.element_size > 8:
        plan = in_units(plan, 8)
    if edit is not None:
        plan = edit(plan)
    return _Call(backend, desc, plan, in_t, out_t, new_shapes, queue, like, dtype)


class _EmptyCall(_Call):
    """A call with an empty tensor: its outputs are empty, so it only allocates them (numpy's
    and torch's answer; DirectML's tensors have no size 0)."""

    def __init__(
        self,
        backend: Backend,
        new_shapes: Sequence[tuple[int, ...] | None],
        like: int,
        dtype: Any = None,
    ) -> None:
        self.like = like
        self.dtype = dtype  # the type of new outputs where there is no input (a generator)
        self.backend = backend
        self.allocate = [(k, shape) for k, shape in enumerate(new_shapes) if shape is not None]
        self.fresh = False  # (its __call__ allocates)

    def __call__(
        self, ins: Sequence[Any], outs: Sequence[Any], restage: Callable[[list[Any]], list[Any]]
    ) -> list[Any]:
        if not ins and self.allocate:  # a generator: a new (numpy) array of its type
            results = list(outs)
            for k, shape in self.allocate:
                results[k] = np.empty(shape, self.dtype)
            return results
        return self._allocated(ins, outs)


def _empty_call(
    backend: Backend,
    make_desc: Callable[[list[BufferTensorDesc], list[BufferTensorDesc]], OperatorDesc],
    in_t: list[_Tensor],
    out_t: list[_Tensor],
    new_shapes: Sequence[tuple[int, ...] | None],
    like: int,
    dtype: Any = None,
) -> _Call:
    """The call of a descriptor with an empty tensor (`check_empty`): it only allocates."""
    check_empty(make_desc([t.desc for t in in_t], [t.desc for t in out_t]))
    return _EmptyCall(backend, new_shapes, like, dtype)


def check_empty(desc: OperatorDesc) -> None:
    """The rules of a descriptor with an empty tensor, in place of DirectML's (whose tensors
    have no size 0): every output is empty too (an output with elements would need values
    no input has), no size is negative, and the operator's rules that hold for empty
    tensors hold (`OperatorDesc.check_empty_rules`)."""
    desc.check_empty_rules()
    op = desc.OPERATOR
    ins, outs = desc.input_fields(), desc.output_fields()
    for name, t in outs:
        if 0 not in t.sizes:
            empty = [n for n, i in ins if 0 in i.sizes]
            raise InvalidDescriptorError(
                f"{op}.{empty[0] if empty else name} is empty: it has no values for "
                f"{op}.{name} of sizes {list(t.sizes)}"
            )
    for name, t in ins + outs:
        if any(n < 0 for n in t.sizes):
            raise InvalidDescriptorError(f"{op}.{name}.Sizes is {list(t.sizes)}: negative")


def check_empty_gradient(
    gradient_shape: Sequence[int], output_sizes: Sequence[int], window: Sequence[Sequence[int]]
) -> None:
    """The rules of a SLICE_GRAD whose input gradient is empty (an empty window: its output
    is zeros): one entry of each window field per output dimension, the gradient of as many
    dimensions, no negative size."""
    rank = len(output_sizes)
    for name, values in zip(_WINDOW, window, strict=True):
        if len(values) != rank:
            raise InvalidDescriptorError(
                f"SLICE_GRAD.{name} has {len(values)} entries: "
                f"SLICE_GRAD.OutputGradientTensor has {rank} dimensions"
            )
    if len(gradient_shape) != rank:
        raise InvalidDescriptorError(
            f"SLICE_GRAD.InputGradientTensor has {len(gradient_shape)} dimensions: "
            f"SLICE_GRAD.OutputGradientTensor has {rank}"
        )
    if any(n < 0 for n in output_sizes):
        raise InvalidDescriptorError(
            f"SLICE_GRAD.OutputGradientTensor.Sizes is {list(output_sizes)}: negative"
        )


def _described(
    make_desc: Callable[[list[BufferTensorDesc], list[BufferTensorDesc]], OperatorDesc],
    in_t: list[_Tensor],
    out_t: list[_Tensor],
    level: FeatureLevel,
    fill: Any,
) -> OperatorDesc:
    """The call's descriptor: its data tensors described with their own DirectML type where
    the operator's table takes it at `level`, else with a carrier (an unsigned type the table
    takes whose size divides the element's) while the plan moves whole elements. The data
    tensors of one call must hold one element type."""
    desc = make_desc([t.desc for t in in_t], [t.desc for t in out_t])
    names = [n for n, _ in desc.input_fields() + desc.output_fields()]
    by_name: dict[str, _Tensor] = dict(zip(names, [*in_t, *out_t], strict=False))
    data = [(n, by_name[n]) for n, _ in desc.data_fields() if n in by_name]
    if not data:
        return desc
    first_name, first = data[0]
    for name, t in data[1:]:
        if t.element.name != first.element.name:
            raise InvalidDescriptorError(
                f"{desc.OPERATOR}.{name}.DataType is {t.element.label}: must equal "
                f"{first_name}.DataType {first.element.label}"
            )
    element = first.element
    carrier = desc.carrier(level, element.size, element.data_type)
    if carrier is None:
        if element.data_type is None:
            raise UnsupportedFeatureLevelError(
                f"{desc.OPERATOR}.{first_name}.DataType is {element.name}: {desc.OPERATOR} "
                f"takes no unsigned type of {element.size} bytes or less to carry it"
            )
        return desc  # its own type, or validation names the type the table lacks
    carried = [id(t) for _, t in data]
    desc = make_desc(
        [t.carried_by(carrier).desc if id(t) in carried else t.desc for t in in_t],
        [t.carried_by(carrier).desc if id(t) in carried else t.desc for t in out_t],
    )
    return desc.carrying(
        element.size,
        None if fill is None else encode(fill, element, f"{desc.OPERATOR}.PaddingValue"),
    )


_MISS = object()
_UNASKED = object()  # a call's lean bindings, before its first run asks the backend
_PLAIN = (int, bool, str, type(None))


def _quick_run(
    tag: tuple[Any, ...], ins: list[Any], out: Any, device: str | None, validate: bool = False
) -> tuple[Hashable | None, Any]:
    """(a call's signature from its raw arguments, before any shape work, its result where
    that signature is compiled, else `_MISS`). The signature is `tag` (the operator and its
    other arguments) and each array's key (type, shape, strides; a GPU array's device);
    None where an argument is not a plain int, bool, str or None (1.0 must not find the
    call of 1) or an array has no key (lists, CPU torch tensors). `_MISS` also where the
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
    if call.fresh:
        result = call.fresh_results(ins)[0]
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
        if key is None:
            return _unkeyed(call, ins, outs, lambda i, o: _dispatch(op, fields, level, i, o, build))
        _CACHE.put(key, call)
    if call.fresh:  # nothing can need restaging
        return call.fresh_results(ins)
    hot = call.hot
    if hot is not None:  # (a warm call on arrays whose addresses the backend reads at once)
        result = hot(ins, outs[0])
        if result is not _MISS:
            return [result]
    return call(ins, outs, lambda staged: _dispatch(op, fields, level, staged, outs, build))


def _unkeyed(
    call: _Call,
    ins: list[Any],
    outs: list[Any],
    again: Callable[[list[Any], list[Any]], list[Any]],
) -> list[Any]:
    """Run arrays without a signature (lists, foreign arrays) as the backend's own; `again`
    dispatches the call anew (on staged inputs)."""
    as_array = call.backend.as_array
    results = call(
        [as_array(x) for x in ins],
        [None if o is None else as_array(o) for o in outs],
        lambda staged: again(staged, outs),
    )
    if not ins:  # a generator: its outputs are given, or new arrays of the backend's own
        return [r if o is None else o for r, o in zip(results, outs, strict=True)]
    in_library = call.backend.in_library_of
    like = ins[call.like]  # (the input whose type new outputs take: ONE_HOT's values)
    return [in_library(r, like) if o is None else o for r, o in zip(results, outs, strict=True)]


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


# -- the public calls: torch tensors that need autograd, tracing or the CPU go through the
# torch operators (dmlops.torch_ops); everything else runs here --------------------------


_TORCH_OPS: Any = None  # dmlops.torch.operators, once torch is imported
# how to load it: the package wires this in (dmlops/__init__.py), so that this module never
# imports the torch operators built on it
_TORCH_LOADER: list[Callable[[], Any]] = []


def route_torch_through(loader: Callable[[], Any]) -> None:
    """Name the loader of the torch operators that calls on torch tensors needing autograd,
    tracing or the CPU go through (called once, by the package)."""
    _TORCH_LOADER[:] = [loader]


def _torch_ops() -> Any:
    global _TORCH_OPS
    if _TORCH_OPS is None:
        if not _TORCH_LOADER:
            raise DmlError("the torch operators are not wired in: import dmlops, the package")
        _TORCH_OPS = _TORCH_LOADER[0]()
    return _TORCH_OPS


def _torch_wanted(arrays: Sequence[Any]) -> bool:
    for a in arrays:
        if type(a) is not np.ndarray:
            break
    else:
        return False  # numpy arrays only
    if _TORCH_OPS is None and "torch" not in sys.modules:
        return False
    return bool(_torch_ops().wanted(arrays))


def _through_torch(arrays: Sequence[Any]) -> bool:
    """Whether a call of an operator that has no torch custom operator (the indexed ones,
    TILE, PADDING1) on these arrays goes through `dmlops.torch.moves.moved`: a torch tensor that
    needs a gradient or is traced, or dynamo tracing the call."""
    if _TORCH_OPS is None and "torch" not in sys.modules:
        return False
    return bool(_torch_ops().moves_wanted(arrays))


def _moved(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Operator `op`'s call (its positional arguments, its keywords) through torch
    (`dmlops.torch.moves.moved`): autograd eagerly, its custom operator where it is traced."""
    return _torch_ops().moved(op, args, kwargs)


_SLICE = ("Offsets", "Sizes", "Strides")
_WINDOW = ("InputWindowOffsets", "InputWindowSizes", "InputWindowStrides")
