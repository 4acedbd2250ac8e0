"""The KV-cache append's forward copy (join along time of [32,32,1023,128] and [32,32,1,128]
fp32) and its gradient's split: dmlops bound graphs against torch.cat, torch's clone of the
gradient's slice and a device copy of the same bytes (CUDA-event medians, same run); then
one of each for ncu (`ncu -k regex:dmlops python benchmarks/kv_append_probe.py --once`).

    python benchmarks/kv_append_probe.py [--once]
"""

from __future__ import annotations

import sys

import torch

import dmlops
from dmlops import BufferTensorDesc as B
from dmlops import DataType as D
from dmlops.bench.common import median_gpu


def main() -> None:
    past = torch.randn(32, 32, 1023, 128, device="cuda")
    new = torch.randn(32, 32, 1, 128, device="cuda")
    out = torch.empty(32, 32, 1024, 128, device="cuda")
    g = dmlops.Graph()
    y = g.join([g.input(B(D.FLOAT32, list(past.shape))), g.input(B(D.FLOAT32, list(new.shape)))], 2)
    forward = g.compile([y], dmlops.Device(backend="cuda")).bind([past, new], [out])
    h = dmlops.Graph()
    a, b = h.split(h.input(B(D.FLOAT32, list(out.shape))), 2, [1023, 1])
    d_past, d_new = torch.empty_like(past), torch.empty_like(new)
    backward = h.compile([a, b], dmlops.Device(backend="cuda")).bind([out], [d_past, d_new])
    forward.dispatch()
    backward.dispatch()
    torch.cuda.synchronize()
    assert torch.equal(out, torch.cat([past, new], 2)) and torch.equal(d_past, past)
    if "--once" in sys.argv:
        return
    scratch = torch.empty_like(out)
    rows = {
        "dmlops join (bound)": median_gpu(forward.dispatch, 30, batch=8),
        "torch.cat": median_gpu(lambda: torch.cat([past, new], 2), 30, batch=8),
        "dmlops split (bound)": median_gpu(backward.dispatch, 30, batch=8),
        "torch clone of the slice": median_gpu(lambda: out[:, :, :1023].clone(), 30, batch=8),
        "copy ceiling": median_gpu(lambda: scratch.copy_(out), 30, batch=8),
    }
    for name, t in rows.items():
        print(f"{name:26s} {t * 1e6:8.1f} us  copy/time {rows['copy ceiling'] / t:5.2f}")


if __name__ == "__main__":
    main()
