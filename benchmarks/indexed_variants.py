"""Text variants of the CUDA kernels, timed on the bench's GPU indexed workloads (8 calls
back to back per sample, median of 30) or, with --layouts, on the layouts section's cases
(fraction of the device copy): each variant rewrites text in a scratch copy of the package
and runs in a process of its own, so every variant compiles its own kernels.

    python benchmarks/indexed_variants.py [--layouts] [variant ...]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_INDEXED = "dmlops/backends/cuda/kernels/indexed.cu"
_PY = "dmlops/backends/cuda/indexed.py"
_ELEMENTS = "dmlops/backends/cuda/kernels/elements.cu"

_SRC = Path(__file__).resolve().parents[1] / "src"


def _segment_loop() -> str:
    """The rows kernel's loop over a warp's segment, as kernels/indexed.cu has it now."""
    text = (_SRC / _INDEXED).read_text()
    start = text.index("            for (; c + 3 * 32 < end;")
    return text[start : text.index("\n            }", start) + len("\n            }")]


_SEG_LOOP = _segment_loop()
_SEG_EIGHT = """            for (; c + 7 * 32 < end; c += 8 * 32) {
                uint4 v[8];
#pragma unroll
                for (int k = 0; k < 8; ++k) v[k] = LOAD(from + c + 32 * k);
#pragma unroll
                for (int k = 0; k < 8; ++k) __stcs(to + c + 32 * k, v[k]);
            }"""
_LOAD256 = """#define SEGMENT 128
__device__ __forceinline__ uint4 load256(const uint4* p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}"""

_PUT = """#define SEGMENT 128
__device__ __forceinline__ void put(uint4* p, uint4 v) { *p = v; }"""

_SEG_START = "    if (!SCAN && warp_rows && chunk == 16 && !by_element) {"
# gathers of long 16-byte rows on a grid of 8 blocks an SM, each warp taking unit after
# unit: the next unit's index read while the current unit's loads are in flight
_READ_AHEAD = """    if (!SLOTS && !SCAN && warp_rows && chunk == 16 && !by_element) {
        const long long segments = (chunks + SEGMENT - 1) / SEGMENT;
        const long long units = (long long)rows * segments;
        long long u = first;
        O s = 0, d = 0;
        long long slot, order;
        bool have = u < units
            && locate<I, O, SLOTS>(meta, idx, (I)(u / segments), &s, &d, &slot, &order);
        while (u < units) {
            const long long segment = u % segments;
            const long long next = u + step;
            const uint4* from = (const uint4*)(src_base + (long long)s * es);
            uint4* to = (uint4*)(dst_base + (long long)d * es);
            const long long end = min(chunks, (segment + 1) * SEGMENT);
            const long long c = segment * SEGMENT + lane;
            const bool full = c + 3 * 32 < end;
            uint4 a, b, e, f;
            if (have && full) {
                a = __ldcs(from + c); b = __ldcs(from + c + 32);
                e = __ldcs(from + c + 64); f = __ldcs(from + c + 96);
            }
            O s2 = 0, d2 = 0;
            const bool have2 = next < units
                && locate<I, O, SLOTS>(meta, idx, (I)(next / segments), &s2, &d2, &slot, &order);
            if (have && full) {
                __stcs(to + c, a); __stcs(to + c + 32, b);
                __stcs(to + c + 64, e); __stcs(to + c + 96, f);
            } else if (have) {
                for (long long k = c; k < end; k += 32) __stcs(to + k, __ldcs(from + k));
            }
            u = next; s = s2; d = d2; have = have2;
        }
        return;
    }
