"""CuPy, checked: installed once, built for a CUDA the driver runs."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from ...errors import DmlError
from .lazy import LazyCupy

__all__ = ["import_cupy", "cupy_distributions", "check_install", "INSTALL_HINT"]

INSTALL_HINT = (
    "pip install 'dmlops[cuda12]' for a CUDA 12 driver or 'dmlops[cuda13]' for CUDA 13 "
    "(nvidia-smi shows the driver's CUDA version)"
)


# a CuPy distribution's metadata folder: cupy-13.6.0.dist-info, cupy_cuda12x-13.6.0.dist-info
_CUPY_METADATA = re.compile(r"^(cupy(?:[-_](?:cuda|rocm)[\w]*)?)-[^-]+\.(?:dist|egg)-info$", re.I)


def cupy_distributions() -> list[str]:
    """Names of the installed CuPy distributions (cupy, cupy-cuda12x, cupy-cuda13x, ...), from
    the metadata folders on `sys.path` (a directory listing each: reading every installed
    distribution's metadata costs a fifth of a second where many are installed)."""
    names = set()
    for entry in dict.fromkeys(sys.path):
        try:
            listing = os.listdir(entry or ".")
        except OSError:  # (a zip file, a folder gone)
            continue
        for item in listing:
            if item[:4].lower() == "cupy":
                found = _CUPY_METADATA.match(item)
                if found:
                    names.add(found.group(1).lower().replace("_", "-"))
    return sorted(names)


def _version(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"


def check_install(distributions: Sequence[str], driver: int, runtime: int) -> None:
    """Raise DmlError where the CuPy packages or the CUDA versions cannot work together.
    Versions are CUDA's integers (12040 is 12.4); a driver of 0 means none is installed."""
    if len(distributions) > 1:
        raise DmlError(
            f"several CuPy packages are installed at once ({', '.join(distributions)}): "
            "they overwrite each other's files; uninstall all but the one for your CUDA: "
            + INSTALL_HINT
        )
    if driver == 0:
        raise DmlError("the cuda backend found no NVIDIA driver (libcuda) on this machine")
    if driver // 1000 < runtime // 1000:
        wanted = driver // 1000
        raise DmlError(
            f"CuPy is built for CUDA {_version(runtime)} but the NVIDIA driver supports CUDA "
            f"{_version(driver)}: install the CuPy for CUDA {wanted} "
            f"(pip install 'dmlops[cuda{wanted}]') or update the driver"
        )


def import_cupy() -> Any:
    """The cupy module (a `LazyCupy`, which imports CuPy at its first real use: its runtime
    and driver bindings come first), or a DmlError that says what to install."""
    distributions = cupy_distributions()
    if len(distributions) > 1:
        check_install(distributions, 1, 0)
    try:
        found = sys.modules["cupy"] if "cupy" in sys.modules else importlib.util.find_spec("cupy")
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise DmlError(f"the cuda backend needs CuPy: {INSTALL_HINT}")
    try:
        from cupy_backends.cuda.api import driver as cuda_driver
        from cupy_backends.cuda.api import runtime as cuda_runtime

        versions = int(cuda_runtime.driverGetVersion()), int(cuda_runtime.runtimeGetVersion())
    except Exception:  # noqa: BLE001 - CUDA's libraries not found alone: CuPy finds them
        try:
            import cupy
        except ImportError as e:
            raise DmlError(f"the cuda backend needs CuPy: {INSTALL_HINT}") from e
        cuda_runtime, cuda_driver = cupy.cuda.runtime, cupy.cuda.driver
        try:
            versions = int(cuda_runtime.driverGetVersion()), int(cuda_runtime.runtimeGetVersion())
        except Exception as e:  # no libcuda, or CuPy's libraries missing
            raise DmlError(f"the cuda backend cannot load CUDA ({e}): {INSTALL_HINT}") from e
    check_install(distributions, *versions)
    return LazyCupy(cuda_runtime, cuda_driver)
