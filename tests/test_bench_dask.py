"""The Dask benchmark's order of contenders: each round starts with the next one."""

from __future__ import annotations

from dmlops.bench.dask import round_order


def test_every_contender_takes_every_place_in_turn() -> None:
    names = ["dmlops.dask", "dask.array", "xarray isel"]
    rounds = [round_order(names, r) for r in range(6)]
    assert rounds[0] == names and rounds[1] == ["dask.array", "xarray isel", "dmlops.dask"]
    for place in range(3):
        assert {order[place] for order in rounds[:3]} == set(names)
    assert rounds[3:] == rounds[:3]
    assert round_order(["only"], 5) == ["only"]
