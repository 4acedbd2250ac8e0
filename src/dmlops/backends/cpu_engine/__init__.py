"""The CPU engine: a plan's strided copies in C on a pool of worker threads (`native/`),
where the extension was built; the numpy engine runs them otherwise.

The pool is made for machines that run other work too: a copy is cut into pieces many
more than the threads, pieces are claimed one at a time (the calling thread takes them
too), so a worker the kernel has descheduled delays only a piece it holds, never a share
fixed in advance; small jobs run on the calling thread alone; idle workers spin briefly,
then sleep, and are woken in a tree (no thread wakes more than two); a job asks only the
CPUs of the set that other runnable tasks leave free. It survives fork(): a child forgets
the parent's workers and starts its own.
Calls from many Python threads run at once: one job holds the pool, the others run on
their own threads (the GIL released throughout).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import DmlError
from ...plan import Plan
from .caches import chosen_streaming_bytes, last_level_cache_bytes, streaming_bytes
from .cgroups import (
    cpu_quota_all,
    cpu_quota_files,
    cpu_quota_period,
    cpu_quota_usage,
    memory_limit,
)
from .scope import in_scheduler_task, scheduler_task
from .threads import (
    choose_threads,
    cpu_quota,
    follow_quota,
    get_num_threads,
    load_aware,
    quota_aware,
    set_num_threads,
)

__all__ = [
    "EnginePlan",
    "CACHED_BYTES",
    "DEFAULTS",
    "QUOTA_FILES",
    "QUOTA_USAGE",
    "available",
    "configure",
    "empty",
    "empty_cache",
    "enabled",
    "choose_threads",
    "cpu_quota",
    "cpu_quota_files",
    "cpu_quota_period",
    "cpu_quota_usage",
    "default_cache_limit",
    "memory_limit",
    "get_num_threads",
    "in_scheduler_task",
    "load_aware",
    "native",
    "quota_aware",
    "quota_settings",
    "scheduler_task",
    "set_cache_limit",
    "set_enabled",
    "set_num_threads",
]


def quota_settings(quota: tuple[float, int] | None) -> dict[str, int]:
    """The engine's settings for a cgroup CPU quota (CPUs, period in µs; None: none, 0)."""
    if quota is None:
        return {"quota_millicpus": 0, "quota_period_us": 100000}
    return {"quota_millicpus": max(1, round(quota[0] * 1000)), "quota_period_us": quota[1]}


def _quota_aware_here() -> bool:
    """DMLOPS_QUOTA_AWARE's answer (a bad value is refused by name when the engine loads)."""
    try:
        return quota_aware()
    except DmlError:
        return True


def _quota_cpus(millicpus: int) -> float | None:
    """A quota in thousandths of a CPU as CPUs (None: none)."""
    return millicpus / 1000 if millicpus > 0 else None


# this process's cgroup quota (CPUs, period in µs), the file counting its group's CPU time
# and the files that set it, from one reading of its groups; none where DMLOPS_QUOTA_AWARE=0
_QUOTA, _USAGE, _FILES = cpu_quota_all() if _quota_aware_here() else (None, None, ("", ""))


# whether compiled CPU code may run: DMLOPS_CPU_ENGINE=numpy, read once, or set_enabled
_STATE: dict[str, Any] = {"enabled": os.environ.get("DMLOPS_CPU_ENGINE", "") != "numpy"}

