"""The CUDA kernel sources (package data, one .cu file per strategy), compiled once with
NVRTC into a cubin kept on disk, and loaded into each GPU's context from there.

A process whose kernels are all on disk loads them with the driver alone (no NVRTC, no
CuPy import): `DMLOPS_CACHE_DIR`, else `$XDG_CACHE_HOME/dmlops/cuda` or
`~/.cache/dmlops/cuda` (a user with no home: the temporary directory's), one file per
source, options, architecture and NVRTC version.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

from ... import _forking
from .launch import check_driver, driver_library
from .strategies import THREADS

__all__ = ["source", "handle", "cache_dir", "ENTRY", "blocks_per_multiprocessor"]

ENTRY = {
    "strided": "dmlops_strided",
    "rows": "dmlops_rows",
    "transpose": "dmlops_transpose",
    "pack": "dmlops_pack",
    "elements": "dmlops_indexed_elements",
    "convert": "dmlops_convert",
    "sequence": "dmlops_sequence",
}
_handles: dict[tuple[str, str, tuple[tuple[str, int], ...], int], int] = {}
_images: dict[str, bytes] = {}  # by digest of source, options, architecture and CUDA
# each source and specialisation's module on each device, loaded for the process's life
_modules: dict[tuple[str, tuple[tuple[str, int], ...], int], int] = {}
_lock = _forking.lock()


def _read(name: str) -> str:
    return resources.files(__package__).joinpath(f"kernels/{name}").read_text()


_INCLUDE = re.compile(r'^#include "([a-z]+\.cuh)"$', re.MULTILINE)


def source(kernel: str) -> str:
    """The CUDA C++ source of one kernel file, with the headers it includes inlined."""
    return _INCLUDE.sub(lambda m: _read(m.group(1)), _read(f"{kernel}.cu"))


def cache_dir() -> Path:
    """Where compiled kernels are kept between processes (a user with no home, as a
    container's arbitrary user id may be: the temporary directory's `dmlops-<uid>`)."""
    named = os.environ.get("DMLOPS_CACHE_DIR")
    if named:
        return Path(named) / "cuda"
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except (RuntimeError, KeyError):  # (no HOME, and no passwd entry for this user)
            user = os.getuid() if hasattr(os, "getuid") else "user"
            base = str(Path(tempfile.gettempdir()) / f"dmlops-{user}")
    return Path(base) / "dmlops" / "cuda"


def _arch(runtime: Any, device: int) -> tuple[int, int]:
    return (
        int(runtime.deviceGetAttribute(75, device)),  # cudaDevAttrComputeCapabilityMajor
        int(runtime.deviceGetAttribute(76, device)),  # cudaDevAttrComputeCapabilityMinor
    )


def _compile(code: str, options: tuple[str, ...], arch: tuple[int, int]) -> bytes:
    """A cubin for `arch` (PTX for the newest architecture NVRTC knows where it does not
    know this one, which the driver compiles on loading)."""
    from cupy_backends.cuda.libs import nvrtc

    wanted = arch[0] * 10 + arch[1]
    known = [int(a) for a in nvrtc.getSupportedArchs()]
    cubin = wanted in known
    target = f"sm_{wanted}" if cubin else f"compute_{max(a for a in known if a <= wanted)}"
    program = nvrtc.createProgram(code, "dmlops.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(program, [*options, f"--gpu-architecture={target}"])
        except Exception as e:
            log = nvrtc.getProgramLog(program)
            raise RuntimeError(f"NVRTC failed on a dmlops kernel: {e}\n{log}") from e
        image = nvrtc.getCUBIN(program) if cubin else nvrtc.getPTX(program)
    finally:
        nvrtc.destroyProgram(program)
    return bytes(image) if cubin else (image.encode() if isinstance(image, str) else image)


def _image(code: str, options: tuple[str, ...], runtime: Any, device: int) -> bytes:
    """The compiled module of a source: from memory, from disk, or compiled now."""
    arch = _arch(runtime, device)
    tag = f"{arch[0]}{arch[1]}-cuda{int(runtime.runtimeGetVersion())}"
    digest = hashlib.sha256("\0".join((code, *options, tag)).encode()).hexdigest()[:40]
    found = _images.get(digest)
    if found is not None:
        return found
    path = cache_dir() / f"{digest}-sm{tag}.bin"
    try:
        found = path.read_bytes()
    except OSError:
        found = None
    if not found:
        found = _compile(code, options, arch)
        try:  # written whole or not at all: another process may read it at once
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as f:
                f.write(found)
            os.replace(f.name, path)
        except OSError:
            pass  # (a read-only home: compiled again by the next process)
    _images[digest] = found
    return found


def _load(image: bytes) -> int:
    """Load a module into the current context (libcuda itself: CuPy's binding of the module
    load imports all of CuPy)."""
    module = ctypes.c_void_p()
    status = driver_library().cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(image))
    check_driver(status, "cuModuleLoadData")
    return int(module.value or 0)


def _function(module: int, name: str) -> int:
    """One function of a loaded module."""
    function = ctypes.c_void_p()
    status = driver_library().cuModuleGetFunction(
        ctypes.byref(function), ctypes.c_void_p(module), name.encode()
    )
    check_driver(status, f"cuModuleGetFunction({name})")
    return int(function.value or 0)


def handle(
    runtime: Any,
    kernel: str,
    defines: tuple[tuple[str, int], ...] = (),
    entry: str | None = None,
) -> int:
    """The CUfunction handle of kernel `entry` (the strategy's own by default) of one
    specialisation on the current device, loaded there once."""
    device = int(runtime.getDevice())
    name = entry or ENTRY[kernel]
    key = (kernel, name, defines, device)
    found = _handles.get(key)
    if found is None:
        with _lock:
            found = _handles.get(key)
            if found is None:
                module = _modules.get((kernel, defines, device))
                if module is None:  # (one load a module: indexed.cu's entries share it)
                    options = (
                        "--std=c++14",
                        f"-DTHREADS={THREADS}",
                        *(f"-D{k}={v}" for k, v in defines),
                    )
                    module = _load(_image(source(kernel), options, runtime, device))
                    _modules[(kernel, defines, device)] = module
                found = _function(module, name)
                _handles[key] = found
    return found


def blocks_per_multiprocessor(function: int) -> int:
    """How many THREADS-thread blocks of a kernel one multiprocessor holds at once."""
    blocks = ctypes.c_int()
    status = driver_library().cuOccupancyMaxActiveBlocksPerMultiprocessor(
        ctypes.byref(blocks), ctypes.c_void_p(function), THREADS, ctypes.c_size_t(0)
    )
    check_driver(status, "cuOccupancyMaxActiveBlocksPerMultiprocessor")
    return int(blocks.value)
