"""The take_along_axis workload (8192x4096 fp32, 512 indices per row) once after a warm-up,
through dmlops and torch, for ncu."""

from __future__ import annotations

import torch

import dmlops

x = torch.randn(8192, 4096, device="cuda")
i = torch.randint(0, 4096, (8192, 512), device="cuda")
for _ in range(2):
    dmlops.gather_elements(x, i, 1)
    torch.gather(x, 1, i)
torch.cuda.synchronize()
