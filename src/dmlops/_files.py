"""Bounded reads of model files: regular files only, never more than a limit."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import ModelError

__all__ = ["DEFAULT_MAX_FILE_BYTES", "read_bounded"]

DEFAULT_MAX_FILE_BYTES = 64 << 20


def read_bounded(path: str | Path, limit: int = DEFAULT_MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; reads at most limit + 1."""
    if limit < 0:
        raise ModelError(f"{path}: the file size limit {limit} is negative")
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer before the check below.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as e:
        raise ModelError(f"{path}: {e.strerror or e}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        os.close(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ModelError(f"{path}: not a regular file (a device, FIFO, socket or directory)")
        raise ModelError(f"{path}: {info.st_size} bytes, over the limit of {limit} bytes")
    with os.fdopen(fd, "rb", buffering=0) as f:
        chunks, total = [], 0
        while total <= limit:
            chunk = f.read(min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    if total > limit:
        raise ModelError(f"{path}: over the limit of {limit} bytes (it grew while being read)")
    return b"".join(chunks)
