"""The machine's last-level cache, and the job size from which the engine writes past it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ...errors import DmlError

__all__ = [
    "MOST_STREAMING_BYTES",
    "NEVER",
    "chosen_streaming_bytes",
    "last_level_cache_bytes",
    "streaming_bytes",
]

_FALLBACK = 32 << 20  # where no cache size can be read
MOST_STREAMING_BYTES = 16 << 20


def _size(text: str) -> int:
    """Bytes of a sysfs cache size ("32768K", "1M", "512")."""
    text = text.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    digits = text[:-1] if text[-1:] in "KMG" else text
    return int(digits) * scale


def last_level_cache_bytes(root: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> int:
    """Bytes of CPU 0's outermost data (or unified) cache as sysfs describes it, or 32 MiB
    where it cannot be read (not Linux, no sysfs in the container)."""
    best = (0, 0)
    try:
        entries = sorted(root.glob("index*"))
        for entry in entries:
            kind = (entry / "type").read_text().strip()
            if kind not in ("Data", "Unified"):
                continue
            level = int((entry / "level").read_text())
            best = max(best, (level, _size((entry / "size").read_text())))
    except (OSError, ValueError):
        return _FALLBACK
    return best[1] if best[1] > 0 else _FALLBACK


def streaming_bytes(cache: int | None = None) -> int:
    """A job writing this many bytes or more streams its stores past the caches: 3/8 of the
    last-level cache (a copy's sources and output then take 3/4 of it: they no longer stay
    there together, and a cached write would first read each line it replaces), at most
    16 MiB (a large cache shared by many cores kept no job of 16-64 MiB on a 16-core Xeon
    host: streamed, each ran 1.1-1.9x faster on one core), at least 1 MiB."""
    share = (last_level_cache_bytes() if cache is None else cache) * 3 // 8
    return max(1 << 20, min(MOST_STREAMING_BYTES, share))


NEVER = 1 << 62  # a threshold no job reaches: every store cached


def chosen_streaming_bytes(
    environ: Mapping[str, str] = os.environ, machine: int | None = None
) -> int:
    """The engine's streaming threshold: `DMLOPS_STREAMING_BYTES` where set (a whole number
    of bytes; 0 or "off": never stream), else this machine's (`machine`, where the caller
    has it already, else `streaming_bytes()`)."""
    named = environ.get("DMLOPS_STREAMING_BYTES", "").strip()
    if not named:
        return streaming_bytes() if machine is None else machine
    if named.lower() == "off":
        return NEVER
    try:
        value = int(named)
    except ValueError:
        value = -1
    if value < 0:
        raise DmlError(
            f"DMLOPS_STREAMING_BYTES={named!r}: give a whole number of bytes >= 0 (0 or 'off': "
            "never stream)"
        )
    return value or NEVER
