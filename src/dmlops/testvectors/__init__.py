"""Test vectors for DirectML backend authors: random DxDispatch model files and their answers.

`generate` writes DxDispatch-style JSON models of random SLICE, SLICE1, SLICE_GRAD, SPLIT,
JOIN, TILE, PADDING, PADDING1, DEPTH_TO_SPACE(1), SPACE_TO_DEPTH(1), UPSAMPLE_2D,
FILL_VALUE_CONSTANT, ELEMENT_WISE_IDENTITY, DIAGONAL_MATRIX, MAX_UNPOOLING,
NONZERO_COORDINATES, GATHER,
GATHER_ELEMENTS, GATHER_ND, SCATTER_ELEMENTS, SCATTER_ND, ONE_HOT and REVERSE_SUBSEQUENCES
descriptors (their data types, ranks 1-8, packed, padded and permuted tensor strides,
offsets, negative strides, partial SLICE1 outputs), a sidecar per model with the expected
printout of every output resource (valid models) or the rule the descriptor breaks (invalid
ones), and an index. Element values are small integers or quarters, which DxDispatch's
printout shows exactly; index tensors hold indices inside their axis (negative ones from
DML_FEATURE_LEVEL_3_0, where the index types are signed), a scatter's indices never name one
element twice (DirectML leaves that order undefined), and sequence lengths lie in [0, the
axis' size]. NONZERO_COORDINATES' inputs are a third zeros (-0.0 among them), and its
sidecar marks the coordinates' rows past the count "*" (DirectML leaves them undefined).
`check` compares a printout with a sidecar, element by element, "*" matching anything.

`descriptors.py` draws valid descriptors, `broken.py` breaks them, `models.py` writes the
models and sidecars, `check.py` reads a printout against a sidecar."""

from __future__ import annotations

from .check import check
from .descriptors import OPERATORS
from .models import generate

__all__ = ["generate", "check", "OPERATORS"]
