"""Eager chains of dmlops operators on torch tensors, run as one block.

Each eager call that records a gradient notes on its autograd node how its outputs were
made: the operator, its arguments and its inputs (weakly, with their versions). A call whose
inputs were so made by earlier calls (four slices of one tensor, joined: a Focus stem) runs
the whole chain from the chain's first inputs as one `block.Block`: the same values,
one plan forward, and a backward that is one pass writing each gradient byte once (no
SLICE_GRAD zero fills, no adds of partial gradients). The earlier calls' outputs stay what
they were; only the gradient path of the new output skips them.

A chain is not composed through an input that was changed in place since it was made, whose
first inputs changed or died, that keeps its gradient or has hooks (its gradient must pass
through it), or past `MAX_NODES` operators; nor when the block would read an element twice
(overlapping slices: the gradient is then a sum), needs an intermediate buffer, mixes types
or feature levels, or reads a first input that is not contiguous. Such calls run as before.
"""

from __future__ import annotations

import functools
import operator
import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import Any, NamedTuple

from torch import Tensor

from .block import Block

__all__ = ["MAX_NODES", "run"]

MAX_NODES = 16  # operators one block may replay
_CACHE_SIZE = 256
_ATTRIBUTE = "dmlops_link"


class _Link(NamedTuple):
    """How a node's outputs were made: `sig` (the operator, its arguments, and its inputs as
    first inputs by index or as earlier links), the first inputs (weak) and their versions
    then, each output's version after the call, and how many operators."""

    sig: Hashable
    roots: tuple[weakref.ref[Tensor], ...]
    versions: tuple[int, ...]
    own: tuple[int, ...]
    nodes: int


def _link_of(t: Tensor) -> _Link | None:
    """The link of the node that made `t`, where the chain may be composed through it."""
    node = t.grad_fn
    link: _Link | None = getattr(node, _ATTRIBUTE, None) if node is not None else None
    if link is None or t.retains_grad or t._backward_hooks:
        return None
    if t._version != link.own[t.output_nr]:
        return None
    for ref, version in zip(link.roots, link.versions, strict=True):
        root = ref()
        if root is None or root._version != version:
            return None
    return link


@functools.lru_cache(maxsize=64)
def _roots(n: int) -> tuple[tuple[str, int], ...]:
    return tuple(("root", k) for k in range(n))


_ONE_ROOT = _roots(1)


def _compose(
    name: str, rest: tuple[Any, ...], tensors: Sequence[Tensor], links: Sequence[_Link | None]
) -> tuple[Hashable, list[Tensor], int]:
    """The chain's signature for this call, its first inputs, and its operator count."""
    if len(tensors) == 1 and links[0] is None:
        return (name, rest, _ONE_ROOT), list(tensors), 1
    if not any(links) and len({id(t) for t in tensors}) == len(tensors):  # all first inputs
        return (name, rest, _roots(len(tensors))), list(tensors), 1
    roots: list[Tensor] = []
    where: dict[int, int] = {}
    children: list[Hashable] = []
    nodes = 1
    for t, link in zip(tensors, links, strict=True):
        found = [t] if link is None else [r() for r in link.roots]  # (alive: see _link_of)
        mapping = []
        for r in found:
            k = where.get(id(r))
            if k is None:
                k = where[id(r)] = len(roots)
                roots.append(r)
            mapping.append(k)
        if link is None:
            children.append(("root", mapping[0]))
        else:
            children.append(("link", link.sig, tuple(mapping), t.output_nr))
            nodes += link.nodes
    return (name, rest, tuple(children)), roots, nodes


