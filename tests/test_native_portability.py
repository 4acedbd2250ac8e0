"""The C extensions compile for the platforms users run, not only this one: macOS (Apple
silicon and Intel) and Linux on ARM and with musl, each source compiled for that target by
zig's cross compiler (the `ziglang` wheel; CI installs it, the test skips without it).
A Linux-only call (`sched_getaffinity`, `/proc`) outside its guard fails here."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ziglang = pytest.importorskip("ziglang", reason="zig's cross compiler (pip install ziglang)")

SOURCES = sorted((Path(__file__).parents[1] / "src" / "dmlops" / "backends").glob("*/native/*.c"))
TARGETS = ("aarch64-macos", "x86_64-macos", "aarch64-linux-gnu", "x86_64-linux-musl")


def test_every_extension_source_is_found() -> None:
    """The CPU engine's sources and the CUDA launch path's (a moved folder fails here)."""
    names = {p.name for p in SOURCES}
    assert {"pool.c", "load.c", "quota.c", "copies.c", "blocks.c", "module.c", "launch.c"} <= names


@pytest.mark.parametrize("target", TARGETS)
def test_extension_sources_compile_for(target: str, tmp_path: Path) -> None:
    """Each source compiles for `target` with warnings as errors, as setup.py builds it
    (C11, Python's headers)."""
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        pytest.skip(f"no Python.h under {include}")
    flags = ["-std=c11", "-O2", "-fno-strict-aliasing", "-Wall", "-Werror", f"-I{include}"]
    failed = []
    for source in SOURCES:
        made_object = str(tmp_path / f"{source.stem}.o")
        made = subprocess.run(
            [
                sys.executable,
                "-m",
                "ziglang",
                "cc",
                "-target",
                target,
                *flags,
                "-c",
                str(source),
                "-o",
                made_object,
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if made.returncode != 0:
            failed.append(f"{source.name}:\n{made.stderr.strip()[-2000:]}")
    assert not failed, f"for {target}:\n" + "\n".join(failed)


# sources on numpy's C API, compiled with this numpy's headers: for the Linux targets only,
# since the installed headers are configured for the machine numpy was built for (a Linux
# wheel's include <endian.h>, which macOS has not; on a Mac, a Mac numpy's headers serve)
NUMPY_SOURCES = sorted(
    (Path(__file__).parents[1] / "src" / "dmlops" / "backends").glob("numpy_api/*.c")
)


@pytest.mark.parametrize("target", [t for t in TARGETS if "linux" in t])
def test_numpy_api_sources_compile_for(target: str, tmp_path: Path) -> None:
    """What the calls read of many numpy arrays (`backends/numpy_api/arrays.c`) compile for `target` with
    warnings as errors, with Python's and numpy's headers."""
    import numpy

    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        pytest.skip(f"no Python.h under {include}")
    assert [p.name for p in NUMPY_SOURCES] == ["arrays.c"]
    flags = ["-std=c11", "-O2", "-Wall", "-Werror", f"-I{include}", f"-I{numpy.get_include()}"]
    for source in NUMPY_SOURCES:
        made = subprocess.run(
            [
                *(sys.executable, "-m", "ziglang", "cc", "-target", target, *flags, "-c"),
                *(str(source), "-o", str(tmp_path / f"{source.stem}.o")),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert made.returncode == 0, f"{source.name} for {target}:\n{made.stderr[-2000:]}"
