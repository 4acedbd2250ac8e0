"""A DxDispatch printout compared with a sidecar, element by element ("*" matches
anything)."""

from __future__ import annotations

import math
import re
from typing import Any

_FIELD = re.compile(r"^[A-Z0-9_]+(\.[A-Za-z]+(\[\d+\])?)+")
_RESOURCE = re.compile(r"^Resource '([^']*)': (.*)$", re.MULTILINE)
# DirectML answers every bad descriptor with E_INVALIDARG; a backend that says so matches.
_INVALIDARG = ("E_INVALIDARG", "0x80070057")


def _number(text: str) -> float:
    return float(text.strip())


def check(expected: dict[str, Any], printout: str, limit: int = 5) -> list[str]:
    """Mismatches between a printout (or error text) and an expected sidecar; [] when it matches."""
    if not expected["valid"]:
        if _RESOURCE.search(printout) is None and (
            expected["error"] in printout or any(code in printout for code in _INVALIDARG)
        ):
            return []
        return [f"expected a rejection: {expected['error']}"]
    want = {m.group(1): m.group(2) for m in (_RESOURCE.match(s) for s in expected["printout"]) if m}
    got = {m.group(1): m.group(2) for m in (_RESOURCE.match(s) for s in printout.splitlines()) if m}
    problems = []
    for name, text in want.items():
        if name not in got:
            problems.append(f"resource '{name}' was not printed")
            continue
        a, b = text.split(","), got[name].split(",")
        if len(a) != len(b):
            problems.append(f"resource '{name}': {len(b)} values printed, {len(a)} expected")
            continue
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x.strip() == "*":  # undefined there (NONZERO's rows past the count)
                continue
            fx, fy = _number(x), _number(y)
            same = (fx == fy and math.copysign(1, fx) == math.copysign(1, fy)) or (
                math.isnan(fx) and math.isnan(fy)
            )
            if not same:
                problems.append(
                    f"resource '{name}'[{i}]: printed {y.strip()}, expected {x.strip()}"
                )
                if len(problems) >= limit:
                    return problems
    return problems
