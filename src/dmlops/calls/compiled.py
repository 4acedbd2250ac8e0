"""A compiled call (`_Call`): validated, lowered and bound to a backend's executor; it
allocates outputs, reads addresses, stages an output that meets an input, and runs the
plan. `_compile` makes one; a call with an empty tensor only allocates."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..backends import Backend
from ..elements import encode, marked_error
from ..errors import BindingError, InvalidDescriptorError, UnsupportedFeatureLevelError
from ..ops import OperatorDesc
from ..overlap import ManySpans, find_overlaps, owners_apart, spans_meet
from ..plan import Fill, Plan, ValueSequence, in_units
from ..tensor import BufferTensorDesc, FeatureLevel
from .tensors import _Tensor

# span pairs up to which a call's overlap test is a Python loop (each write against every read
# and every other write: a join of 64 arrays into one output is 65 pairs, not a numpy test)
_FEW_SPAN_PAIRS = 256
_MISS = object()
_UNASKED = object()  # a call's lean bindings, before its first run asks the backend
_SLICE = ("Offsets", "Sizes", "Strides")
_WINDOW = ("InputWindowOffsets", "InputWindowSizes", "InputWindowStrides")


class _Call:
    """A validated, compiled call: allocate outputs, read addresses, run the plan."""

    # the conventional shape of the one result, where it differs from the plan's padded one
    result_shape: tuple[int, ...] | None = None
    # the whole warm call in one frame, where the lean bindings allow it (`_hot_call`)
    hot: Callable[[list[Any], Any], Any] | None = None
    # strided inputs into new numpy outputs: their flat buffers, then the fresh path
    fresh_flats = False
    # the backend's run into one given output in one call (`_warm`'s, for a given output)
    into: Callable[[Sequence[Any], Any], bool] | None = None
    # a warm call of one new output on arrays of another library (`_Converted.warm_one`)
    warm_one: Callable[[list[Any]], Any] | None = None

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
        self.output_names = output_names(desc)
        self.plan = plan
        # (an Executor; typed Any: a backend's optional hooks are read off it)
        self.run: Any = backend.executor(plan)
        flat = backend.flat_function
        self.in_flats = [flat(t.low, t.nbytes, t.contiguous) for t in inputs]
        self.out_flats = [flat(t.low, t.nbytes, t.contiguous) for t in outputs]
        self.direct = all(f is None for f in self.in_flats + self.out_flats)
        # flat buffers that are their own addresses (device pointers): none to read
        self.flats_are_addresses = bool(getattr(backend, "flats_are_addresses", False))
        # many arrays' owners, and flat buffers' addresses, in one call (where it has them)
        self.owners = getattr(backend, "owners", None)
        self.addresses = getattr(backend, "addresses", None)
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
        # strided arrays in, every output new and made of a numpy type: the inputs' flat
        # buffers, then the fresh path on them (nothing can overlap; no output to flatten)
        made_as = dtype if isinstance(dtype, np.dtype) else None  # its byte order included
        self.fresh_flats = (
            not self.direct
            and not self.any_given
            and made_as is not None
            and backend.name == "numpy"
            and all(f is None for f in self.out_flats)
        )
        self.new_shapes = [shape for shape in new_shapes if shape is not None]
        self.one_shape = new_shapes[0] if len(new_shapes) == 1 else None
        one_new = (self.fresh or self.fresh_flats) and self.one_shape is not None
        producer = getattr(self.run, "producer", None) if one_new else None
        self.produce = None if producer is None else producer(self.one_shape, made_as)
        # the one new numpy output made here (the key fixes the type): no call to the backend's
        one_numpy = backend.name == "numpy" and self.one_shape is not None
        self.made_as = made_as if one_numpy else None
        # several new numpy outputs of that type (a split's parts): made in one pass
        many_numpy = backend.name == "numpy" and len(self.new_shapes) > 1
        self.many_made_as = made_as if many_numpy else None
        self.tag = id(self) << 12  # (its outputs' tags: + 0, 1, ...)
        # a backend's run into new outputs that nothing else sees (it may write them before
        # it finds an index out of range)
        new_only = self.fresh or self.fresh_flats
        self.run_fresh = getattr(self.run, "run_fresh", None) if new_only else None
        # a backend's run into one given output, buffers as they are, in one call: False
        # (nothing written) where the output meets an input (`_warm`, then the general path)
        into = getattr(self.run, "into", None) if self.direct and not self.allocate else None
        self.into = into() if into is not None and len(outputs) == 1 else None
        # where the backend reads the addresses of this call's arrays and makes its new
        # outputs in C calls (torch CUDA tensors): asked at the first run, from its arrays
        self.in_lows = [t.low for t in inputs]
        self.out_lows = [t.low for t in outputs]
        self.lean: Any = _UNASKED

    def reading(self, select: list[int]) -> _Call:
        """This call, reading only inputs `select` of those it is given."""
        self.select = select
        self.fresh = self.fresh_flats = False
        self.into = None
        return self

    def flat_inputs(self, ins: Sequence[Any]) -> list[Any]:
        """The inputs as the plan binds them: strided ones' flat buffers."""
        return [x if f is None else f(x) for f, x in zip(self.in_flats, ins, strict=True)]

    def fresh_results(self, ins: Sequence[Any]) -> list[Any]:
        """The call where it is `fresh`: new outputs like input `like`, then the run."""
        if self.produce is not None:  # the output made by the copy itself
            return [self.produce(ins)]
        made_as, one_shape = self.made_as, self.one_shape
        # (numpy outputs on the memory this call's outputs had before, where it is free: a
        # repeated call writes the same memory, each part from the core that wrote it last)
        if one_shape is not None:  # (a numpy one made here, of the type the key fixes)
            results = [
                self.backend.empty(one_shape, made_as, self.tag)  # type: ignore[attr-defined]
                if made_as is not None
                else self.backend.new_like(ins[self.like], one_shape)
            ]
        elif self.many_made_as is not None:
            results = self.backend.empties(self.new_shapes, self.many_made_as, self.tag)  # type: ignore[attr-defined]
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
        if self.fresh_flats:
            return self.fresh_results(self.flat_inputs(ins))
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
            in_flats = self.flat_inputs(ins)
            out_flats = [
                o if f is None else f(o) for f, o in zip(self.out_flats, results, strict=True)
            ]
        read = ins if len(self.read) == len(ins) else [ins[k] for k in self.read]
        if (
            self.any_given
            and not owners_apart(self.backend.owner, read, results, self.owners)
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
        address, new_empty, output_maker = lean
        run, queue, like = self.run, self.queue, self.like
        if self.allocate:  # (its key says no output is given)
            shape = self.allocate[0][1]
            final = self.result_shape
            reshape = final is not None and tuple(final) != tuple(shape)

            def hot_new(ins: list[Any], out: Any) -> Any:
                result = new_empty(ins[like], shape)
                run(list(map(address, ins)), [address(result)], queue(None))
                maker = output_maker(ins[like], shape)
                if maker is not None:  # (the signature fixes the output: made so from now)
                    self.hot = hot_made(maker)
                return result.reshape(final) if reshape else result

            def hot_made(make: Callable[[], Any]) -> Callable[[list[Any], Any], Any]:
                def hot(ins: list[Any], out: Any) -> Any:
                    result = make()
                    run(list(map(address, ins)), [address(result)], queue(None))
                    return result.reshape(final) if reshape else result

                return hot

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
        address, new_empty, _ = lean
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
        made_as = self.made_as if self.made_as is not None else self.many_made_as
        if made_as is not None:  # (numpy's: on the memory of this call's outputs before)
            empty, tag = self.backend.empty, self.tag  # type: ignore[attr-defined]
            for k, shape in self.allocate:
                results[k] = empty(shape, made_as, tag + k)
            return results
        new_like = self.backend.new_like
        for k, shape in self.allocate:
            results[k] = new_like(ins[self.like], shape)
        return results

    def _spans_meet(self, in_flats: Sequence[Any], out_flats: Sequence[Any]) -> bool:
        """Whether any output's bytes may meet a read input's or another output's (False:
        none can overlap; True: find_overlaps decides)."""
        if not self.flats_are_addresses:
            addresses = self.addresses
            if addresses is None:
                address = self.backend.address
                addresses = lambda flats: list(map(address, flats))  # noqa: E731
            in_flats, out_flats = addresses(in_flats), addresses(out_flats)
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
    refuse_unwritable(output_names(desc), outs, [t.writable for t in out_t])
    refuse_other_byte_orders(desc, in_t, out_t)
    op = desc.OPERATOR
    named = [(f"{op}.{n}", x) for (n, _), x in zip(desc.input_fields(), ins, strict=True)]
    named += [
        (f"{op}.{n}", o)
        for (n, _), o, shape in zip(desc.output_fields(), outs, new_shapes, strict=True)
        if shape is None
    ]
    queue = backend.placement(named)  # arrays on two GPUs are refused here
    plan = desc.lower([t.layout for t in in_t], [t.layout for t in out_t])
    if outs:
        given = new_shapes[0] is None and outs[0] is not None
        plan = _fills_in_order_of(plan, getattr(outs[0], "dtype", None) if given else dtype)
    if plan.element_size > 8:
        plan = in_units(plan, 8)
    if edit is not None:
        plan = edit(plan)
    return _Call(backend, desc, plan, in_t, out_t, new_shapes, queue, like, dtype)


def output_names(desc: OperatorDesc) -> list[str]:
    """A descriptor's output fields as messages name them ("SLICE1.OutputTensor")."""
    return [f"{desc.OPERATOR}.{n}" for n, _ in desc.output_fields()]


def refuse_unwritable(names: Sequence[str], outs: Sequence[Any], writable: Sequence[bool]) -> None:
    """Refuses a given output that cannot be written (`names`: the output fields, as
    "SLICE1.OutputTensor"; `writable`: each output's bound array's flag): a torch tensor
    whose memory does not hold its values, a read-only array."""
    for o, w, name in zip(outs, writable, names, strict=True):
        if o is None:
            continue
        unwritten = marked_error(o)
        if unwritten is not None:
            raise BindingError(f"{name} {unwritten}")
        if not w:
            raise BindingError(f"{name}: the output array is read-only")


# tensors whose elements are values the operator reads or writes (indices, lengths, counts,
# coordinates), not bits it moves: in this machine's byte order (the calls make them so)
_VALUE_FIELDS = frozenset(
    ("IndicesTensor", "SequenceLengthsTensor", "OutputCountTensor", "OutputCoordinatesTensor")
)


def refuse_other_byte_orders(
    desc: OperatorDesc, in_t: Sequence[_Tensor], out_t: Sequence[_Tensor]
) -> None:
    """Refuses a call whose moved tensors of one element type are not all in one byte order
    (a big-endian numpy array joined with a little-endian one, or given as the output of
    one): the operators move bits, which are those values only in the same order; and one
    whose value tensors (indices, counts) are in the other order than this machine's."""
    fields = [n for n, _ in desc.input_fields()] + [n for n, _ in desc.output_fields()]
    first: dict[str, tuple[str, bool]] = {}  # element type -> (the first field, its order)
    for name, t in zip(fields, [*in_t, *out_t], strict=True):
        swapped, element = t.element.swapped, t.element.name
        if name in _VALUE_FIELDS:
            if swapped:
                raise BindingError(
                    f"{desc.OPERATOR}.{name}: its {element} elements are in the other byte "
                    "order than this machine's: values the operator reads or writes must be "
                    "in its own (x.astype(x.dtype.newbyteorder('=')))"
                )
            continue
        seen = first.setdefault(element, (name, swapped))
        if seen[1] != swapped:
            raise BindingError(
                f"{desc.OPERATOR}.{name}: its {element} elements are in the other byte order "
                f"than {desc.OPERATOR}.{seen[0]}'s: the operator moves bits, so its arrays of "
                "one type must share a byte order (x.astype(x.dtype.newbyteorder('=')) makes "
                "an array of this machine's)"
            )


def _fills_in_order_of(plan: Plan, dtype: Any) -> Plan:
    """The plan with the constants it writes (its fills: a Value, a padding value, a
    sequence) in the byte order of `dtype`, the output's, where that is not this machine's:
    a '>f4' array then holds the values its dtype says; zeros and moved bytes are alike in
    either order."""
    if not isinstance(dtype, np.dtype) or dtype.isnative or not plan.fills:
        return plan
    native, size = dtype.newbyteorder("="), dtype.itemsize
    fills: list[Fill] = []
    for f in plan.fills:
        if isinstance(f, ValueSequence):  # (its rule, made in that order)
            fills.append(dataclasses.replace(f, dtype=np.dtype(f.dtype).newbyteorder("S").str))
            continue
        whole = len(f) // size * size  # (a tensor fill's padding past its values: zeros)
        fills.append(np.frombuffer(f[:whole], native).astype(dtype).tobytes() + f[whole:])
    return dataclasses.replace(plan, fills=tuple(fills))


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
        # empty numpy outputs of the call's output type (a CAST's), else like the input
        numpy_type = backend.name == "numpy" and isinstance(dtype, np.dtype)
        self.made_as, self.many_made_as, self.tag = dtype if numpy_type else None, None, 0

    def __call__(
        self, ins: Sequence[Any], outs: Sequence[Any], restage: Callable[[list[Any]], list[Any]]
    ) -> list[Any]:
        if not ins and self.allocate:  # a generator: a new (numpy) array of its type
            results = list(outs)
            for k, shape in self.allocate:
                results[k] = np.empty(shape, self.dtype)
            return results
        return self._allocated(ins, outs)


class _Converted(_Call):
    """A compiled call run on arrays its backend does not take as they are (`Backend.own`:
    CPU torch tensors on numpy's, JAX arrays on numpy's and CUDA's; and arrays with no
    signature, each call compiled): each call binds them as the backend's arrays (numpy
    views, DLPack) and gives new outputs in the library of the input they are like."""

    def __init__(self, call: _Call) -> None:
        self.call = call
        self.backend, self.like, self.result_shape = call.backend, call.like, call.result_shape
        self.fresh = False  # (its __call__ binds the views)
        # the backend's one-pass binding of plain arrays (numpy's, of CPU torch tensors),
        # until a call's arrays are not all plain
        self.plain = getattr(call.backend, "plain_arrays", None)
        self.produce = call.produce if call.fresh or call.fresh_flats else None
        if self.produce is not None and self.plain is not None and len(call.new_shapes) == 1:
            self.warm_one = self._warm_one

    def _warm_one(self, ins: list[Any]) -> Any:
        """The one new result of a fresh call on plain arrays (CPU torch tensors), made by
        its plan's producer on their views (strided ones' flat buffers) and given back in
        their library; `_MISS` where they do not bind in one pass (the general path binds
        them one by one)."""
        plain, produce, call = self.plain, self.produce, self.call
        if plain is None or produce is None:
            return _MISS
        try:
            arrays = plain(ins)
        except (TypeError, RuntimeError, KeyError):
            return _MISS
        if call.fresh_flats:
            arrays = call.flat_inputs(arrays)
        return self.backend.in_library_of(produce(arrays), ins[self.like])

    def __call__(
        self, ins: Sequence[Any], outs: Sequence[Any], restage: Callable[[list[Any]], list[Any]]
    ) -> Any:
        as_array, call, plain = self.backend.as_array, self.call, self.plain
        arrays = None
        if plain is not None:
            try:
                arrays = plain(ins)
            except (TypeError, RuntimeError, KeyError):
                self.plain = None  # (bound one by one from now on)
        if arrays is None:
            arrays = [as_array(x) for x in ins]
        if call.fresh:  # (new outputs only, that nothing else sees)
            results = call.fresh_results(arrays)
        else:
            bound = [None if o is None else as_array(o) for o in outs]
            writable = [o is None or getattr(o.flags, "writeable", True) for o in bound]
            names = getattr(call, "output_names", None)  # (none where the outputs are empty)
            if not all(writable) and names is not None:  # (a conjugate view's values: a copy)
                refuse_unwritable(names, outs, writable)
            results = call(arrays, bound, restage)
        if results is _MISS:
            return results
        if not ins:  # a generator: its outputs are given, or new arrays of the backend's own
            return [r if o is None else o for r, o in zip(results, outs, strict=True)]
        in_library, like = self.backend.in_library_of, ins[self.like]
        return [in_library(r, like) if o is None else o for r, o in zip(results, outs, strict=True)]


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
