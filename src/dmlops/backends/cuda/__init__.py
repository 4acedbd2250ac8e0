"""CUDA backend: plans executed by runtime-compiled kernels, through CuPy.

Each copy of a plan is given a strategy (`strategies.py`: the general strided
kernel with vector, gather and fast-division modes; misaligned rows; tiled
transposes); copies of one strategy and specialisation are rows of one piece
table, walked by one persistent-grid launch, so a 256-way SPLIT is one launch.
Kernel sources are the `.cu` files in `kernels/`; piece tables are uploaded
once per tuple of bound addresses and cached.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from ...errors import BindingError, DmlError
from ...plan import Plan
from .._address_cache import AddressCache
from . import kernels
from .strategies import THREADS, Group, group_copies

__all__ = ["CudaBackend"]

_TABLE_CACHE = 16


class CudaBackend:
    """Executes plans on the current CUDA device with one kernel launch per plan."""

    name = "cuda"
    _instance: CudaBackend | None = None

    def __init__(self) -> None:
        try:
            import cupy
        except ImportError as e:
            raise DmlError("the cuda backend needs CuPy: pip install 'dmlops[cuda]'") from e
        try:
            props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        except Exception as e:
            raise DmlError(f"the cuda backend found no usable CUDA device: {e}") from e
        self.cupy = cupy
        self.multiprocessors = int(props["multiProcessorCount"])
        self.launch_log: list[Group] | None = None  # tests set a list to see every launch
        self._blocks: dict[int, int] = {}

    @classmethod
    def instance(cls) -> CudaBackend:
        """The shared backend object."""
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    # -- arrays and buffers ------------------------------------------------------------

    def as_array(self, obj: Any) -> Any:
        cp = self.cupy
        if isinstance(obj, cp.ndarray):
            return obj
        if hasattr(obj, "__cuda_array_interface__"):
            return cp.asarray(obj)
        if hasattr(obj, "__dlpack__"):
            return cp.from_dlpack(obj)
        raise BindingError(f"{type(obj).__name__} is not a GPU array")

    def array_keys(self) -> dict[type, Callable[[Any], Hashable]]:
        keys: dict[type, Callable[[Any], Hashable]] = {
            self.cupy.ndarray: lambda a: (a.dtype, a.shape, a.strides)
        }
        torch = _torch()
        if torch is not None:
            keys[torch.Tensor] = lambda t: (t.dtype, t.shape, t.stride(), t.device)
        return keys

    def _pointer(self, obj: Any) -> int:
        """Device address of an array's index 0."""
        if isinstance(obj, self.cupy.ndarray):
            return int(obj.data.ptr)
        ptr = getattr(obj, "data_ptr", None)
        if ptr is not None:
            return int(ptr())
        cai = getattr(obj, "__cuda_array_interface__", None)
        if cai is not None:
            return int(cai["data"][0])
        return int(self.as_array(obj).data.ptr)

    def byte_view(self, obj: Any, writable: bool) -> tuple[int, int]:
        cp = self.cupy
        if isinstance(obj, cp.cuda.MemoryPointer):
            return int(obj.ptr), int(obj.mem.size - (obj.ptr - obj.mem.ptr))
        if isinstance(obj, cp.cuda.memory.BaseMemory):
            return int(obj.ptr), int(obj.size)
        try:
            arr = self.as_array(obj)
        except BindingError:
            raise BindingError(
                f"{type(obj).__name__} is not a GPU buffer: bind a CuPy array, a DLPack GPU "
                "array or a cupy.cuda.MemoryPointer"
            ) from None
        if not (arr.flags.c_contiguous or arr.flags.f_contiguous):
            raise BindingError("a bound buffer must be contiguous memory")
        return int(arr.data.ptr), int(arr.nbytes)

    def window(self, flat: Any, offset: int, size: int) -> int:
        return int(flat) + offset

    def flat_function(self, low: int, nbytes: int, contiguous: bool) -> Callable[[Any], Any]:
        pointer = self._pointer
        return lambda arr: pointer(arr) + low

    def owner(self, obj: Any) -> object | None:
        return None  # device addresses are cheap to read

    def address(self, flat: Any) -> int:
        return int(flat)

    def new_like(self, template: Any, shape: tuple[int, ...]) -> Any:
        cp = self.cupy
        if isinstance(template, cp.ndarray):
            return cp.empty(shape, dtype=template.dtype)
        torch = _torch()
        if torch is not None and isinstance(template, torch.Tensor):
            return torch.empty(shape, dtype=template.dtype, device=template.device)
        return self._library_of(cp.empty(shape, dtype=self.as_array(template).dtype), template)

    def copy_of(self, arr: Any) -> Any:
        cp = self.cupy
        torch = _torch()
        if torch is not None and isinstance(arr, torch.Tensor):
            return arr.clone(memory_format=torch.contiguous_format)
        copy = cp.array(self.as_array(arr), copy=True, order="C")
        return copy if isinstance(arr, cp.ndarray) else self._library_of(copy, arr)

    def upload(self, host: Any) -> Any:
        return self.cupy.asarray(host)

    def download(self, arr: Any, out: Any = None) -> Any:
        host = self.cupy.asnumpy(self.as_array(arr))
        if out is None:
            return host
        out[...] = host
        return out

    def _library_of(self, result: Any, template: Any) -> Any:
        """`result` (a CuPy array) in the array library of `template`, without a copy."""
        module = type(template).__module__.split(".")[0]
        if module in ("jax", "jaxlib"):
            import jax

            return jax.dlpack.from_dlpack(result)
        return result

    # -- execution ---------------------------------------------------------------------

    def _launches(self, plan: Plan, ins: Sequence[int], outs: Sequence[int]) -> list[Any]:
        """(kernel, grid, args, table, group) of every launch running `plan` on these addresses."""
        cp = self.cupy
        launches = []
        for group in group_copies(plan, ins, outs, self.multiprocessors):
            table = cp.asarray(group.table)
            fn = kernels.compiled(cp, group.kernel, group.defines)
            # a persistent grid of two waves of resident blocks (or one block per tile)
            grid = int(max(1, min(group.tiles, 2 * self.multiprocessors * self._occupancy(fn))))
            args = (np.uint64(table.data.ptr), np.int32(group.pieces), np.int64(group.tiles))
            launches.append((fn, grid, args, table, group))
        return launches

    def _occupancy(self, fn: Any) -> int:
        blocks = self._blocks.get(id(fn))
        if blocks is None:
            blocks = self._blocks[id(fn)] = kernels.blocks_per_multiprocessor(self.cupy, fn)
        return blocks

    def executor(self, plan: Plan) -> _CudaExecutor:
        return _CudaExecutor(self, plan)


