"""Each GPU indexed workload of `dmlops bench --section indexed` once after a warm-up, for
ncu: `ncu -k regex:dmlops_indexed --metrics ... python benchmarks/ncu_indexed.py`."""

from __future__ import annotations

import torch

from dmlops.bench.indexed import _gpu_cases


def main() -> None:
    for case, make, ours, _ in _gpu_cases(torch):
        inputs = make()
        ours(*inputs)  # compiles, uploads the tables
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(case)
        ours(*inputs)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        print("ran", case, flush=True)
        del inputs
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
