"""The C extensions, built where a C compiler is there (optional: without one, `pip install
.` still succeeds and dmlops runs its numpy engine, and launches CUDA kernels through
ctypes): the CPU engine, and the CUDA backend's launch path."""

import sys

from setuptools import Extension, setup

NATIVE = "src/dmlops/backends/cpu_engine/native/"

extensions = []
if sys.platform != "win32":  # (POSIX threads; Windows runs the numpy engine)
    extensions.append(
        Extension(
            "dmlops.backends.cpu_engine._native",
            sources=[NATIVE + f for f in ("module.c", "pool.c", "load.c", "quota.c", "copies.c", "blocks.c", "halves.c", "compact.c", "reverse.c", "evens.c", "shuffles.c", "tiles.c", "indexed.c", "spans.c")],
            depends=[NATIVE + f for f in ("copies.h", "pool.h", "load.h", "quota.h", "blocks.h", "halves.h", "compact.h", "reverse.h", "evens.h", "shuffles.h", "tiles.h", "indexed.h", "runs.h", "loose.h", "spans.h")],
            extra_compile_args=["-O3", "-std=c11", "-fno-strict-aliasing"],
            extra_link_args=["-pthread"],
            optional=True,
        )
    )

    extensions.append(
        Extension(
            "dmlops.backends.cuda._launch",
            sources=["src/dmlops/backends/cuda/native/launch.c"],
            extra_compile_args=["-O2", "-std=c11"],
            extra_link_args=["-ldl"],
            optional=True,
        )
    )

setup(ext_modules=extensions)