class _CudaExecutor:
    """A plan's launches, resolved (tables uploaded) once per tuple of device addresses."""

    def __init__(self, backend: CudaBackend, plan: Plan) -> None:
        self.backend = backend
        self.plan = plan
        self.cache: AddressCache[list[Any]] = AddressCache(_TABLE_CACHE)

    def _resolve(self, ins: Sequence[int], outs: Sequence[int]) -> list[Any]:
        return self.cache.get((*ins, *outs), lambda: self.backend._launches(self.plan, ins, outs))

    def _launch(self, launches: list[Any]) -> None:
        log = self.backend.launch_log
        for fn, grid, args, _, group in launches:
            fn((grid,), (THREADS,), args)
            if log is not None:
                log.append(group)

    def __call__(self, ins: Sequence[int], outs: Sequence[int]) -> None:
        self._launch(self._resolve(ins, outs))

    def bound(self, ins: Sequence[int], outs: Sequence[int]) -> Callable[[], None]:
        launches = self._resolve(ins, outs)
        if len(launches) == 1 and self.backend.launch_log is None:
            fn, grid, args, _, _ = launches[0]
            block = (THREADS,)
            return lambda: fn((grid,), block, args)
        return lambda: self._launch(launches)


def _torch() -> Any:
    """The torch module if it is already imported (never imported here)."""
    return sys.modules.get("torch")
