"""Tensor fills (FILL_VALUE_SEQUENCE's values) a GPU backend keeps for later plans: the most
recently used, up to a budget of bytes."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from .. import _forking
from ..plan import Fill

__all__ = ["KeptFills"]

T = TypeVar("T")


class KeptFills(Generic[T]):
    """`make(pattern)`'s device memory per pattern, the least recently used let go once
    the patterns kept pass `budget` bytes (the newest always stays). What a backend's
    prepared work holds of one it let go lives as long as that work (thread-safe)."""

    def __init__(self) -> None:
        self.entries: OrderedDict[Fill, T] = OrderedDict()
        self.bytes = 0
        self._lock = _forking.lock()

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, pattern: Fill, make: Callable[[Fill], T], budget: int) -> T:
        """The memory holding `pattern`, made (under the lock) where it is not kept."""
        with self._lock:
            entries = self.entries
            found = entries.get(pattern)
            if found is not None:
                entries.move_to_end(pattern)
                return found
            found = entries[pattern] = make(pattern)
            self.bytes += len(pattern)
            while self.bytes > budget and len(entries) > 1:
                oldest, _ = entries.popitem(last=False)
                self.bytes -= len(oldest)
            return found