"""
_GRID = "        grid = max(1, min(65535 * 8, -(-warps * lanes // _THREADS)))\n"
_GRID_CAP = _GRID + "        if segments > 1:\n            grid = min(grid, CAP)\n"

_LEAN = 'extern "C" __global__ void dmlops_indexed_lean('
_LEAN_BOUNDS = 'extern "C" __global__ void __launch_bounds__(256, {}) dmlops_indexed_lean('

# name: [(file under src/, old text, new text), ...]
VARIANTS: dict[str, list[tuple[str, str, str]]] = {
    "as is": [],
    "elements: 4 per thread": [(_PY, "_ELEMENTS_PER = 2", "_ELEMENTS_PER = 4")],
    "rows: segments of 512 chunks": [
        (_INDEXED, "#define SEGMENT 128", "#define SEGMENT 512"),
        (_PY, "_SEGMENT = 128", "_SEGMENT = 512"),
    ],
    "rows: segments of 256 chunks": [
        (_INDEXED, "#define SEGMENT 128", "#define SEGMENT 256"),
        (_PY, "_SEGMENT = 128", "_SEGMENT = 256"),
    ],
    "elements: streaming stores": [
        (
            _ELEMENTS,
            "dst[v[11] + r * v[4] + c * v[5]] = e[j]",
            "__stcs(dst + v[11] + r * v[4] + c * v[5], e[j])",
        )
    ],
    "rows: 8 loads in flight, segments of 256": [
        (_INDEXED, "#define SEGMENT 128", "#define SEGMENT 256"),
        (_PY, "_SEGMENT = 128", "_SEGMENT = 256"),
        (_INDEXED, _SEG_LOOP, _SEG_EIGHT.replace("LOAD", "__ldcs")),
    ],
    "rows: loads hinting 256-byte L2 fetches": [
        (_INDEXED, _SEG_LOOP, _SEG_LOOP.replace("__ldg(", "load256(")),
        (_INDEXED, "#define SEGMENT 128", _LOAD256),
    ],
    "rows: 8 in flight, segments of 256, 256-byte L2 fetches": [
        (_INDEXED, _SEG_LOOP, _SEG_EIGHT.replace("LOAD", "load256")),
        (_INDEXED, "#define SEGMENT 128", _LOAD256.replace("SEGMENT 128", "SEGMENT 256")),
        (_PY, "_SEGMENT = 128", "_SEGMENT = 256"),
    ],
    "rows: plain loads and stores": [
        (_INDEXED, _SEG_LOOP, _SEG_LOOP.replace("__stcs(", "put(")),
        (_INDEXED, "#define SEGMENT 128", _PUT),
    ],
    "rows: evict-first loads (before 2026-11-26)": [
        (_INDEXED, _SEG_LOOP, _SEG_LOOP.replace("__ldg(", "__ldcs(")),
    ],
    "rows: evict-first loads, plain stores": [
        (_INDEXED, _SEG_LOOP, _SEG_LOOP.replace("__ldg(", "__ldcs(").replace("__stcs(", "put(")),
        (_INDEXED, "#define SEGMENT 128", _PUT),
    ],
    "rows: segments of 64 chunks": [
        (_INDEXED, "#define SEGMENT 128", "#define SEGMENT 64"),
        (_PY, "_SEGMENT = 128", "_SEGMENT = 64"),
    ],
    "rows: read ahead, 8 blocks an SM": [
        (_INDEXED, _SEG_START, _READ_AHEAD + _SEG_START),
        (_PY, _GRID, _GRID_CAP.replace("CAP", "132 * 8")),
    ],
    "rows: read ahead, 4 blocks an SM": [
        (_INDEXED, _SEG_START, _READ_AHEAD + _SEG_START),
        (_PY, _GRID, _GRID_CAP.replace("CAP", "132 * 4")),
    ],
    "rows: as is, 8 blocks an SM": [(_PY, _GRID, _GRID_CAP.replace("CAP", "132 * 8"))],
    "lean: launch bounds (256, 8)": [(_INDEXED, _LEAN, _LEAN_BOUNDS.format(8))],
    "lean: launch bounds (256, 6)": [(_INDEXED, _LEAN, _LEAN_BOUNDS.format(6))],
}

CHILD = r"""
import torch
from dmlops.bench.indexed import _gpu_cases
from dmlops.bench.common import median_gpu
for case, make, ours, theirs in _gpu_cases(torch):
    if "KV write" in case:
        continue
    inputs = make()
    t = median_gpu(lambda: ours(*inputs), 30, batch=8) * 1e6
    r = median_gpu(lambda: theirs(*inputs), 30, batch=8) * 1e6
    print(f"  {case:60s} {t:8.1f} us   torch {r:8.1f} us", flush=True)
    del inputs
    torch.cuda.empty_cache()
"""


CHILD_LAYOUTS = """
import sys
sys.path.insert(0, {bench!r})
import kernel_variants
kernel_variants.main(defaults_only=True)
"""


def main() -> None:
    src = _SRC
    args = sys.argv[1:]
    child = CHILD
    if "--layouts" in args:
        args.remove("--layouts")
        child = CHILD_LAYOUTS.format(bench=str(Path(__file__).resolve().parent))
    chosen = args or list(VARIANTS)
    for name in chosen:
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(src / "dmlops", Path(tmp) / "dmlops")
            for file, old, new in VARIANTS[name]:
                path = Path(tmp) / file
                text = path.read_text()
                assert old in text, (name, file)
                path.write_text(text.replace(old, new))
            print(name, flush=True)
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            subprocess.run([sys.executable, "-c", child], env={"PYTHONPATH": tmp, **env})


if __name__ == "__main__":
    main()
