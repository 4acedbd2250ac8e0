"""The CUDA backend's loading, without a GPU: CuPy held lazily, kernels compiled once into
a cache on disk and read back from it."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from dmlops.backends.cuda import kernels
from dmlops.backends.cuda.lazy import LazyCupy


def test_lazy_cupy_answers_runtime_and_driver_without_importing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    runtime, driver = object(), object()
    lazy = LazyCupy(runtime, driver)
    assert lazy.cuda.runtime is runtime and lazy.cuda.driver is driver
    assert not lazy.imported()
    assert not isinstance(object(), lazy.ndarray)  # (no CuPy array can exist yet)
    fake = types.ModuleType("cupy")
    fake.ndarray = type("ndarray", (), {})  # type: ignore[attr-defined]
    fake.asarray = lambda x: ("cupy", x)  # type: ignore[attr-defined]
    fake.cuda = types.SimpleNamespace(Stream="the stream class")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy", fake)
    assert lazy.imported()
    assert lazy.ndarray is fake.ndarray  # type: ignore[attr-defined]
    assert lazy.asarray(3) == ("cupy", 3)
    assert lazy.cuda.Stream == "the stream class"
    assert lazy.cuda.runtime is runtime  # (its own bindings still)


def test_the_cache_folder_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DMLOPS_CACHE_DIR", "/somewhere")
    assert kernels.cache_dir() == Path("/somewhere/cuda")
    monkeypatch.delenv("DMLOPS_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    assert kernels.cache_dir() == Path("/xdg/dmlops/cuda")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", "/home/someone")
    assert kernels.cache_dir() == Path("/home/someone/.cache/dmlops/cuda")


def test_a_user_with_no_home_caches_in_the_temporary_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A container's arbitrary user id has no HOME and no passwd entry (Path.home raises):
    the kernels are kept under the temporary directory instead of the call failing."""
    monkeypatch.delenv("DMLOPS_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    monkeypatch.setattr(kernels.tempfile, "gettempdir", lambda: str(tmp_path))
    found = kernels.cache_dir()
    assert found.parent.parent.parent == tmp_path and found.parts[-2:] == ("dmlops", "cuda")


class _Runtime:
    def __init__(self, major: int) -> None:
        self.major = major

    def deviceGetAttribute(self, attribute: int, device: int) -> int:
        return {75: self.major, 76: 0}[attribute]

    def runtimeGetVersion(self) -> int:
        return 12080


def test_a_kernel_is_compiled_once_and_read_back_from_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DMLOPS_CACHE_DIR", str(tmp_path))
    compiled: list[tuple[str, tuple[int, int]]] = []

    def compile_(code: str, options: tuple[str, ...], arch: tuple[int, int]) -> bytes:
        compiled.append((code, arch))
        return f"cubin of {len(code)} for sm_{arch[0]}{arch[1]} {' '.join(options)}".encode()

    monkeypatch.setattr(kernels, "_compile", compile_)
    monkeypatch.setattr(kernels, "_images", {})
    source = kernels.source("pack")
    first = kernels._image(source, ("-DES=2",), _Runtime(9), 0)
    assert len(compiled) == 1 and b"sm_90" in first
    assert len(list((tmp_path / "cuda").iterdir())) == 1  # written whole, no temporary left
    monkeypatch.setattr(kernels, "_images", {})  # (a new process: only the disk remains)
    assert kernels._image(source, ("-DES=2",), _Runtime(9), 0) == first
    assert len(compiled) == 1
    kernels._image(source, ("-DES=4",), _Runtime(9), 0)  # another specialisation
    kernels._image(source, ("-DES=2",), _Runtime(8), 0)  # another architecture
    assert len(compiled) == 3 and len(list((tmp_path / "cuda").iterdir())) == 3


def test_a_read_only_cache_still_compiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("DMLOPS_CACHE_DIR", str(blocker))  # (its cuda/ cannot be made)
    monkeypatch.setattr(kernels, "_compile", lambda code, options, arch: b"cubin")
    monkeypatch.setattr(kernels, "_images", {})
    assert kernels._image("code", (), _Runtime(9), 0) == b"cubin"


class _Driver:
    """libcuda's module calls, counted: each load a new module, each function a new handle."""

    def __init__(self) -> None:
        self.loads: list[bytes] = []
        self.functions: list[tuple[int, bytes]] = []

    def cuModuleLoadData(self, module: Any, image: Any) -> int:
        self.loads.append(image.value)
        module._obj.value = 100 * len(self.loads)
        return 0

    def cuModuleGetFunction(self, function: Any, module: Any, name: bytes) -> int:
        self.functions.append((module.value, name))
        function._obj.value = module.value + len(self.functions)
        return 0


class _OnDevice(_Runtime):
    def getDevice(self) -> int:
        return 0


def test_a_module_is_loaded_once_for_all_its_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dmlops.backends.cuda import kernels as k

    driver = _Driver()
    monkeypatch.setenv("DMLOPS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(
        k, "_compile", lambda code, options, arch: b"cubin " + str(options).encode()
    )
    monkeypatch.setattr(k, "driver_library", lambda: driver)
    for name in ("_images", "_modules", "_handles"):
        monkeypatch.setattr(k, name, {})
    runtime = _OnDevice(9)
    first = k.handle(runtime, "indexed", entry="dmlops_indexed")
    second = k.handle(runtime, "indexed", entry="dmlops_indexed_lean")
    assert k.handle(runtime, "indexed", entry="dmlops_indexed") == first != second
    assert len(driver.loads) == 1  # one module, two functions of it
    assert driver.functions == [(100, b"dmlops_indexed"), (100, b"dmlops_indexed_lean")]
    k.handle(runtime, "pack", (("ES", 2), ("VW", 16)))
    assert len(driver.loads) == 2 and driver.functions[-1] == (200, b"dmlops_pack")
