"""numpy arrays in the other byte order: where an operator reads values (indices, lengths, a
conversion's input, a zero test, x * Scale + Bias) it reads them as the array's dtype says,
the same answer as for the array in this machine's order; moves copy bytes and keep the
input's order; outputs in the other order receive the values byte-swapped."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import dmlops

X = np.arange(20, dtype=np.float32).reshape(5, 4)
ROWS = np.ones((5, 1), np.float32)


def _swapped(a: Any, dtype: str) -> np.ndarray[Any, Any]:
    """`a` as `dtype` in the other byte order than this machine's."""
    native = np.asarray(a, dtype)
    return native.astype(native.dtype.newbyteorder("S"))


CALLS: dict[str, Callable[[Callable[[Any, str], Any]], Any]] = {
    "gather": lambda t: dmlops.gather(X, t([4, 0, -1], "i8"), 0),
    "gather_elements": lambda t: dmlops.gather_elements(X, t([[1], [2], [0], [3], [1]], "i4"), 1),
    "gather_nd": lambda t: dmlops.gather_nd(X, t([[1], [3]], "i8")),
    "scatter_elements": lambda t: dmlops.scatter_elements(
        X, t([[1], [2], [0], [3], [1]], "i8"), ROWS, 1
    ),
    "scatter_nd": lambda t: dmlops.scatter_nd(X, t([[1], [4]], "i4"), np.ones((2, 4), np.float32)),
    "one_hot": lambda t: dmlops.one_hot(t([1, 2, 0], "u4"), 3, np.array([0.0, 1.0], np.float32)),
    "reverse_subsequences": lambda t: dmlops.reverse_subsequences(X, t([2, 0, 4, 1], "i8"), 0, 1),
    "max_unpooling": lambda t: dmlops.max_unpooling(
        np.ones((1, 1, 1, 2), np.float32), t([[[[0, 3]]]], "u8"), [1, 1, 2, 2]
    ),
    "nonzero": lambda t: dmlops.nonzero(t([0.0, -0.0, 2.0, np.nan, 0.0], "f4")),
    "nonzero_coordinates": lambda t: dmlops.nonzero_coordinates(t([[[[0.0, -0.0, 1.5]]]], "f2")),
    "cast to int32": lambda t: dmlops.cast(t([1.0, -2.7, 3e9, np.nan], "f4"), np.int32),
    "cast to float16": lambda t: dmlops.cast(t([1.0, -2.7, 1e-6, 7e4], "f4"), np.float16),
    "cast from float16": lambda t: dmlops.cast(t([1.0, -2.5, 6e-5, np.inf], "f2"), np.float32),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_values_read_in_either_byte_order_give_one_answer(name: str) -> None:
    """Three calls with the values in the other order (the first compiles, the others are
    warm: a call compiled for the values' byte-swapped copy is not found by the signature of
    the array it was made from, whose bits it would read as this machine's)."""
    call = CALLS[name]
    native = call(lambda a, d: np.asarray(a, d))
    for _ in range(3):
        swapped = call(_swapped)
        pairs = (
            zip(native, swapped, strict=True) if isinstance(native, tuple) else [(native, swapped)]
        )
        for mine, theirs in pairs:
            assert mine.dtype == theirs.dtype and mine.tobytes() == theirs.tobytes(), name


MIXED: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "join": ("JOIN.InputTensors[1]", lambda n, s: dmlops.join([n, s], 0)),
    "slice1 into out=": (
        "SLICE1.OutputTensor",
        lambda n, s: dmlops.slice1(n, [0, 0], [5, 4], [1, -1], out=s),
    ),
    "padding into out=": (
        "PADDING1.OutputTensor",
        lambda n, s: dmlops.padding(n[:4, :3], [0, 0], [1, 1], out=s),
    ),
    "scatter_nd updates": (
        "SCATTER_ND.UpdatesTensor",
        lambda n, s: dmlops.scatter_nd(n, np.array([[1], [4]]), s[:2]),
    ),
    "gather into out=": (
        "GATHER.OutputTensor",
        lambda n, s: dmlops.gather(n, np.arange(5), 0, out=s),
    ),
}


