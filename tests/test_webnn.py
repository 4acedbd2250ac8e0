"""WebNN slice, split and concat: the specification's semantics and checks."""

from __future__ import annotations

import numpy as np
import pytest

from dmlops import DmlError, webnn


def test_slice_with_and_without_strides() -> None:
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    np.testing.assert_array_equal(webnn.slice(x, [0, 1, 2], [2, 3, 3]), x[0:2, 1:4, 2:5])
    np.testing.assert_array_equal(
        webnn.slice(x, [0, 1, 0], [3, 3, 5], [2, 2, 3]), x[0:3:2, 1:4:2, 0:5:3]
    )


@pytest.mark.parametrize(
    "starts, sizes, strides, match",
    [
        ([0, 4], [1, 1], None, r"webnn\.slice: starts\[1\] is 4"),
        ([0, 0], [1, 0], None, r"sizes\[1\] is 0: must be at least 1"),
        ([0, 2], [1, 3], None, r"starts\[1\] \+ sizes\[1\] = 5 exceeds 4"),
        ([0, 0], [1, 1], [1, 0], r"strides\[1\] is 0"),
        ([0], [1], None, r"starts has 1 entries, input rank is 2"),
    ],
)
def test_slice_checks(starts, sizes, strides, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DmlError, match=match):
        webnn.slice(np.zeros((3, 4), np.float32), starts, sizes, strides)


def test_split_count_and_sizes() -> None:
    x = np.arange(24, dtype=np.int32).reshape(4, 6)
    assert [p.tolist() for p in webnn.split(x, 2)] == [x[:2].tolist(), x[2:].tolist()]
    parts = webnn.split(x, [1, 2, 3], axis=1)
    assert [p.shape for p in parts] == [(4, 1), (4, 2), (4, 3)]
    np.testing.assert_array_equal(np.concatenate(parts, axis=1), x)
    with pytest.raises(DmlError, match=r"webnn\.split: 6 does not divide into 4 equal parts"):
        webnn.split(x, 4, axis=1)
    with pytest.raises(DmlError, match=r"splits \[1, 2\] sum to 3, dimension 1 is 6"):
        webnn.split(x, [1, 2], axis=1)
    with pytest.raises(DmlError, match=r"axis 2 is outside \[0, 1\]"):
        webnn.split(x, 2, axis=2)


def test_concat() -> None:
    a, b = np.ones((2, 3), np.float16), np.zeros((2, 1), np.float16)
    np.testing.assert_array_equal(webnn.concat([a, b], 1), np.concatenate([a, b], 1))
    with pytest.raises(
        DmlError, match=r"webnn\.concat: inputs\[1\] has shape \[2, 1\], incompatible"
    ):
        webnn.concat([a, b], 0)
    with pytest.raises(DmlError, match=r"inputs\[1\] has data type float32"):
        webnn.concat([a, b.astype(np.float32)], 1)
    with pytest.raises(DmlError, match=r"inputs is empty"):
        webnn.concat([], 0)
