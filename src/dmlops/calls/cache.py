"""A bounded, thread-safe LRU map: the cache of compiled calls is one (`dispatch.py`)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

from .. import _forking

CACHE_SIZE = 1024

V = TypeVar("V")


class _LRU(Generic[V]):
    """A bounded, thread-safe map from call signatures to compiled calls (`V`)."""

    def __init__(self, size: int) -> None:
        self.size = size
        # each key's call and the put count when it was last moved: one lookup per hit (read
        # by _dispatch too)
        self.items: OrderedDict[Hashable, list[Any]] = OrderedDict()
        self.clock = 0  # puts so far
        self._lock = _forking.lock()

    def get(self, key: Hashable) -> V | None:
        entry = self.items.get(key)  # a dict read is atomic: hits take no lock
        if entry is None:
            return None
        if entry[1] != self.clock:  # (a current place: one dict read, nothing refreshed)
            with self._lock:  # refresh its place at most once per put
                if key in self.items:
                    self.items.move_to_end(key)
                    entry[1] = self.clock
        call: V = entry[0]
        return call

    def put(self, key: Hashable, call: V) -> None:
        with self._lock:
            self.clock += 1
            self.items[key] = [call, self.clock]
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self.items.clear()

    def __len__(self) -> int:
        return len(self.items)