@pytest.mark.parametrize("name", list(MIXED))
def test_moved_arrays_of_two_byte_orders_are_refused(name: str) -> None:
    """A move whose arrays of one type are in two byte orders (bits moved from one into the
    other would be other values) is refused by field, the output untouched, on every call."""
    field, call = MIXED[name]
    swapped = _swapped(X, "f4")
    before = swapped.copy()
    for _ in range(2):
        with pytest.raises(dmlops.BindingError, match=re.escape(field) + ": .*byte order"):
            call(X, swapped)
        assert swapped.tobytes() == before.tobytes()
    both = _swapped(X, "f4")  # (one order throughout: moved as bits, values kept)
    got = call(both, _swapped(X, "f4"))
    assert got.dtype == both.dtype


def test_scale_bias_reads_values_and_keeps_the_inputs_order() -> None:
    """x * Scale + Bias of an array in the other order: the same values, a new array in the
    input's order (as a copy keeps it); a plain copy moves the bytes as they are."""
    x = _swapped([1.0, 2.5, -3.0], "f4")
    made = dmlops.element_wise_identity(x, scale_bias=[2.0, 1.0])
    assert made.dtype == x.dtype and made.tolist() == [3.0, 6.0, -5.0]
    assert dmlops.element_wise_identity(x).tobytes() == x.tobytes()
    out = np.zeros(3, x.dtype)
    assert dmlops.element_wise_identity(x, scale_bias=[2.0, 1.0], out=out) is out
    assert out.tolist() == [3.0, 6.0, -5.0]


def test_casts_into_the_other_byte_order() -> None:
    """A dtype or an `out` in the other byte order receives the converted values as numpy's
    astype gives them."""
    x = np.array([1.0, -2.7, 1e-6, 7e4, np.inf], np.float32)
    other = np.dtype(np.float16).newbyteorder("S")
    made = dmlops.cast(x, other)
    assert made.dtype == other and made.tolist() == x.astype(other).tolist()
    out = np.zeros(5, other)
    assert dmlops.cast(x, other, out=out) is out
    assert out.tobytes() == x.astype(other).tobytes()


def test_moves_keep_the_inputs_byte_order() -> None:
    x = _swapped(np.arange(6), "i4")
    made = dmlops.slice1(x, [0], [6], [-1])
    assert made.dtype == x.dtype and made.tolist() == [5, 4, 3, 2, 1, 0]


WRITTEN: dict[str, Callable[[str, Any], Any]] = {
    "fill_value_constant": lambda d, o: dmlops.fill_value_constant([2, 3], 7, dtype=d, out=o),
    "fill_value_sequence": lambda d, o: dmlops.fill_value_sequence([7], -3, 2, dtype=d, out=o),
    "diagonal_matrix": lambda d, o: dmlops.diagonal_matrix([3, 4], 1, 6.0, dtype=d, out=o),
    "diagonal_matrix1": lambda d, o: dmlops.diagonal_matrix1(
        None, -1, 1, 4.0, sizes=[3, 4], dtype=d, out=o
    ),
}


@pytest.mark.parametrize("dtype", ["f4", "i4", "f8", "u2", "c8"])
@pytest.mark.parametrize("name", list(WRITTEN))
def test_written_constants_take_the_outputs_byte_order(name: str, dtype: str) -> None:
    """A generator's values (a Value, a sequence) into a new array or an `out` in the other
    byte order hold the same values as in this machine's order (they were written in this
    machine's: 3.0 read back as 2.3e-41)."""
    if name == "fill_value_sequence" and dtype in ("c8", "u2", "f8"):
        pytest.skip("FILL_VALUE_SEQUENCE takes no FLOAT64 or complex type; -3 is no UINT16")
    native = np.dtype(dtype)
    other = native.newbyteorder("S")
    want = WRITTEN[name](native, None)
    made = WRITTEN[name](other, None)
    assert made.dtype == other
    np.testing.assert_array_equal(made, want)
    out = np.zeros(want.shape, other)
    assert WRITTEN[name](None if name == "fill_value_sequence" else other, out) is out
    np.testing.assert_array_equal(out, want)


def test_a_padding_value_and_a_band_value_amid_moved_bytes() -> None:
    """PADDING1's constant and DIAGONAL_MATRIX1's Value beside the input's moved bytes, in
    an array of the other byte order: every element reads as in this machine's order."""
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    swapped = x.astype(x.dtype.newbyteorder("S"))
    for call in (
        lambda a: dmlops.padding(a, [1, 0], [0, 2], "CONSTANT", 2.5),
        lambda a: dmlops.diagonal_matrix1(a, 0, 2, 7.0),
        lambda a: dmlops.tril(a, 1),
    ):
        got = call(swapped)
        assert got.dtype == swapped.dtype
        np.testing.assert_array_equal(got, call(x))
