"""Long fuzz campaign for the ONNX and DxDispatch adapters.

    python benchmarks/fuzz_adapters.py onnx 50000
    python benchmarks/fuzz_adapters.py dxdispatch 50000

Runs N hypothesis cases (tests/fuzz_adapters.py) under a per-case time limit and an
address-space limit (4 GiB), counting correct results, DmlError rejections and
failures (any other exception, a wrong result, a timeout); prints the first failure of
each kind. Exit status 1 if anything failed.
"""

from __future__ import annotations

import collections
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from hypothesis import HealthCheck, given, settings  # noqa: E402

from fuzz_adapters import (  # noqa: E402
    check_dxdispatch_case,
    check_onnx_case,
    dxdispatch_cases,
    onnx_cases,
    time_limit,
)


def describe(case: Any) -> str:
    """A failing case as text: the ONNX model in ONNX's text syntax, or the JSON document."""
    if isinstance(case, tuple):
        import onnx.printer

        model, feeds = case
        shapes = {n: (list(v.shape), str(v.dtype)) for n, v in feeds.items()}
        return f"{shapes}\n{onnx.printer.to_text(model)}"
    return json.dumps(case)[:2000]


def main(argv: list[str]) -> int:
    adapter, count = argv[0], int(argv[1])
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    except (ImportError, ValueError, OSError):
        pass
    warnings.filterwarnings("ignore")
    outcomes: collections.Counter[str] = collections.Counter()
    failures: dict[str, str] = {}
    if adapter == "onnx":
        strategy: Any = onnx_cases()

        def check(case: Any) -> str:
            return check_onnx_case(*case)
    else:
        bases = [
            json.loads(p.read_text())
            for p in sorted((ROOT / "examples").glob("*.json"))
            + sorted((ROOT / "tests" / "data" / "dxdispatch").glob("*.json"))
        ]
        strategy = dxdispatch_cases(bases)
        check = check_dxdispatch_case

    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def run(case: Any) -> None:
        try:
            with time_limit(20):
                outcomes[check(case)] += 1
        except Exception as e:  # noqa: BLE001 - every failure is counted and reported
            outcomes["failed"] += 1
            key = f"{type(e).__name__}: {str(e)[:120]}"
            failures.setdefault(key, describe(case))

    start = time.perf_counter()
    run()
    seconds = time.perf_counter() - start
    total = sum(outcomes.values())
    print(f"{adapter}: {total} cases in {seconds:.0f} s: {dict(outcomes)}")
    for key, case in failures.items():
        print(f"  {key}\n    {case}")
    return 1 if outcomes["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
