"""The GPU benchmarks' timer: a held stream queues a batch before its first event."""

from __future__ import annotations

import pytest

from conftest import HAS_CUDA

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")]


def test_hold_stream_keeps_the_stream_busy_that_long() -> None:
    import cupy

    from dmlops.bench.common import hold_stream

    hold_stream(0.001)  # (compiled and loaded)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    hold_stream(0.005)
    end.record()
    end.synchronize()
    assert 4.9 <= cupy.cuda.get_elapsed_time(start, end) < 50


def test_held_batch_times_the_device_not_the_first_launch() -> None:
    import time

    import cupy

    from dmlops.bench.common import median_gpu

    x = cupy.ones(1 << 20, cupy.float32)

    def slow_host_fast_device() -> None:
        time.sleep(0.002)  # 2 ms of host work before a launch of a few microseconds
        x.copy()

    # unheld: the first call's host time lies between the events; held (20 ms, longer than
    # the batch's 8 ms of host work): only the device's
    assert median_gpu(slow_host_fast_device, 3, batch=4) > 0.0004
    assert median_gpu(slow_host_fast_device, 3, batch=4, hold=0.02) < 0.0004
