"""First calls of the torch section's blocks under torch.compile, dmlops' operators against
torch's own code: each a fresh process with empty compiler caches (as the bench section
times them), both contenders in turn, several rounds; the median per block and the ratio.

    python benchmarks/first_calls.py [ROUNDS]
"""

from __future__ import annotations

import statistics
import sys

from dmlops.bench.torch_steps import _COMPILED, BLOCKS, _first_call_fresh


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    times: dict[tuple[int, str], list[float]] = {}
    for _ in range(rounds):
        for index in range(len(BLOCKS)):
            for who in _COMPILED:
                took = _first_call_fresh(index, who)
                if took is not None:
                    times.setdefault((index, who), []).append(took)
                    print(f"  {BLOCKS[index].name}, {who}: {took:.2f} s", flush=True)
    print(f"| block | {_COMPILED[0]} | {_COMPILED[1]} | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for index, block in enumerate(BLOCKS):
        ours, theirs = (statistics.median(times.get((index, w), [float("nan")])) for w in _COMPILED)
        print(f"| {block.name} | {ours:.2f} s | {theirs:.2f} s | {ours / theirs:.2f} |")


if __name__ == "__main__":
    main()