# the pool's idle spin after a job the machine's load cut short and after one that found a free CPU
# for every thread it wanted, the bytes that earn a thread, a piece's least and most bytes, the wait
# for a job's last pieces that counts as a straggle (setting it resets what the pool learnt of the
# machine's load), whether a job asks only the CPUs other runnable tasks leave free (the runnable
# count of /proc/loadavg, read at most once a ms), and the job bytes from which stores stream past
# the caches (3/8 of the last-level cache, 1-16 MiB), the job time from which a job asks every
# thread whatever the load, and whether a job is cut into one range of pieces a thread (each
# thread's own first: a call repeated on the same arrays finds each part in the cache of the core
# that moved it), and how long a caller with no piece left spins for the last ones before it sleeps,
# and whether rows read backwards move in 32-byte vectors where the CPU has AVX2, and whether rows
# read every second to fourth element move by byte shuffles there (1: 1-byte elements at steps 3,
# -2, -3, -4, where they won; 2: 2- and 4-byte ones and every step too; 0: never), and whether a
# transpose's tiles move as 16-byte blocks transposed in registers, and a container's CPU quota in
# thousandths of a CPU (0: none) and its period, whose budget keeps the threads a job asks beyond
# the quota's whole CPUs from spending it (native/quota.h: the process's cgroup's, read here);
# given to the extension when it loads, where DMLOPS_STREAMING_BYTES and DMLOPS_LOAD_AWARE then
# override theirs
DEFAULTS = {
    "spin_us": 50,
    "idle_spin_us": 300,
    "least_bytes_a_thread": 64 << 10,
    "least_grain": 16 << 10,
    "most_grain": 1 << 20,
    "straggle_us": 1000,
    "load_aware": 1,
    "long_job_us": 16000,  # (native/pool.h: LONG_JOB_NS)
    "home_ranges": 1,
    "caller_spin_us": 20,
    "wide_vectors": 1,
    "step_shuffles": 1,
    "tile_blocks": 1,
    "deal_most_bytes": 512,  # (native/evens.c: rows dealt from one read up to this long)
    # (native/module.c: a job moving less than this for each of its threads keeps the GIL)
    "gil_held_bytes_a_thread": 512 << 10,
    # (native/module.c: after a released job waited this long for the GIL back, jobs of up to
    # this many times that limit keep it for this long)
    "gil_busy_wait_us": 1000,
    "gil_busy_hold": 8,
    "gil_busy_window_us": 100_000,
    "streaming_bytes": streaming_bytes(),
    **quota_settings(_QUOTA),
}
# the file the budget reads the quota's group's CPU time from (native/quota.h; "": this
# process's own CPU time alone), and the files that set the quota, read again at most once a
# second (a quota changed while the process runs: a Kubernetes pod resized in place,
# `docker update --cpus`)
QUOTA_USAGE = "" if _USAGE is None else str(_USAGE)
QUOTA_FILES = _FILES


def native() -> Any:
    """The C extension module, or None where it was not built (no C compiler at install)."""
    if "native" not in _STATE:
        try:
            from . import _native  # type: ignore[attr-defined]
        except ImportError:
            _native = None
        else:
            chosen = chosen_streaming_bytes(machine=DEFAULTS["streaming_bytes"])
            aware = int(load_aware())
            quota_aware()  # (DEFAULTS already holds its answer; a bad value is refused here)
            _native.configure(**{**DEFAULTS, "streaming_bytes": chosen, "load_aware": aware})
            try:
                _native.quota_usage(QUOTA_USAGE)
            except OSError:
                _native.quota_usage("")  # (gone since: the process's own CPU time counts)
            try:
                _native.quota_watch(*QUOTA_FILES)
            except OSError:
                _native.quota_watch("", "")  # (gone since: the quota it was told stays)
            else:
                if QUOTA_FILES[0]:
                    follow_quota(lambda: _quota_cpus(_native.quota_files_now()))
            _native.cache_limit(default_cache_limit(memory_limit()))
        _STATE["native"] = _native
    return _STATE["native"]


def configure(**settings: int) -> None:
    """Change the engine's tunables (DEFAULTS names them) for this process."""
    unknown = set(settings) - set(DEFAULTS)
    if unknown:
        raise TypeError(f"unknown engine settings: {sorted(unknown)}")
    module = native()
    if module is not None:
        module.configure(**settings)
    if "tile_blocks" in settings:  # (plans made after this walk their transposes by it)
        _STATE["tile_blocks"] = settings["tile_blocks"]


def block_tiles() -> bool:
    """Whether a transpose's tiles move as 16-byte blocks transposed in registers (the
    engine built for a machine with SSE2, and `tile_blocks` not set to 0)."""
    module = native()
    return bool(module is not None and module.TILE_BLOCKS and _STATE.get("tile_blocks", 1))


def set_enabled(enabled: bool) -> None:
    """Turn the engine on or off for this process (tests compare it with the numpy one)."""
    _STATE["enabled"] = enabled


def enabled() -> bool:
    """Whether compiled CPU code may run (DMLOPS_CPU_ENGINE=numpy or set_enabled(False)
    leaves every copy to numpy)."""
    return bool(_STATE["enabled"])


