"""The startup section's first calls: every operator of the functional API, each run in a
fresh process with either engine, giving the same answer."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

import dmlops
from dmlops.bench import startup

# public calls that are not operators (arange is FILL_VALUE_SEQUENCE's numpy-shaped face)
_NOT_OPERATORS = {"calc_buffer_tensor_size", "get_num_threads", "set_num_threads", "arange"}


def test_every_operator_has_a_first_call() -> None:
    functions = {
        name
        for name in dmlops.__all__
        if inspect.isfunction(getattr(dmlops, name)) and name not in _NOT_OPERATORS
    }
    assert functions == set(startup.FIRST_CALL_NAMES)
    assert len(startup.FIRST_CALL_NAMES) == len(set(startup.FIRST_CALL_NAMES))


def test_a_first_call_runs_in_a_fresh_process_on_either_engine() -> None:
    """A first call's script runs (timed) and both engines' answers are the same bytes."""
    answers = []
    for engine in ("", "numpy"):
        code = startup._FIRST_CALL.replace("NAME", repr("max_unpooling"))
        code += (
            "\nimport hashlib\nprint(hashlib.sha1(calls['max_unpooling']().tobytes()).hexdigest())"
        )
        env = {**os.environ, "DMLOPS_CPU_ENGINE": engine}
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        timed, digest = done.stdout.strip().splitlines()[-2:]
        assert json.loads(timed)["max_unpooling"] > 0
        answers.append(digest)
    assert answers[0] == answers[1]
