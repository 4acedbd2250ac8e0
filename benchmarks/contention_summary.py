"""The contention section's results as one summary table: for each JSON given (a host's
`dmlops bench --section contention --json` output), each condition's dmlops rows (bound
graphs, op-by-op chains, single operators) over numpy's median, over onnxruntime's (where it
runs the case; in a CPU set, its session kept to the set), and with a 99th percentile within
1.5x the median; numpy's own 99th percentiles beside; every condition the file holds (the
four of every run, and the CPU quotas of `--quota`). Prints a Markdown table.

    python benchmarks/contention_summary.py LABEL=FILE.json [LABEL=FILE.json ...]
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from typing import Any

KEPT = "onnxruntime, threads = CPU set"


def _condition(case: str) -> str:
    """The condition a case ran under: its last bracket's first part ("idle", "quota 1.5")."""
    return case.rsplit("[", 1)[-1].split(",")[0].rstrip("]")


def summary(rows: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Per condition: [dmlops rows, over numpy, over onnxruntime, p99 within 1.5x, numpy rows,
    numpy p99 within 1.5x]."""
    found: dict[str, list[int]] = defaultdict(lambda: [0] * 6)
    for row in rows:
        if row.get("section") != "contention":
            continue  # (a host run's other sections)
        times = row["median_seconds"]
        tally = found[_condition(row["case"])]
        # in a CPU set, the session kept to it (the default one pins workers to every CPU)
        kept = times.get(KEPT)
        ort = [kept] if kept is not None else [times[k] for k in times if k == "onnxruntime"]
        for name, median in times.items():
            if name.endswith(" p99") or name.startswith(("numpy", "onnxruntime")):
                continue
            tally[0] += 1
            tally[1] += median > times["numpy"]
            tally[2] += bool(ort) and median > min(ort)
            tally[3] += times[f"{name} p99"] <= 1.5 * median
        tally[4] += 1
        tally[5] += times["numpy p99"] <= 1.5 * times["numpy"]
    return found


def main() -> None:
    print(
        "| host | condition | dmlops rows | over numpy | over onnxruntime "
        "| p99 <= 1.5 x median | numpy's p99 <= 1.5 x |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for argument in sys.argv[1:]:
        label, _, path = argument.rpartition("=")
        with open(path) as f:
            found = summary(json.load(f))
        for condition in found:
            n, numpy, ort, p99, numpy_rows, numpy_p99 = found[condition]
            cells = [label, condition, n, numpy, ort, p99, f"{numpy_p99} of {numpy_rows}"]
            print("| " + " | ".join(map(str, cells)) + " |")


if __name__ == "__main__":
    main()