def available() -> bool:
    """Whether the engine runs plans: built, and enabled."""
    return enabled() and native() is not None


CACHED_BYTES = 256 << 10  # new outputs at least this large take memory from the cache


def empty(shape: tuple[int, ...], dtype: Any, tag: int = 0) -> np.ndarray[Any, Any]:
    """A new uninitialised array whose memory comes from the engine's cache of dropped
    outputs' memory (kept mapped: no page faults on reuse) where the engine is there and the
    array is large, else (and in a scheduler's task) numpy's own. `tag` names the output
    (which output of which call): memory it had before is taken first."""
    if not isinstance(dtype, np.dtype):
        dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for n in shape:
        nbytes *= n
    if nbytes < CACHED_BYTES:  # (first: the commonest answer, before any other question)
        return np.empty(shape, dtype)
    module = native()
    if module is None or not enabled() or in_scheduler_task():
        return np.empty(shape, dtype)
    made: np.ndarray[Any, Any] = np.ndarray(shape, dtype, buffer=module.block(nbytes, tag))
    return made


def empties(
    shapes: Sequence[tuple[int, ...]], dtype: Any, tag: int = 0
) -> list[np.ndarray[Any, Any]]:
    """New uninitialised arrays of one type (`empty` each, tags `tag`, `tag` + 1, ...; the
    small ones numpy's own made in one pass: a many-way split's parts)."""
    dtype = np.dtype(dtype)
    most = CACHED_BYTES // dtype.itemsize
    new, prod = np.empty, math.prod
    return [
        new(shape, dtype) if prod(shape) < most else empty(shape, dtype, tag and tag + k)
        for k, shape in enumerate(shapes)
    ]


CACHE_KEPT = 256 << 20  # dropped outputs' memory kept for new outputs, where memory allows


