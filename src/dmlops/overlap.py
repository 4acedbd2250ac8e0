"""Which bytes a plan reads and writes, and whether an output binding meets another binding.

A plan knows, for every binding, the bytes its copies touch (relative to the
binding's start). Given the bound addresses, `find_overlaps` reports each
input/output or output/output pair that share at least one byte: first by
address range, then exactly, element by element, with numpy's bounded
Diophantine solver over the copies' strided boxes (no memory is read; the
addresses may be device addresses).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .plan import Plan, StridedCopy

__all__ = ["Overlap", "ManySpans", "describe", "find_overlaps", "owners_apart", "spans_meet"]

_MAX_WORK = 1 << 16
_TooHard: type[Exception] = getattr(np, "exceptions", np).TooHardError


@dataclass(frozen=True)
class Overlap:
    """Output binding `output` shares its bytes [low, high) with another binding.

    `low` and `high` count from the start of the output binding.

    `kind` is 'input' or 'output'; `other` is that binding's index.
    """

    output: int
    kind: str
    other: int
    low: int
    high: int


class _Box:
    """A strided box of `element_size`-byte elements at an address, seen through numpy."""

    def __init__(self, address: int, copy: StridedCopy, side: str, element_size: int) -> None:
        offset = copy.src_offset if side == "src" else copy.dst_offset
        strides = copy.src_strides if side == "src" else copy.dst_strides
        self.__array_interface__ = {
            "shape": copy.shape,
            "typestr": f"|V{element_size}",
            "data": (address + offset, True),
            "strides": tuple(s * element_size for s in strides),
            "version": 3,
        }


def _share(a: _Box, b: _Box) -> bool:
    try:
        shares: Any = np.shares_memory  # numpy's stubs allow only -1 and 0 for max_work
        return bool(shares(np.asarray(a), np.asarray(b), max_work=_MAX_WORK))
    except _TooHard:
        return True  # not provably apart: count it as an overlap


def _exact(
    plan: Plan,
    side_a: str,
    index_a: int,
    address_a: int,
    index_b: int,
    address_b: int,
) -> bool:
    """Whether a byte read (side_a 'src') or written ('dst') at binding a is written at output b."""
    es = plan.element_size
    mine = [c for c in plan.copies if (c.src if side_a == "src" else c.dst) == index_a]
    theirs = [c for c in plan.copies if c.dst == index_b]
    for ca in mine:
        box_a = _Box(address_a, ca, side_a, es)
        for cb in theirs:
            if ca is cb and side_a == "dst":
                continue
            if _share(box_a, _Box(address_b, cb, "dst", es)):
                return True
    return False


_SMALL = 16


def _pairs_small(
    a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]], same: bool
) -> list[tuple[int, int]]:
    return [
        (i, j)
        for i, (alo, ahi) in enumerate(a)
        for j, (blo, bhi) in enumerate(b[:i] if same else b)
        if max(alo, blo) < min(ahi, bhi)
    ]


def _pairs_large(
    a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], same: bool
) -> list[tuple[int, int]]:
    """As _pairs_small over [low, high) rows, vectorised; all-pairs only once a sort finds any."""
    if same:
        order = np.argsort(a[:, 0], kind="stable")
        lows, highs = a[order, 0], a[order, 1]
        if bool(np.all(lows[1:] >= np.maximum.accumulate(highs)[:-1])):
            return []  # sorted by start, no range reaches past the next one's start
    elif len(a) == 1 or len(b) == 1:
        lo, hi = (a, b) if len(a) == 1 else (b, a)
        hit = np.nonzero((hi[:, 0] < lo[0, 1]) & (hi[:, 1] > lo[0, 0]))[0]
        return [(0, int(k)) if len(a) == 1 else (int(k), 0) for k in hit]
    hit = np.maximum(a[:, None, 0], b[None, :, 0]) < np.minimum(a[:, None, 1], b[None, :, 1])
    if same:
        hit &= np.tri(len(a), len(b), -1, dtype=bool)
    return [(int(i), int(j)) for i, j in zip(*np.nonzero(hit), strict=True)]


def spans_meet(
    read_spans: Sequence[tuple[int, int, int]],
    in_addresses: Sequence[int],
    write_spans: Sequence[tuple[int, int, int]],
    out_addresses: Sequence[int],
) -> bool:
    """Whether any write span meets a read span or another write span; a span is (binding
    index, low, high): the bytes [address + low, address + high) of that input or output."""
    if len(write_spans) == 1:  # (the common case: one pass, no pairs)
        j, lo, hi = write_spans[0]
        if hi <= lo:  # empty spans meet none
            return False
        w_low, w_high = out_addresses[j] + lo, out_addresses[j] + hi
        for k, lo, hi in read_spans:
            at = in_addresses[k]
            if at + lo < w_high and w_low < at + hi and lo < hi:
                return True
        return False
    written = [
        (out_addresses[j] + lo, out_addresses[j] + hi) for j, lo, hi in write_spans if hi > lo
    ]
    for k, lo, hi in read_spans:
        if hi <= lo:
            continue
        low, high = in_addresses[k] + lo, in_addresses[k] + hi
        for w_low, w_high in written:
            if low < w_high and w_low < high:
                return True
    for j in range(1, len(written)):
        low, high = written[j]
        for w_low, w_high in written[:j]:
            if low < w_high and w_low < high:
                return True
    return False


class ManySpans:
    """`spans_meet` for many spans, vectorised: the spans' bindings and offsets kept as
    arrays once, each test two sorts' worth of numpy calls instead of a Python loop over
    every pair (a join or split of hundreds of arrays)."""

    def __init__(
        self,
        read_spans: Sequence[tuple[int, int, int]],
        write_spans: Sequence[tuple[int, int, int]],
    ) -> None:
        reads = np.array([s for s in read_spans if s[2] > s[1]], np.int64).reshape(-1, 3)
        writes = np.array([s for s in write_spans if s[2] > s[1]], np.int64).reshape(-1, 3)
        self.read_at, self.read_low, self.read_high = reads.T.copy()
        self.write_at, self.write_low, self.write_high = writes.T.copy()

    def __call__(self, in_addresses: Sequence[int], out_addresses: Sequence[int]) -> bool:
        """Whether any write span meets a read span or another write span."""
        if len(self.write_at) == 0:
            return False
        outs = np.fromiter(out_addresses, np.int64, len(out_addresses))[self.write_at]
        w_low, w_high = outs + self.write_low, outs + self.write_high
        if len(w_low) > 1:
            order = np.argsort(w_low, kind="stable")
            w_low, w_high = w_low[order], w_high[order]
            if bool(np.any(w_low[1:] < np.maximum.accumulate(w_high)[:-1])):
                return True  # two writes meet
        if len(self.read_at) == 0:
            return False
        ins = np.fromiter(in_addresses, np.int64, len(in_addresses))[self.read_at]
        r_low, r_high = ins + self.read_low, ins + self.read_high
        # the writes are apart and sorted, so their ends are sorted too: the first write
        # that ends after a read starts is the only one that can meet it
        first = np.searchsorted(w_high, r_low, side="right")
        inside = first < len(w_high)
        return bool(np.any(w_low[first[inside]] < r_high[inside]))


def find_overlaps(
    plan: Plan,
    input_addresses: Sequence[int],
    output_addresses: Sequence[int],
) -> list[Overlap]:
    """Every (output, input) and (output, output) pair of bindings whose touched bytes meet."""
    if len(input_addresses) + len(output_addresses) <= _SMALL:
        outs = [
            (a + lo, a + hi)
            for a, (lo, hi) in zip(output_addresses, plan.output_spans, strict=True)
        ]
        ins = [
            (a + lo, a + hi) for a, (lo, hi) in zip(input_addresses, plan.input_spans, strict=True)
        ]
        in_pairs = _pairs_small(outs, ins, False)
        out_pairs = _pairs_small(outs, outs, True)
    else:
        in_spans, out_spans = plan.span_arrays
        ins_a = np.array(input_addresses, dtype=np.int64)[:, None] + in_spans
        outs_a = np.array(output_addresses, dtype=np.int64)[:, None] + out_spans
        in_pairs = _pairs_large(outs_a, ins_a, False)
        out_pairs = _pairs_large(outs_a, outs_a, True)
        if not in_pairs and not out_pairs:
            return []
        ins = [(int(lo), int(hi)) for lo, hi in ins_a]
        outs = [(int(lo), int(hi)) for lo, hi in outs_a]
    found: list[Overlap] = []
    for kind, pairs, others, addresses in (
        ("input", in_pairs, ins, input_addresses),
        ("output", out_pairs, outs, output_addresses),
    ):
        side = "src" if kind == "input" else "dst"
        for j, i in pairs:
            if _exact(plan, side, i, int(addresses[i]), j, int(output_addresses[j])):
                low = max(outs[j][0], others[i][0]) - int(output_addresses[j])
                high = min(outs[j][1], others[i][1]) - int(output_addresses[j])
                found.append(Overlap(j, kind, i, low, high))
    return found


_MANY = 8  # inputs from which `owners` reads their owners in one call


def owners_apart(
    owner: Callable[[Any], object | None],
    inputs: Sequence[Any],
    outputs: Sequence[Any],
    owners: Callable[[Sequence[Any]], list[object | None]] | None = None,
) -> bool:
    """True when every output's memory has a known owner that no other binding shares.

    Distinct allocations cannot overlap, so no address needs to be read. `owners`: the
    owners of many arrays in one call (the numpy backend's, in C), where there is one.
    """
    if len(outputs) == 1:  # the common call: one output, its owner against each input's
        mine = owner(outputs[0])
        if mine is None:
            return False
        if owners is not None and len(inputs) >= _MANY:
            theirs_all = set(map(id, owners(inputs)))
            return id(mine) not in theirs_all and id(None) not in theirs_all
        for x in inputs:
            theirs = owner(x)
            if theirs is None or theirs is mine:
                return False
        return True
    out_owners = list(map(owner, outputs))
    taken = set(map(id, out_owners))
    if len(taken) < len(out_owners) or id(None) in taken:
        return False
    taken.add(id(None))
    return taken.isdisjoint(map(id, map(owner, inputs)))


def describe(overlap: Overlap, input_names: Sequence[str], output_names: Sequence[str]) -> str:
    """'OutputTensor binding shares bytes ... with InputTensor binding', for messages."""
    other = (input_names if overlap.kind == "input" else output_names)[overlap.other]
    return (
        f"{output_names[overlap.output]} binding overlaps {other} binding: its bytes "
        f"[{overlap.low}, {overlap.high}) are "
        f"{'also read from ' if overlap.kind == 'input' else 'also written through '}{other}; "
        "an operator's output may not overlap its other bindings"
    )
