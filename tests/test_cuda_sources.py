"""The CUDA kernel sources compile (nvcc to a cubin for sm_90) where nvcc is installed, no
GPU needed: the headers they include inlined as the backend inlines them, the new kernels'
every specialisation."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from dmlops.backends.cuda import kernels

NVCC = shutil.which("nvcc")

CASES = [
    *(("sequence", {"YT": code}) for code in (0, 1, 3, 4, 5, 6, 7, 8, 9, 10)),
    ("convert", {"XT": 1, "YT": 0, "MODE": 0}),
    ("convert", {"XT": 2, "YT": 0, "MODE": 0}),
    ("convert", {"XT": 1, "YT": 1, "MODE": 1, "SCALE": 1065353216, "BIAS": 0}),
    ("strided", {"ES": 4, "VW": 16, "RANK": 4, "PER_THREAD": 8, "GATHER": 1, "IDX64": 0,
                 "REVERSE": 0}),
]  # fmt: skip


def test_sources_inline_their_headers() -> None:
    for name in ("sequence", "convert", "strided", "indexed", "compact"):
        assert '#include "' not in kernels.source(name), name
    for name in ("sequence", "convert"):  # (types.cuh's codes)
        assert "#define STORAGE_10 unsigned long long" in kernels.source(name)
    assert "piece_of" in kernels.source("strided")  # (common.cuh's)


@pytest.mark.skipif(NVCC is None, reason="no nvcc")
@pytest.mark.parametrize(("kernel", "defines"), CASES)
def test_a_kernel_compiles(kernel: str, defines: dict[str, int], tmp_path: Path) -> None:
    source = tmp_path / f"{kernel}.cu"
    source.write_text(kernels.source(kernel))
    flags = [f"-D{k}={v}" for k, v in defines.items()]
    done = subprocess.run(
        [str(NVCC), "-arch=sm_90", "-cubin", "-std=c++14", "-DTHREADS=256", *flags,
         "-o", str(tmp_path / "k.cubin"), str(source)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "k.cubin").stat().st_size > 0
