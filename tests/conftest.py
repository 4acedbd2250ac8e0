"""Shared fixtures: the backends to test and hypothesis strategies for descriptors."""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))
# JAX shares the GPU with torch and CuPy here: no preallocation of most of its memory
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

# the default profile draws the same examples on every run (the README's test command and
# CI alike give one answer; a third-party crash on some random example, as onnx's shape
# inference aborted the process once in 2026-11, cannot make a run fail by chance);
# "explore" and "thorough" draw new ones each run
settings.register_profile(
    "default",
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "explore",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "thorough",
    max_examples=600,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "sanitizer", max_examples=25, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def cuda_available() -> bool:
    try:
        import cupy

        return bool(cupy.cuda.runtime.getDeviceCount() > 0)
    except Exception:  # noqa: BLE001 - any failure means no usable GPU
        return False


def webgpu_available() -> bool:
    try:
        from dmlops.backends.webgpu import choose_adapter

        choose_adapter(None)
        return True
    except Exception:  # noqa: BLE001 - no wgpu, no driver or no adapter: no WebGPU
        return False


HAS_CUDA = cuda_available()
HAS_WEBGPU = webgpu_available()

WEBGPU = pytest.param(
    "webgpu",
    marks=[pytest.mark.webgpu, pytest.mark.skipif(not HAS_WEBGPU, reason="no WebGPU adapter")],
)
CUDA = pytest.param(
    "cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")]
)
BACKENDS = ["numpy", CUDA, WEBGPU]
# torch devices of the torch tests: the CPU, and CUDA where a GPU is
TORCH_DEVICES = ["cpu", CUDA]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# the numpy backend with its indexed copies compiled (numba) from a plan's first run (the
# engine's own indexed kernel off: numba's run them where the engine is not built); plain
# "numpy" tests run them on the engine's kernel
NUMPY_COMPILED = pytest.param(
    "numpy-compiled",
    marks=pytest.mark.skipif(
        not __import__("dmlops.backends.compiled_indexed", fromlist=["available"]).available(),
        reason="no numba: indexed copies are not compiled",
    ),
)


# the numpy backend with the CPU engine off: gathers through numpy's vectorised path (with
# the engine on, they run on its native kernel)
NUMPY_VECTORISED = "numpy-vectorised"


def backend_name(backend: str) -> str:
    """The backend a test backend names (numpy-compiled and numpy-vectorised are the numpy
    backend)."""
    return "numpy" if backend in ("numpy-compiled", NUMPY_VECTORISED) else backend


@pytest.fixture(autouse=True)
def _engine_off(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Under the "numpy-vectorised" backend: the CPU engine off (every call signature made
    afresh, before and after)."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is None or callspec.params.get("backend") != NUMPY_VECTORISED:
        yield
        return
    import dmlops
    from dmlops.backends import cpu_engine

    dmlops.functional.clear_cache()
    cpu_engine.set_enabled(False)
    try:
        yield
    finally:
        cpu_engine.set_enabled(True)
        dmlops.functional.clear_cache()


@pytest.fixture(autouse=True)
def _compiled_indexed(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Under the "numpy-compiled" backend: indexed copies compiled by numba from a plan's
    first run (every call signature made afresh, before and after)."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is None or callspec.params.get("backend") != "numpy-compiled":
        yield
        return
    import dmlops
    from dmlops.backends import native_indexed, numpy_backend

    dmlops.functional.clear_cache()
    numpy_backend._WARM_RUNS = 1
    native_indexed.set_enabled(False)  # (else the engine's own kernel runs them)
    try:
        yield
    finally:
        numpy_backend._WARM_RUNS = 3
        native_indexed.set_enabled(True)
        dmlops.functional.clear_cache()


def to_device(backend: str, a: np.ndarray):  # type: ignore[no-untyped-def]
    if backend == "webgpu":
        import dmlops.webgpu

        return dmlops.webgpu.asarray(a)
    if backend == "cuda":
        import cupy

        return cupy.asarray(a)
    return a  # numpy, numpy-compiled, numpy-vectorised


def to_host(a):  # type: ignore[no-untyped-def]
    if isinstance(a, np.ndarray):
        return a
    if getattr(type(a), "__dmlops_backend__", None) == "webgpu":
        return a.numpy()
    import cupy

    return cupy.asnumpy(a)


@pytest.fixture
def launches():  # type: ignore[no-untyped-def]
    """Every CUDA launch (its strategy group) while the test runs."""
    from dmlops.backends.cuda import CudaBackend

    backend = CudaBackend.instance()
    backend.launch_log = []
    yield backend.launch_log
    backend.launch_log = None


@pytest.fixture
def dispatches():  # type: ignore[no-untyped-def]
    """Every WebGPU dispatch (its strategy group) while the test runs."""
    from dmlops.backends.webgpu import WebGpuBackend

    backend = WebGpuBackend.instance()
    backend.dispatch_log = []
    yield backend.dispatch_log
    backend.dispatch_log = None


ONNXRUNTIME_IR = 9  # an IR version every onnxruntime the tests meet reads


def for_onnxruntime(model: Any) -> bytes:
    """A model's bytes for onnxruntime, its IR version at most ONNXRUNTIME_IR: `onnx` newer
    than `onnxruntime` stamps versions it refuses ("Unsupported model IR version")."""
    copy = type(model)()
    copy.CopyFrom(model)
    copy.ir_version = min(copy.ir_version, ONNXRUNTIME_IR)
    return bytes(copy.SerializeToString())


@pytest.fixture
def indexed_preparations(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What each CUDA `IndexedLaunch._prepare` made, in order (it still runs): (winner
    table, launches, what they keep — the meta table first, the addresses' arrays last —,
    whether each call clears the table)."""
    from dmlops.backends.cuda import indexed as cuda_indexed

    made: list[Any] = []
    prepare = cuda_indexed.IndexedLaunch._prepare

    def noting(self: Any, *args: Any, **kwargs: Any) -> Any:
        found = prepare(self, *args, **kwargs)
        made.append(found)
        return found

    monkeypatch.setattr(cuda_indexed.IndexedLaunch, "_prepare", noting)
    return made
