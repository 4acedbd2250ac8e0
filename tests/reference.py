"""Deliberately naive references, written from the seed pages' pseudo-code.

Each function returns the element mapping of an operator as a list of
(output index, output coordinates, input index, input coordinates); nothing
here uses dmlops' plans.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

Mapping = list[tuple[int, tuple[int, ...], int, tuple[int, ...]]]


def _coords(sizes: Sequence[int]) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(n) for n in sizes)))


def slice_mapping(offsets, strides, out_sizes) -> Mapping:  # type: ignore[no-untyped-def]
    # OutputTensor[OutputCoordinates] = InputTensor[Offsets + Strides * OutputCoordinates]
    m: Mapping = []
    for c in _coords(out_sizes):
        src = tuple(offsets[i] + strides[i] * c[i] for i in range(len(c)))
        m.append((0, c, 0, src))
    return m


def slice1_mapping(window_offsets, window_sizes, window_strides, out_sizes) -> Mapping:  # type: ignore[no-untyped-def]
    copy_start = list(window_offsets)
    for i in range(len(copy_start)):
        if window_strides[i] < 0:
            copy_start[i] += window_sizes[i] - 1
    m: Mapping = []
    for c in _coords(out_sizes):
        src = tuple(copy_start[i] + window_strides[i] * c[i] for i in range(len(c)))
        m.append((0, c, 0, src))
    return m


def split_mapping(out_sizes_list, axis) -> Mapping:  # type: ignore[no-untyped-def]
    m: Mapping = []
    start = 0
    for k, sizes in enumerate(out_sizes_list):
        for c in _coords(sizes):
            src = tuple(c[i] + (start if i == axis else 0) for i in range(len(c)))
            m.append((k, c, 0, src))
        start += sizes[axis]
    return m


def join_mapping(in_sizes_list, axis) -> Mapping:  # type: ignore[no-untyped-def]
    m: Mapping = []
    start = 0
    for k, sizes in enumerate(in_sizes_list):
        for c in _coords(sizes):
            dst = tuple(c[i] + (start if i == axis else 0) for i in range(len(c)))
            m.append((0, dst, k, c))
        start += sizes[axis]
    return m


def apply_to_buffers(
    mapping: Mapping, element_size: int, ins, in_strides, outs, out_strides
) -> None:  # type: ignore[no-untyped-def]
    """Copy element by element between raw byte buffers (bytearrays) with element strides."""
    for k, oc, j, ic in mapping:
        src = sum(a * b for a, b in zip(ic, in_strides[j])) * element_size
        dst = sum(a * b for a, b in zip(oc, out_strides[k])) * element_size
        outs[k][dst : dst + element_size] = ins[j][src : src + element_size]


def apply_to_arrays(
    mapping: Mapping, ins: Sequence[np.ndarray], outs: Sequence[np.ndarray]
) -> None:
    """Copy element by element between numpy arrays of any layout."""
    for k, oc, j, ic in mapping:
        outs[k][oc] = ins[j][ic]


def slice_grad_mapping(window_offsets, window_sizes, window_strides, in_sizes, out_sizes):  # type: ignore[no-untyped-def]
    """(mapping, zeroed output coordinates): each output coordinate looks for the input
    gradient coordinate c with CopyStart + strides * c == it, scanning every c; those that
    find none are zero."""
    copy_start = list(window_offsets)
    for i in range(len(copy_start)):
        if window_strides[i] < 0:
            copy_start[i] += window_sizes[i] - 1
    m: Mapping = []
    zeroed = []
    for o in _coords(out_sizes):
        c = []
        for i in range(len(o)):
            hits = [k for k in range(in_sizes[i]) if copy_start[i] + window_strides[i] * k == o[i]]
            c.append(hits[0] if hits else None)
        if None in c:
            zeroed.append(o)
        else:
            m.append((0, o, 0, tuple(c)))
    return m, zeroed
