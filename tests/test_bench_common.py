"""The benchmarks' shared timing helpers."""

from __future__ import annotations

from collections.abc import Callable

from dmlops.bench.common import medians_in_turn


def test_medians_in_turn_starts_each_round_one_timer_further_on() -> None:
    """Every timer runs once a round, each round led by the next timer in turn, and each
    median is its own timer's."""
    calls: list[str] = []

    def timer(name: str, seconds: list[float]) -> Callable[[], float]:
        def run() -> float:
            calls.append(name)
            return seconds[sum(c == name for c in calls) - 1]

        return run

    found = medians_in_turn(
        [timer("a", [1.0, 5.0, 3.0, 2.0]), timer("b", [10.0, 30.0, 20.0, 40.0]),
         timer("c", [7.0, 7.0, 9.0, 8.0])], 4)  # fmt: skip
    assert calls == [*"abc", *"bca", *"cab", *"abc"]
    assert found == [2.5, 25.0, 7.5]
