"""Whole-row gathers through Hopper's bulk copy engine (`cp.async.bulk` global -> shared ->
global, each load completing on an mbarrier, a few shared-memory stages deep, one issuing
thread a block on a persistent grid), against torch's indexing, dmlops' rows kernel and a
device copy of the output: the experiment behind performance.md's eighteenth-session note
(correct, not faster: not adopted). Hopper (sm_90) only.

    python benchmarks/bulk_rows.py
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import cupy as cp
import torch

import dmlops
from dmlops.bench.common import median_gpu

warnings.filterwarnings("ignore", category=DeprecationWarning)  # (CuPy's ExternalStream)

SOURCE = r"""
#define U32(p) ((unsigned)__cvta_generic_to_shared(p))
extern "C" __global__ void bulk_gather(const char* __restrict__ src, char* __restrict__ dst,
    const long long* __restrict__ idx, long long rows, long long row_bytes, long long seg_bytes)
{
    extern __shared__ __align__(128) char smem[];
    __shared__ __align__(8) unsigned long long bars[NST];
    const long long segs = (row_bytes + seg_bytes - 1) / seg_bytes;
    const long long units = rows * segs;
    const long long first = blockIdx.x, step = gridDim.x;
    if (threadIdx.x != 0) return;
    for (int s = 0; s < NST; ++s)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(U32(&bars[s])));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    auto load = [&](long long k) {  // unit k of this block into stage k % NST
        const long long u = first + k * step;
        if (u >= units) return;
        const long long m = u / segs, off = (u - m * segs) * seg_bytes;
        const unsigned n = (unsigned)min(seg_bytes, row_bytes - off);
        const int s = (int)(k % NST);
        const char* from = src + idx[m] * row_bytes + off;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
            :: "r"(U32(&bars[s])), "r"(n) : "memory");
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
            " [%0], [%1], %2, [%3];"
            :: "r"(U32(smem + s * seg_bytes)), "l"(from), "r"(n), "r"(U32(&bars[s]))
            : "memory");
    };
    for (long long k = 0; k < NST; ++k) load(k);
    for (long long k = 0;; ++k) {
        const long long u = first + k * step;
        if (u >= units) break;
        const int s = (int)(k % NST);
        const unsigned parity = (unsigned)((k / NST) & 1);
        asm volatile(
            "{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
            " @!p bra W;\n}" :: "r"(U32(&bars[s])), "r"(parity) : "memory");
        const long long m = u / segs, off = (u - m * segs) * seg_bytes;
        const unsigned n = (unsigned)min(seg_bytes, row_bytes - off);
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
            :: "l"(dst + m * row_bytes + off), "r"(U32(smem + s * seg_bytes)), "r"(n)
            : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        if (k >= 1) {  // the stage the store before this one read: refilled
            asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
            load(k - 1 + NST);
        }
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
"""

_KERNELS: dict[int, Any] = {}
# (segment bytes, stages, blocks an SM)
CONFIGS = [(4096, 4, 8), (8192, 4, 6), (8192, 3, 8), (16384, 2, 6), (8192, 2, 12), (4096, 8, 6)]


def _kernel(stages: int) -> Any:
    if stages not in _KERNELS:
        module = cp.RawModule(code=SOURCE, options=("--std=c++17", f"-DNST={stages}"))
        _KERNELS[stages] = module.get_function("bulk_gather")
    return _KERNELS[stages]


def bulk_gather(src: Any, idx: Any, out: Any, row_bytes: int, config: tuple[int, int, int]) -> None:
    """out[k] = src[idx[k]] (whole rows of `row_bytes`) on torch's current stream."""
    seg, stages, per_sm = config
    fn = _kernel(stages)
    if stages * seg > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = stages * seg
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    rows = idx.numel()
    grid = min(rows * -(-row_bytes // seg), sms * per_sm)
    args = (src.data_ptr(), out.data_ptr(), idx.data_ptr())
    sizes = (cp.int64(rows), cp.int64(row_bytes), cp.int64(seg))
    with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
        fn((grid,), (32,), (*map(cp.intp, args), *sizes), shared_mem=stages * seg)


def _cases() -> list[tuple[str, Any, Any, int]]:
    dev, f16 = "cuda", torch.float16
    table = torch.randn(32000, 4096, device=dev, dtype=f16)
    ids = torch.randint(0, 32000, (16384,), device=dev)
    x = torch.randn(16384, 4096, device=dev, dtype=f16)
    perm = torch.randperm(16384, device=dev)
    pool = torch.randn(4096, 16, 8, 128, device=dev, dtype=f16)
    blocks = torch.randperm(4096, device=dev)[:2048]
    return [("embedding", table, ids, 8192), ("MoE", x, perm, 8192), ("paged", pool, blocks, 32768)]


def main() -> None:
    for name, src, idx, row_bytes in _cases():
        want = src[idx]
        out = torch.empty_like(want)
        for config in CONFIGS:
            out.zero_()
            bulk_gather(src, idx, out, row_bytes, config)
            torch.cuda.synchronize()
            ok = torch.equal(out, want)
            call = functools.partial(bulk_gather, src, idx, out, row_bytes, config)
            t = median_gpu(call, 30, batch=8) * 1e6
            print(f"{name:10s} bulk (seg, stages, blocks/SM) {config}: {t:7.1f} us, exact {ok}")
        theirs = median_gpu(functools.partial(src.__getitem__, idx), 30, batch=8) * 1e6
        ours = median_gpu(functools.partial(dmlops.gather, src, idx), 30, batch=8) * 1e6
        copy = median_gpu(functools.partial(out.copy_, want), 30, batch=8) * 1e6
        print(
            f"{name:10s} torch {theirs:7.1f}, dmlops {ours:7.1f}, copy {copy:7.1f} us", flush=True
        )


if __name__ == "__main__":
    main()
