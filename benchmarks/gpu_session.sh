#!/usr/bin/env bash
# One device-machine session: GPU tests, compute-sanitizer memcheck, GPU benchmarks.
# Usage (from the repo root on the GPU machine): bash benchmarks/gpu_session.sh OUTDIR [STEPS]
# STEPS: any of tests,memcheck,bench (default all three); BENCH_ARGS adds `dmlops bench` options.
set -u
out=${1:-/tmp/dmlops-gpu}
steps=${2:-tests,memcheck,bench}
mkdir -p "$out"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD/src PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
if [[ $steps == *tests* ]]; then
  echo "== GPU tests"
  python3 -m pytest tests -q -p no:cacheprovider -k "cuda or gpu" -x 2>&1 | tail -25 | tee "$out/tests.txt"
fi
if [[ $steps == *memcheck* ]]; then
  echo "== compute-sanitizer memcheck over the property-test descriptors and the kernel fuzz"
  HYPOTHESIS_PROFILE=sanitizer compute-sanitizer --tool memcheck --leak-check no --error-exitcode 9 \
    python3 -m pytest tests/test_properties.py tests/test_cuda.py tests/test_cuda_kernels.py tests/test_overlap.py -q \
    -p no:cacheprovider -k "cuda" -x 2>&1 | tail -15 | tee "$out/memcheck.txt"
  echo "memcheck exit status: ${PIPESTATUS[0]}" | tee -a "$out/memcheck.txt"
fi
if [[ $steps == *bench* ]]; then
  echo "== benchmark"
  python3 -m dmlops.cli bench --device gpu --reps ${REPS:-20} ${BENCH_ARGS:-} \
    --json "$out/gpu.json" --plot "$out/gpu.png" | tee "$out/gpu.md"
fi
