"""Export data-movement modules with torch's two ONNX exporters, as test data for dmlops.

Run where torch (and onnxscript, for the dynamo exporter) is installed:
    python benchmarks/export_models.py OUTDIR [NAME ...]
Writes OUTDIR/<module>__<exporter>_opset<N>.onnx and a .npz beside it with the
inputs and torch's own outputs; tests/test_exported.py runs every one through
dmlops.onnx.run and compares bit for bit.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

import numpy as np
import torch
from torch import nn


class FocusStem(nn.Module):
    def forward(self, x):  # type: ignore[no-untyped-def]
        return torch.cat(
            [x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]], 1
        )


class UNetCropConcat(nn.Module):
    def forward(self, skip, up):  # type: ignore[no-untyped-def]
        dh = (skip.shape[2] - up.shape[2]) // 2
        dw = (skip.shape[3] - up.shape[3]) // 2
        crop = skip[:, :, dh : dh + up.shape[2], dw : dw + up.shape[3]]
        return torch.cat([crop, up], 1)


class PixelShuffle(nn.Module):
    def forward(self, x):  # type: ignore[no-untyped-def]
        return nn.functional.pixel_shuffle(x, 2)


class PixelUnshuffle(nn.Module):
    def forward(self, x):  # type: ignore[no-untyped-def]
        return nn.functional.pixel_unshuffle(x, 2)


class ChunkQKV(nn.Module):
    def forward(self, x):  # type: ignore[no-untyped-def]
        q, k, v = x.chunk(3, dim=-1)
        return q, k, v


class HeadSplit(nn.Module):
    def forward(self, x):  # type: ignore[no-untyped-def]
        b, t, e = x.shape
        return x.view(b, t, 4, e // 4).transpose(1, 2).contiguous()


class HeadMerge(nn.Module):
    def forward(self, x):  # type: ignore[no-untyped-def]
        b, h, t, d = x.shape
        return x.transpose(1, 2).reshape(b, t, h * d)


class KVAppend(nn.Module):
    def forward(self, cache, new):  # type: ignore[no-untyped-def]
        return torch.cat([cache, new], dim=2)


class NhwcToNchwCrop(nn.Module):
    def forward(self, x):  # type: ignore[no-untyped-def]
        return x.permute(0, 3, 1, 2)[:, :, 1:-1, 1:-1]


class Flip(nn.Module):
    def forward(self, x):  # type: ignore[no-untyped-def]
        return torch.flip(x, [2, 3])


class LastToken(nn.Module):
    def forward(self, x):  # type: ignore[no-untyped-def]
        return x[:, -1:, :], x[:, -1]


class ViTPatchify(nn.Module):
    def forward(self, x):  # type: ignore[no-untyped-def]
        b, c, h, w = x.shape
        p = 4
        x = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5)
        return x.reshape(b, (h // p) * (w // p), c * p * p)


class SwinPartition(nn.Module):
    def forward(self, x):  # type: ignore[no-untyped-def]
        b, h, w, c = x.shape
        s = 4
        x = x.view(b, h // s, s, w // s, s, c).permute(0, 1, 3, 2, 4, 5)
        return x.reshape(-1, s, s, c)


class ChannelShuffle(nn.Module):
    def forward(self, x):  # type: ignore[no-untyped-def]
        b, c, h, w = x.shape
        return x.view(b, 2, c // 2, h, w).transpose(1, 2).reshape(b, c, h, w)


class DetectReshape(nn.Module):
    def forward(self, x):  # type: ignore[no-untyped-def]
        b, _, ny, nx = x.shape
        return x.view(b, 3, 7, ny, nx).permute(0, 1, 3, 4, 2).contiguous()


class SelectColumn(nn.Module):
    def forward(self, x):  # type: ignore[no-untyped-def]
        return x[:, 2]


class LastValid(nn.Module):
    def forward(self, x, lengths):  # type: ignore[no-untyped-def]
        return x[torch.arange(x.shape[0]), lengths - 1]


class IndexCopy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("slots", torch.tensor([5, 1, 3]))

    def forward(self, cache, new):  # type: ignore[no-untyped-def]
        return cache.index_copy(0, self.slots, new)


class OneHotLabels(nn.Module):
    def forward(self, labels):  # type: ignore[no-untyped-def]
        return nn.functional.one_hot(labels, 6)


class GatherFewer(nn.Module):
    def forward(self, x, index):  # type: ignore[no-untyped-def]
        return torch.gather(x, 1, index)


class ScatterFewer(nn.Module):
    def forward(self, x, index, src):  # type: ignore[no-untyped-def]
        return x.scatter(1, index, src)


class Embedding(nn.Module):
    def forward(self, weight, ids):  # type: ignore[no-untyped-def]
        return nn.functional.embedding(ids, weight)


class MoeUnpermute(nn.Module):
    def forward(self, rows, order):  # type: ignore[no-untyped-def]
        return rows.index_select(0, order), order


class MaskCrop(nn.Module):
    def forward(self, mask):  # type: ignore[no-untyped-def]
        return mask[:, 1:].transpose(0, 1)


class ScalarTile(nn.Module):
    def forward(self, x):  # type: ignore[no-untyped-def]
        return x[0, 0].expand(3, 2)


INDEXING = (
    "select_column", "last_valid", "index_copy", "one_hot", "gather_fewer", "scatter_fewer",
    "embedding", "moe_unpermute", "mask_crop", "scalar_tile",
)  # fmt: skip


def modules() -> list[tuple[str, nn.Module, tuple[torch.Tensor, ...]]]:
    g = torch.Generator().manual_seed(0)

    def r(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g)

    return [
        ("focus_stem", FocusStem(), (r(1, 3, 16, 16),)),
        ("unet_crop_concat", UNetCropConcat(), (r(1, 4, 20, 20), r(1, 4, 16, 16))),
        ("pixel_shuffle", PixelShuffle(), (r(1, 8, 5, 6),)),
        ("pixel_unshuffle", PixelUnshuffle(), (r(1, 2, 6, 8),)),
        ("chunk_qkv", ChunkQKV(), (r(2, 5, 24),)),
        ("head_split", HeadSplit(), (r(2, 5, 16),)),
        ("head_merge", HeadMerge(), (r(2, 4, 5, 3),)),
        ("kv_append", KVAppend(), (r(1, 4, 7, 8), r(1, 4, 1, 8))),
        ("nhwc_to_nchw_crop", NhwcToNchwCrop(), (r(1, 6, 7, 3),)),
        ("flip", Flip(), (r(1, 2, 5, 6),)),
        ("last_token", LastToken(), (r(2, 6, 8),)),
        ("vit_patchify", ViTPatchify(), (r(1, 3, 8, 8),)),
        ("swin_partition", SwinPartition(), (r(1, 8, 8, 3),)),
        ("channel_shuffle", ChannelShuffle(), (r(1, 6, 3, 4),)),
        ("detect_reshape", DetectReshape(), (r(1, 21, 4, 5),)),
        ("select_column", SelectColumn(), (r(5, 4, 2),)),
        ("last_valid", LastValid(), (r(3, 6, 4), torch.tensor([6, 2, 1]))),
        ("index_copy", IndexCopy(), (r(8, 4), r(3, 4))),
        ("one_hot", OneHotLabels(), (torch.tensor([[0, 5, 2], [1, 1, 4]]),)),
        ("gather_fewer", GatherFewer(), (r(4, 6), torch.tensor([[5, 0], [2, 2], [1, 4]]))),
        (
            "scatter_fewer",
            ScatterFewer(),
            (r(4, 6), torch.tensor([[5, 0], [2, 3], [1, 4]]), r(3, 2)),
        ),
        ("embedding", Embedding(), (r(10, 4), torch.tensor([[3, 9, 0], [3, 1, 7]]))),
        ("moe_unpermute", MoeUnpermute(), (r(5, 3), torch.tensor([4, 0, 3, 1, 2]))),
        ("mask_crop", MaskCrop(), (torch.rand(3, 5, generator=g) > 0.5,)),
        ("scalar_tile", ScalarTile(), (r(2, 3),)),
    ]


def main(out: Path, only: list[str]) -> int:
    """Export every module (or those named in `only`) into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    failures = 0
    chosen = [m for m in modules() if not only or m[0] in only]
    for name, module, args in chosen:
        expected = module(*args)
        expected = expected if isinstance(expected, tuple) else (expected,)
        for dynamo, opset in ((False, 11), (False, 13), (False, 17), (True, 18)):
            tag = f"{name}__{'dynamo' if dynamo else 'torchscript'}_opset{opset}"
            names = [f"in{k}" for k in range(len(args))]
            try:
                kwargs = {}
                if not dynamo:
                    kwargs["dynamic_axes"] = {n: {0: "batch"} for n in names}
                torch.onnx.export(
                    module,
                    args,
                    str(out / f"{tag}.onnx"),
                    input_names=names,
                    opset_version=opset,
                    dynamo=dynamo,
                    **kwargs,
                )
            except Exception:  # noqa: BLE001 - an exporter failure is reported, not fatal
                failures += 1
                print(f"EXPORT FAILED {tag}\n{traceback.format_exc(limit=2)}", flush=True)
                continue
            np.savez(
                out / f"{tag}.npz",
                **{n: a.numpy() for n, a in zip(names, args, strict=True)},
                **{f"out{k}": e.contiguous().numpy() for k, e in enumerate(expected)},
            )
            print(f"exported {tag}", flush=True)
    return 1 if failures == len(chosen) * 4 else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2:]))
