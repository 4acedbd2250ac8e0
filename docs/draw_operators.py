"""Draw the pictures of docs/operators.md: the six worked examples, SLICE_GRAD's page
example and one rejected descriptor per validation rule family. Run from the repository root:

    python docs/draw_operators.py
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from dmlops.ops import (
    JoinDesc,
    OperatorDesc,
    Padding1Desc,
    Slice1Desc,
    SliceDesc,
    SliceGradDesc,
    SplitDesc,
    TileDesc,
)
from dmlops.picture import draw
from dmlops.tensor import BufferTensorDesc, DataType
from dmlops.worked_examples import WORKED_EXAMPLES

OUT = Path(__file__).parent / "pictures"


def _t(*sizes: int, dt: DataType = DataType.FLOAT32) -> BufferTensorDesc:
    return BufferTensorDesc(dt, sizes)


# One rejected descriptor per rule family: (file stem, level, descriptor).
REJECTED: list[tuple[str, str, OperatorDesc]] = [
    (
        "rule_window_bounds",
        "4_1",
        Slice1Desc(_t(1, 1, 4, 4), _t(1, 1, 2, 2), [0, 0, 1, 2], [1, 1, 3, 3], [1, 1, 2, 2]),
    ),
    (
        "rule_zero_stride",
        "4_1",
        Slice1Desc(_t(1, 1, 4, 4), _t(1, 1, 2, 1), [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, 2, 0]),
    ),
    (
        "rule_output_sizes",
        "4_1",
        Slice1Desc(_t(1, 1, 4, 4), _t(1, 1, 3, 2), [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, 2, 2]),
    ),
    (
        "rule_slice_strides",
        "4_1",
        SliceDesc(_t(1, 1, 4, 4), _t(1, 1, 2, 2), [0, 0, 1, 0], [1, 1, 2, 2], [1, 1, -2, 3]),
    ),
    (
        "rule_split_sizes",
        "4_1",
        SplitDesc(_t(1, 1, 6, 2), [_t(1, 1, 2, 2), _t(1, 1, 3, 2)], 2),
    ),
    (
        "rule_data_types",
        "4_1",
        JoinDesc([_t(1, 1, 2, 3), _t(1, 1, 2, 2, dt=DataType.FLOAT16)], _t(1, 1, 2, 5), 3),
    ),
    (
        "rule_feature_level",
        "3_0",
        JoinDesc([_t(2, 3), _t(2, 2)], _t(2, 5), 1),
    ),
]


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for k, example in enumerate(WORKED_EXAMPLES):
        fig = draw(example.desc, OUT / f"example_{k + 1}.png", values=[example.make_input()])
        plt.close(fig)
    # SLICE_GRAD's page: SLICE1 took [[a, c], [i, k]] (here 1, 3, 9, 11) with strides 2
    grad = SliceGradDesc(_t(2, 2), _t(4, 4), [0, 0], [4, 4], [2, 2])
    values = [np.array([[1, 3], [9, 11]], np.float32)]
    plt.close(draw(grad, OUT / "slice_grad_example.png", values=values))
    page = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8]], np.float32)
    pad = Padding1Desc(_t(4, 4), _t(6, 8), "REFLECTION", None, 0, [1, 2], [1, 2])
    plt.close(draw(pad, OUT / "padding1_reflection.png", "5_0", values=[page]))
    tile = TileDesc(_t(2, 3), _t(4, 6), [2, 2])
    values = [np.arange(1, 7, dtype=np.float32).reshape(2, 3)]
    plt.close(draw(tile, OUT / "tile_example.png", values=values))
    # the Concepts page: a SLICE1 with a negative stride, one strided copy
    plan = Slice1Desc(_t(4, 6), _t(2, 3), [0, 0], [4, 6], [-2, 2])
    values = [np.arange(24, dtype=np.float32).reshape(4, 6)]
    plt.close(draw(plan, OUT / "concepts_plan.png", values=values))
    bad = TileDesc(_t(2, 3), _t(4, 5), [2, 2])
    plt.close(draw(bad, OUT / "rule_tile_sizes.png"))
    for stem, level, desc in REJECTED:
        plt.close(draw(desc, OUT / f"{stem}.png", level))


if __name__ == "__main__":
    main()
