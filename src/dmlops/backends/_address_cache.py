"""Per-binding work of an executor (uploaded tables, launches, bind groups), kept for the
most recent tuples of bound addresses."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from .. import _forking

__all__ = ["AddressCache"]

T = TypeVar("T")


class AddressCache(Generic[T]):
    """`build()`'s result per key, for the last `size` keys (thread-safe); each entry pushed
    out is handed to `evicted`, where one is given."""

    def __init__(self, size: int, evicted: Callable[[T], None] | None = None) -> None:
        self.size = size
        self.entries: OrderedDict[Hashable, T] = OrderedDict()
        self.lock = _forking.lock()
        self.evicted = evicted

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        """The entry of `key`, built (outside the lock) if it is new."""
        value = self.entries.get(key)
        if value is None:
            value = build()
            with self.lock:
                self.entries[key] = value
                old = self.entries.popitem(last=False)[1] if len(self.entries) > self.size else None
            if old is not None and self.evicted is not None:
                self.evicted(old)
        return value