def _replay(g: Any, sig: Any, inputs: Sequence[Any], made: dict[Any, list[Any]]) -> list[Any]:
    """The graph nodes of signature `sig` on these graph inputs (each node made once)."""
    name, rest, children = sig
    key = (sig, tuple(id(x) for x in inputs))
    found = made.get(key)
    if found is None:
        args = []
        for child in children:
            if child[0] == "root":
                args.append(inputs[child[1]])
            else:
                _, inner, mapping, k = child
                args.append(_replay(g, inner, [inputs[m] for m in mapping], made)[k])
        found = made[key] = _GRAPH[name](g, args, rest)
    return found


_GRAPH: dict[str, Callable[[Any, list[Any], tuple[Any, ...]], list[Any]]] = {
    "slice": lambda g, xs, r: [g.slice(xs[0], r[0], r[1], r[2])],
    "slice1": lambda g, xs, r: [g.slice1(xs[0], r[0], r[1], r[2], r[3])],
    "split": lambda g, xs, r: list(g.split(xs[0], r[0], r[1])),
    "join": lambda g, xs, r: [g.join(xs, r[0])],
    "depth_to_space": lambda g, xs, r: [g.depth_to_space(xs[0], r[0], r[1])],
    "space_to_depth": lambda g, xs, r: [g.space_to_depth(xs[0], r[0], r[1])],
}


def _levels(sig: Any, found: set[Any]) -> set[Any]:
    _, rest, children = sig
    found.add(rest[-1])
    for child in children:
        if child[0] == "link":
            _levels(child[1], found)
    return found


_BLOCKS: dict[Hashable, Block | None] = {}


def _block(sig: Any, roots: Sequence[Tensor]) -> Block | None:
    """The block replaying `sig` on tensors like `roots`, compiled with its backward (None
    where the chain has no one-pass backward or does not compile: it then runs unfused)."""
    key = (sig, tuple([(r.shape, r.dtype, r.device) for r in roots]))
    if key in _BLOCKS:
        return _BLOCKS[key]
    levels = _levels(sig, set())
    block: Block | None = None
    if len(levels) == 1:

        def build(g: Any, *inputs: Any) -> list[Any]:
            return _replay(g, sig, inputs, {})

        block = Block(build, levels.pop())
        try:  # (an element read twice is refused here, not when the backward runs)
            block.prepare(*roots)
        except Exception:  # noqa: BLE001 - a chain that does not compile runs unfused
            block = None  # (and the calls one by one say what is wrong, if anything is)
    if len(_BLOCKS) >= _CACHE_SIZE:
        _BLOCKS.pop(next(iter(_BLOCKS)))
    _BLOCKS[key] = block
    return block


def run(
    name: str, tensors: Sequence[Tensor], rest: tuple[Any, ...], apply: Callable[[], Any]
) -> Any:
    """Operator `name` on `tensors` (its other arguments `rest`, hashable, level last), as
    one block with the chain that made its inputs where one did, else by `apply()`; either
    way its outputs' node records the call."""
    links = [None if t.grad_fn is None else _link_of(t) for t in tensors]
    sig, roots, nodes = _compose(name, rest, tensors, links)
    result = None
    if nodes > 1 and nodes <= MAX_NODES and all(r.is_contiguous() for r in roots):
        block = _block(sig, roots)
        if block is not None:
            made = block(*roots)
            result = list(made) if name == "split" else made[0]
    if result is None:
        result = apply()
        if nodes > 1:  # not composed: a new chain starts here
            sig, roots, nodes = _compose(name, rest, tensors, [None] * len(tensors))
    outs = result if isinstance(result, list) else [result]
    node = outs[0].grad_fn
    if node is not None:  # (map, not comprehensions: this runs on every eager call)
        link = _Link(
            sig,
            tuple(map(weakref.ref, roots)),
            tuple(map(_VERSION, roots)),
            tuple(map(_VERSION, outs)),
            nodes,
        )
        try:  # noqa: SIM105 - (contextlib.suppress costs this hot path a context manager)
            setattr(node, _ATTRIBUTE, link)
        except AttributeError:  # (a node of torch's own: no chain)
            pass
    return result


_VERSION = operator.attrgetter("_version")
