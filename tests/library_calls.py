"""The operator calls the tests of other libraries' arrays share: each on (x, rows), x a
[5, 4, 3] float32 array of the library (or numpy's, for the expected answer)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import dmlops


def library_calls(cast_to: Any = np.float16) -> dict[str, Callable[[Any, Any], Any]]:
    """Seven operators' calls; CAST's to `cast_to` (a type the library has)."""
    return {
        "slice1": lambda x, r: dmlops.slice1(x, [0, 0, 0], [5, 4, 3], [-2, 1, -1]),
        "join": lambda x, r: dmlops.join([x, x], 1),
        "split": lambda x, r: dmlops.split(x, 1, [1, 3]),
        "tile": lambda x, r: dmlops.tile(x, [1, 2, 1]),
        "padding": lambda x, r: dmlops.padding(x, [0, 1, 0], [1, 0, 2], mode="reflection"),
        "gather": lambda x, r: dmlops.gather(x, r, 0),
        "cast": lambda x, r: dmlops.cast(x, cast_to),
    }
