"""The C extensions, built where a C compiler is there (optional: without one, `pip install
.` still succeeds and dmlops runs its numpy engine, launches CUDA kernels through ctypes and
keys many arrays in Python): the CPU engine, the CUDA backend's launch path, and the keys of
many numpy arrays (numpy's C API: its headers a build requirement)."""

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

try:  # (numpy's headers: a build requirement, so pip has them; else no such extension)
    import numpy
except ImportError:  # pragma: no cover - (the keys are read in Python then)
    numpy = None
if numpy is not None:
    extensions.append(
        Extension(
            "dmlops.backends._numpy_api",
            sources=["src/dmlops/backends/numpy_api/arrays.c"],
            include_dirs=[numpy.get_include()],
            extra_compile_args=["-O2", "-std=c11"],
            optional=True,
        )
    )

setup(ext_modules=extensions)