def default_cache_limit(memory: int | None) -> int:
    """The dropped outputs' memory kept by default: CACHE_KEPT, or an eighth of a cgroup's
    memory limit where that is less (a container of 512 MiB keeps 64 MiB, not half its
    memory)."""
    return CACHE_KEPT if memory is None else min(CACHE_KEPT, memory // 8)


def set_cache_limit(nbytes: int) -> None:
    """Keep at most `nbytes` of dropped outputs' memory for new outputs (256 MiB by
    default, an eighth of a container's memory limit where that is less; 0 returns each
    block to the system as soon as it is dropped)."""
    module = native()
    if module is not None:
        module.cache_limit(int(nbytes))


def empty_cache() -> None:
    """Return the memory of dropped outputs that the engine keeps to the system."""
    module = native()
    if module is not None:
        module.clear_cache()


_SHORT_ROW = 256  # bytes: shorter rows side by side in the source move in its order


def _rows_sharing_lines_last(
    shape: tuple[int, ...],
    src_strides: tuple[int, ...],
    dst_strides: tuple[int, ...],
    size: int = 4,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Where rows share source lines — they interleave in the source (an outer step shorter
    than a row's span: a Focus stem's 2 x 2 offsets, a pixel unshuffle's column phase), or
    rows shorter than 256 bytes lie side by side there (an outer step equal to the span: a
    head transpose of short heads) — the outer dimensions in the source's memory order
    (largest step first), so that rows sharing source lines move one after another and each
    line is read from memory once, not once a pass; other copies keep the plan's order (by
    destination). On the 16-core host a Focus stem on one thread 1.56 -> 0.88 ms, a pixel
    unshuffle on 16 threads 0.114 -> 0.075 ms; on the VM a transpose of 16 heads of 64-byte
    rows (4 MiB) on one thread 816 -> 194 us (numpy 414). QKV's head transpose (rows of 256
    bytes) was 5-10 % slower in source order on the 16-core host and level on the VM."""
    if len(shape) < 3:
        return shape, src_strides, dst_strides
    span = abs(src_strides[-1]) * shape[-1]
    outer = range(len(shape) - 1)
    short = span * size < _SHORT_ROW and abs(src_strides[-1]) == 1
    if not any(
        abs(src_strides[k]) < span or (short and abs(src_strides[k]) == span and shape[k] > 1)
        for k in outer
    ):
        return shape, src_strides, dst_strides
    order = [*sorted(outer, key=lambda k: -abs(src_strides[k])), len(shape) - 1]
    return (
        tuple(shape[k] for k in order),
        tuple(src_strides[k] for k in order),
        tuple(dst_strides[k] for k in order),
    )


# fields of a copy record (copies.h: copy_t) that the table's builders read back
_DST, _DST_OFFSET, _ELEMENT, _COUNT, _SRC_STEP, _DST_STEP = 1, 3, 4, 5, 6, 7
_OUTER, _MEMBERS, _SHAPE, _INTERLEAVED = 8, 9, 10, -1  # (_INTERLEAVED: the last field)

_GROUP_ROW_BYTES = 64 << 10  # copies group while a row of each, together, is this short


def _interleaved_run(rows: list[list[int]], k: int, most: int) -> int:
    """How many copies from `k` on interleave their rows element by element into one
    contiguous destination row (copy m of them writing elements m, m + n, ... of it, n the
    run's length, with the same outer walk of the destination): an upsampling's phases, a
    depth-to-space's columns. 0 where they do not."""
    lead = rows[k]
    element, outer = lead[_ELEMENT], lead[_OUTER]
    n, rest = divmod(lead[_DST_STEP], element) if element else (0, 1)
    if rest or not 2 <= n <= most or k + n > len(rows):
        return 0
    most_outer = (len(lead) - _SHAPE - 1) // 3
    shape = lead[_SHAPE : _SHAPE + outer]
    dst_strides = lead[_SHAPE + 2 * most_outer : _SHAPE + 2 * most_outer + outer]
    for m, r in enumerate(rows[k : k + n]):
        same = (
            r[_DST] == lead[_DST]
            and r[_ELEMENT] == element
            and r[_COUNT] == lead[_COUNT]
            and r[_DST_STEP] == lead[_DST_STEP]
            and r[_OUTER] == outer
            and r[_DST_OFFSET] == lead[_DST_OFFSET] + m * element
            and r[_SHAPE : _SHAPE + outer] == shape
            and r[_SHAPE + 2 * most_outer : _SHAPE + 2 * most_outer + outer] == dst_strides
        )
        if not same:
            return 0
    return n


def _group_rows(rows: list[list[int]], members: int, tiled: set[int]) -> None:
    """Mark runs of neighbouring copies of contiguous rows that share an outer shape (a
    join's or a split's parts) as groups walked together, a row of each in turn: the
    destination (a join) or the source (a split) is then swept once, in memory order, not
    once a part (a 3-way join of 256 MiB on the 16-core host: 91 -> 60 ms on one thread,
    7.9 -> 6.7 ms on 16). Copies walked in tiles stay apart (QKV's heads were slower
    grouped on the VM and on 4 threads). Copies whose rows interleave element by element
    into one destination row group as one sweep of that row (_interleaved_run)."""
    k = 0
    while k < len(rows):
        woven = 0 if k in tiled else _interleaved_run(rows, k, members)
        if woven and not tiled.intersection(range(k, k + woven)):
            rows[k][_MEMBERS], rows[k][_INTERLEAVED] = woven, 1
            for r in rows[k + 1 : k + woven]:
                r[_MEMBERS] = 0
            k += woven
            continue
        outer = None if k in tiled else _rows_of(rows[k])
        run = 1
        while (
            outer is not None
            and k + run < len(rows)
            and k + run not in tiled
            and run < members
            and _rows_of(rows[k + run]) == outer
            and sum(r[_ELEMENT] * r[_COUNT] for r in rows[k : k + run + 1]) <= _GROUP_ROW_BYTES
        ):
            run += 1
        if run > 1 and math.prod(outer or ()) > 1:
            rows[k][_MEMBERS] = run
            for r in rows[k + 1 : k + run]:
                r[_MEMBERS] = 0
        k += run


def _rows_of(row: list[int]) -> tuple[int, ...] | None:
    """A record's outer shape, where its rows are contiguous on both sides (else None)."""
    element, outer = row[_ELEMENT], row[_OUTER]
    if row[_SRC_STEP] != element or row[_DST_STEP] != element:
        return None
    return tuple(row[_SHAPE : _SHAPE + outer])


_PAGE = 4096  # bytes
_TILE = 16  # rows a tile takes along the dimension that steps pages in the source


def _tiled_across_pages(
    shape: tuple[int, ...], src_strides: tuple[int, ...], dst_strides: tuple[int, ...], size: int
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Where the innermost outer dimension steps a page or more in the source while an
    outer one steps less than a page there but a page or more in the destination (a head
    transpose: QKV's rows of 256 bytes, 12 KiB apart in the source), that dimension cut
    into tiles of 16 rows walked inside the other: a tile touches 16 pages on each side,
    where the plain walk touches a new source page every row. QKV's heads on the 16-core
    Xeon host: 1.53 -> 1.28 ms on one thread, 0.132 -> 0.119 ms on 16; on the 2-core EPYC
    VM 8-20 % slower (its prefetchers follow the plain walk's stride)."""
    n = len(shape)
    j = n - 2
    if n < 3 or abs(src_strides[j]) * size < _PAGE or shape[j] <= _TILE or shape[j] % _TILE:
        return shape, src_strides, dst_strides
    within = [
        k
        for k in range(j)
        if shape[k] > 1
        and abs(src_strides[k]) * size < _PAGE
        and abs(dst_strides[k]) * size >= _PAGE
    ]
    if not within:
        return shape, src_strides, dst_strides
    i = within[-1]
    rest = [k for k in range(j) if k != i]
    dims = [(shape[k], src_strides[k], dst_strides[k]) for k in rest]
    dims.append((shape[j] // _TILE, src_strides[j] * _TILE, dst_strides[j] * _TILE))
    dims.append((shape[i], src_strides[i], dst_strides[i]))
    dims.append((_TILE, src_strides[j], dst_strides[j]))
    dims.append((shape[-1], src_strides[-1], dst_strides[-1]))
    return (
        tuple(d[0] for d in dims),
        tuple(d[1] for d in dims),
        tuple(d[2] for d in dims),
    )


_LINE = 64  # bytes
TRANSPOSE_TILE_BYTES = 64  # a transpose tile's side, in bytes of its elements (a line)
_REUSE_BYTES = 256 << 10  # the plain walk's lines between two reads of one line, at most


Dims = tuple[int, ...]
# a copy's walk: (sizes, source strides, destination strides, source and destination shift
# in elements, how it is walked: "" as the plan gives it, "own" an order of its own (never
# grouped), "tiles" in square transpose tiles, the record's `tiled`)
Part = tuple[Dims, Dims, Dims, int, int, str]


def _tiled_transpose(
    shape: Dims, src_strides: Dims, dst_strides: Dims, size: int, blocks: bool = False
) -> list[Part]:
    """A transpose of elements (the destination's rows contiguous, each element of them a
    line or more apart in the source, whose own unit axis is an outer dimension: a slice
    of x.T, NHWC <-> NCHW) as its whole square tiles of a line's worth of elements a side,
    walked tile by tile, and the strips left over along the two axes (plain walks), where
    the plain walk loses its source lines before it comes back for their next elements:
    more than 256 KiB of other lines read in between (NHWC -> NCHW: a channel's whole
    image), or a source step of whole pages (all the lines fall in a few cache sets); else
    the copy as it is. One core of a 16-core Xeon host: [2048, 2048] float32 transposed
    22.5 -> 8.9 ms, NHWC -> NCHW of [8, 128, 128, 64] 53.0 -> 13.3, NCHW -> NHWC 47.5 ->
    23.3 (torch 11.1, 60.4, 37.8); where neither holds the plain walk's stream of lines is
    the faster ([2000, 2000]: 6.5 ms, 15.6 in tiles) unless the engine moves tiles as
    16-byte blocks transposed in registers (`blocks`: then always in tiles for elements of
    1, 2 and 4 bytes; one Xeon thread, [64, 256, 256] transposed: uint8 4.6 -> 0.65 ms,
    float16 5.0 -> 1.06, float32 5.6 -> 1.87, numpy 4.4, 6.0, 6.3; 8-byte elements, two to
    a block, gain nothing there: [16, 512, 512] int64 12.7 ms either way, and 22.2 in
    element-loop tiles)."""
    whole: list[Part] = [(shape, src_strides, dst_strides, 0, 0, "")]
    n = len(shape)
    if n < 2 or dst_strides[-1] != 1 or abs(src_strides[-1]) * size < _LINE:
        return whole
    units = [k for k in range(n - 1) if abs(src_strides[k]) == 1 and shape[k] > 1]
    if not units:
        return whole
    i = units[-1]
    between = int(np.prod(shape[i + 1 :], dtype=np.int64))  # lines before a line's next use
    pages = (abs(src_strides[-1]) * size) % _PAGE == 0
    side = max(TRANSPOSE_TILE_BYTES // size, 4)
    if (between * _LINE <= _REUSE_BYTES and not pages and not (blocks and size <= 4)) or min(
        shape[i], shape[-1]
    ) < side:
        return whole
    rows, columns = shape[i] // side * side, shape[-1] // side * side
    parts: list[Part] = [
        (*_in_tiles(shape, src_strides, dst_strides, i, side, rows, columns), 0, 0, "tiles")
    ]
    if rows < shape[i]:  # the last rows (along the source's unit axis), whole
        strip = tuple(shape[i] - rows if k == i else m for k, m in enumerate(shape))
        shift = (rows * src_strides[i], rows * dst_strides[i])
        parts.append((strip, src_strides, dst_strides, *shift, "own"))
    if columns < shape[-1]:  # the last columns of the other rows
        strip = (*(rows if k == i else m for k, m in enumerate(shape[:-1])), shape[-1] - columns)
        parts.append((strip, src_strides, dst_strides, columns * src_strides[-1], columns, "own"))
    return parts


def _in_tiles(
    shape: Dims, src_strides: Dims, dst_strides: Dims, i: int, side: int, rows: int, columns: int
) -> tuple[Dims, Dims, Dims]:
    """The first `rows` x `columns` of a transpose (dimension i, the source's unit axis, and
    the innermost) as tiles of `side` x `side`, walked tile by tile."""
    n = len(shape)
    dims = [(shape[k], src_strides[k], dst_strides[k]) for k in range(n - 1) if k != i]
    dims.append((rows // side, src_strides[i] * side, dst_strides[i] * side))
    dims.append((columns // side, src_strides[-1] * side, dst_strides[-1] * side))
    dims.append((side, src_strides[i], dst_strides[i]))
    dims.append((side, src_strides[-1], dst_strides[-1]))
    return (
        tuple(d[0] for d in dims),
        tuple(d[1] for d in dims),
        tuple(d[2] for d in dims),
    )


_MOST_WOVEN = 16  # phases (innermost elements) a woven copy may have


def _weaves(
    shape: tuple[int, ...], src_strides: tuple[int, ...], dst_strides: tuple[int, ...], most: int
) -> bool:
    """Whether a copy's innermost dimension is a few phases side by side in the destination
    (its stride 1, the next dimension's its size: an upsampling's repeats, a depth-to-space's
    columns from their channels), moved better as one copy a phase whose rows the engine
    weaves into each destination row than as rows of a few elements. Not where the source
    holds them side by side too (short rows contiguous on both sides: a split's parts of 8
    or 16 elements, each a plain row; a 64 KiB 4-way split on one VM thread: 10.2 us woven,
    6.2 as rows)."""
    if len(shape) < 2 or not 2 <= shape[-1] <= min(most, _MOST_WOVEN) or shape[-2] < 4:
        return False
    if src_strides[-1] == 1:
        return False
    return dst_strides[-1] == 1 and dst_strides[-2] == shape[-1]


@functools.cache
def _cache_bytes() -> int:
    """The last-level cache's bytes (sysfs read once)."""
    return last_level_cache_bytes()


class EnginePlan:
    """A plan's strided copies as the engine's table: one record per copy (bindings, byte
    offsets, element size, the innermost dimension's count and byte steps, the outer
    dimensions' sizes and byte strides), and the bytes each binding must hold."""

    def __init__(self, table: np.ndarray[Any, Any]) -> None:
        self.table = table

    @classmethod
    def of(cls, plan: Plan) -> EnginePlan | None:
        """The plan's copies (fills bound after the inputs) as a table, or None where the
        engine is not there or a copy has more outer dimensions than it walks."""
        module = native()
        if module is None:
            return None
        size = plan.element_size
        most = int(module.MOST_OUTER)
        record = int(module.RECORD)
        inputs = len(plan.input_spans) + len(plan.fills)
        rows: list[list[int]] = []
        tiled: set[int] = set()  # copies walked in tiles (never grouped: their walk is theirs)
        for c in plan.copies:
            if len(c.shape) - 1 > most:
                return None
            shape, ss, ds = _rows_sharing_lines_last(
                c.shape or (1,), c.src_strides or (0,), c.dst_strides or (0,), size
            )
            parts: list[Part] = [(shape, ss, ds, 0, 0, "")]
            if len(shape) <= most and shape == c.shape:
                plain = shape
                shape, ss, ds = _tiled_across_pages(shape, ss, ds, size)
                parts = [(shape, ss, ds, 0, 0, "own" if shape != plain else "")]
                if shape == plain and len(plain) + 1 <= most:  # (tiles add two dimensions)
                    parts = _tiled_transpose(shape, ss, ds, size, block_tiles())
            src = c.src if c.src >= 0 else inputs + c.src  # (fill k: inputs[-1 - k])
            for shape, ss, ds, src_shift, dst_shift, walk in parts:
                if walk or len(parts) > 1:  # (a walk of its own: never grouped)
                    tiled.add(len(rows))
                phases = 1
                if len(rows) not in tiled and _weaves(shape, ss, ds, int(module.MOST_MEMBERS)):
                    phases = shape[-1]  # one copy a phase, their rows woven (_group_rows)
                    shape = shape[:-1]
                outer = len(shape) - 1
                src_at, dst_at = c.src_offset + src_shift * size, c.dst_offset + dst_shift * size
                for m in range(phases):
                    row = [src, c.dst, src_at + m * ss[-1] * size, dst_at + m * size]
                    row += [size, shape[-1]]
                    k = len(shape) - 1  # (the innermost dimension's strides)
                    row += [ss[k] * size, ds[k] * size, outer, 1]
                    row += [*shape[:-1], *[0] * (most - outer)]
                    row += [t * size for t in ss[:outer]] + [0] * (most - outer)
                    row += [t * size for t in ds[:outer]] + [0] * (most - outer)
                    row.append(int(walk == "tiles"))  # (tiled)
                    row.append(0)  # (interleaved: set by _group_rows)
                    assert len(row) == record
                    rows.append(row)
        _group_rows(rows, int(module.MOST_MEMBERS), tiled)
        need_in = [hi for _, hi in plan.input_spans]
        need_in += [len(v) if plan.is_tensor_fill(k) else size for k, v in enumerate(plan.fills)][
            ::-1
        ]
        need_out = [hi for _, hi in plan.output_spans]
        # a plan whose scatters write its output again right after its copies: their stores
        # through the cache (the rows then find their lines there), where half the cache
        # holds it (SCATTER_ND of 25.6 MB, a Xeon thread: 6.4 -> 4.5 ms, 16 threads 3.3 ->
        # 1.8; the VM's 32 MiB cache, where it does not hold it, was slower kept: 4.6 -> 5.8)
        scattered = any(c.scatter for c in plan.indexed)
        keep = scattered and sum(need_out) <= _cache_bytes() // 2
        flags = int(module.KEEP_CACHED) if keep else 0
        header = [len(rows), inputs, len(need_out), flags, *need_in, *need_out]
        flat = header + [v for row in rows for v in row]
        return cls(np.array(flat, np.int64))

    @classmethod
    def contiguous(cls, nbytes: int) -> EnginePlan:
        """One copy of `nbytes` contiguous bytes from input 0 to output 0 (the benchmarks'
        copy ceiling)."""
        from ...plan import StridedCopy

        copy = StridedCopy(0, 0, (1,), 0, 0, (1,), (nbytes,))
        plan = Plan(1, (copy,), ((0, nbytes),), ((0, nbytes),))
        made = cls.of(plan)
        assert made is not None
        return made

    def run(self, ins: Any, outs: Any, threads: int) -> bool:
        """Move the copies between the bound buffers on up to `threads` threads; False,
        with nothing written, where an output overlaps an input (the caller's ordered path
        then runs them)."""
        return bool(_STATE["native"].run(self.table, ins, outs, threads))
