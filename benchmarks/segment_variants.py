"""Long 16-byte rows of an indexed copy (embedding, MoE permutation, paged KV read): the
warp-per-segment loop as it is (segments of 128 chunks, four loads in flight a lane)
against longer segments with eight loads in flight a lane, each variant compiled in turn,
timed with torch and a device copy in the same process (CUDA events, batches of 8).

    python benchmarks/segment_variants.py [REPS]
"""

from __future__ import annotations

import sys

import torch

import dmlops
from dmlops import functional
from dmlops.backends.cuda import indexed, kernels
from dmlops.bench.common import median_gpu

_FOUR = "            for (; c + 3 * 32 < end; c += 4 * 32) {  // four loads in flight per lane"
_EIGHT = """            for (; c + 7 * 32 < end; c += 8 * 32) {  // eight loads in flight per lane
                uint4 v[8];
#pragma unroll
                for (int u = 0; u < 8; ++u) v[u] = __ldcs(from + c + u * 32);
#pragma unroll
                for (int u = 0; u < 8; ++u) __stcs(to + c + u * 32, v[u]);
            }
"""
VARIANTS = {"segment 128, 4 in flight": (128, False), "segment 256, 8 in flight": (256, True),
            "segment 512, 8 in flight": (512, True)}  # fmt: skip
_original = kernels.source


def use(segment: int, eight: bool) -> None:
    """Compile the indexed kernels anew with this segment and loop; forget every call."""

    def patched(kernel: str) -> str:
        text = _original(kernel)
        if kernel != "indexed":
            return text
        text = text.replace("#define SEGMENT 128", f"#define SEGMENT {segment}")
        return text.replace(_FOUR, _EIGHT + _FOUR) if eight else text

    kernels.source = patched  # type: ignore[assignment]
    kernels._cache.clear()
    indexed._SEGMENT = segment
    functional._CACHE.clear()


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    dev, f16 = "cuda", torch.float16
    cases = {
        "embedding": (torch.randn(32000, 4096, device=dev, dtype=f16),
                      torch.randint(0, 32000, (16384,), device=dev)),
        "MoE": (torch.randn(16384, 4096, device=dev, dtype=f16), torch.randperm(16384, device=dev)),
        "paged KV": (torch.randn(4096, 16, 8, 128, device=dev, dtype=f16),
                     torch.randperm(4096, device=dev)[:2048].reshape(64, 32)),
    }  # fmt: skip
    print("| case | variant | dmlops µs | torch µs | copy µs | copy / dmlops |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for _ in range(2):  # two rounds, variants in turn
        for variant, (segment, eight) in VARIANTS.items():
            use(segment, eight)
            for name, (x, i) in cases.items():
                want = x[i]
                assert torch.equal(dmlops.gather(x, i), want), (variant, name)
                moved = torch.empty(want.numel(), dtype=f16, device=dev)
                source = torch.empty_like(moved)
                ours = median_gpu(lambda x=x, i=i: dmlops.gather(x, i), reps, batch=8)
                theirs = median_gpu(lambda x=x, i=i: x[i], reps, batch=8)
                copy = median_gpu(lambda m=moved, s=source: m.copy_(s), reps, batch=8)
                print(f"| {name} | {variant} | {ours * 1e6:.1f} | {theirs * 1e6:.1f} | "
                      f"{copy * 1e6:.1f} | {copy / ours:.2f} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
