"""torch's own OpInfo samples (`torch.testing._internal.common_methods_invocations.op_db`)
for the torch operators dmlops mirrors — take, index_select, gather, one_hot, tril, triu,
tile, constant pad — run through dmlops on the CPU and on CUDA: every sample either gives
torch's answer bit for bit or is refused by name with a DmlError; nothing crashes. (Skips
where torch's test utilities, which need `expecttest`, are not installed.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")

import dmlops  # noqa: E402
from conftest import TORCH_DEVICES  # noqa: E402


def _pad(x: Any, pad: Any, mode: str = "constant", value: Any = None) -> Any:
    if mode != "constant":
        raise _NotMirrored
    rank = x.dim()
    pairs = list(pad) + [0] * (2 * rank - len(pad))
    start = [pairs[2 * (rank - 1 - d)] for d in range(rank)]
    end = [pairs[2 * (rank - 1 - d) + 1] for d in range(rank)]
    return dmlops.padding(x, start, end, "CONSTANT", 0 if value is None else value)


def _tile(x: Any, dims: Any) -> Any:
    dims = list(dims)
    if len(dims) < x.dim():
        dims = [1] * (x.dim() - len(dims)) + dims
    elif len(dims) > x.dim():
        x = x.reshape([1] * (len(dims) - x.dim()) + list(x.shape))
    return dmlops.tile(x, dims)


def _index_select(x: Any, dim: int, index: Any) -> Any:
    """torch's index_select: x's shape with dim's size the index's count (a 0-D index keeps
    the dimension; a 0-D x stays 0-D)."""
    got = dmlops.gather(x, index, dim)
    if x.dim() == 0:
        return got.reshape(())
    shape = list(x.shape)
    shape[dim % x.dim()] = index.numel()
    return got.reshape(shape)


def _one_hot(x: Any, num_classes: int = -1) -> Any:
    count = int(x.max()) + 1 if num_classes == -1 and x.numel() else num_classes
    if count < 0:
        raise _NotMirrored
    return dmlops.one_hot(x, count, torch.tensor([0, 1], device=x.device), -1)


class _NotMirrored(Exception):
    """A sample of a variant dmlops' call does not mirror (another mode)."""


MIRRORS: dict[str, Callable[..., Any]] = {
    "take": lambda x, index: dmlops.gather(x.reshape(-1), index, 0),
    "index_select": lambda x, dim, index: _index_select(x, dim, index),
    "gather": lambda x, dim, index, sparse_grad=False: dmlops.gather_elements(x, index, dim),
    "nn.functional.one_hot": _one_hot,
    "tril": lambda x, diagonal=0: dmlops.tril(x, diagonal),
    "triu": lambda x, diagonal=0: dmlops.triu(x, diagonal),
    "tile": _tile,
    "nn.functional.pad": _pad,
}


def _same(got: Any, want: Any) -> bool:
    got = torch.as_tensor(got).cpu()
    want = want.cpu()
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if want.dtype.is_floating_point:
        return bool(
            torch.equal(torch.isnan(got), torch.isnan(want))
            and torch.equal(torch.nan_to_num(got), torch.nan_to_num(want))
        )
    return bool(torch.equal(got, want))


@pytest.mark.parametrize("device", TORCH_DEVICES)
def test_opinfo_samples_answer_as_torch_or_are_refused_by_name(device: str) -> None:
    from torch.testing._internal.common_methods_invocations import op_db

    answered, refused, wrong = 0, 0, []
    for op in op_db:
        mirror = MIRRORS.get(op.name)
        if mirror is None or op.variant_test_name not in ("", "constant"):
            continue
        for dtype in (torch.float32, torch.float16, torch.int64, torch.uint8, torch.bool):
            if dtype not in op.supported_dtypes(device.split(":")[0]):
                continue
            for sample in op.sample_inputs(device, dtype, requires_grad=False):
                want = op(sample.input, *sample.args, **sample.kwargs)
                try:
                    got = mirror(sample.input, *sample.args, **sample.kwargs)
                except _NotMirrored:
                    continue
                except dmlops.DmlError:
                    refused += 1
                    continue
                answered += 1
                if not _same(got, want):
                    wrong.append((op.name, dtype, tuple(sample.input.shape), sample.args))
    assert not wrong, (len(wrong), wrong[:8])
    assert answered > 300, (answered, refused)
