#!/usr/bin/env bash
# The CPU engine on a many-core host (a device machine's): build the extension, run its
# tests, then the startup, graphs, contention, sizes and callers sections. Usage, from the
# repo root:
#   bash benchmarks/cpu_host.sh OUTDIR
set -u
out=${1:-/tmp/dmlops-cpu}
mkdir -p "$out"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
python3 setup.py -q build_ext --inplace 2>&1 | tail -3 || true
if ! python3 -c "import dmlops.backends.cpu_engine._native" 2>/dev/null; then  # (no setuptools)
  n=src/dmlops/backends/cpu_engine/native
  gcc -O3 -std=c11 -fno-strict-aliasing -shared -fPIC -pthread \
    -I"$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" $n/*.c \
    -o src/dmlops/backends/cpu_engine/_native"$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
fi
python3 -c "from dmlops.backends import cpu_engine as e; print('engine', e.available(), 'threads', e.get_num_threads())"
nproc; python3 -c "import os; print('affinity', len(os.sched_getaffinity(0)))"
python3 -m pytest tests/test_cpu_engine.py tests/test_cpu_threads.py tests/test_engine_gil.py -q -p no:cacheprovider 2>&1 | tail -3
python3 -m dmlops.cli bench --device cpu ${SECTIONS:---section startup --section graphs --section contention --section sizes --section callers} \
  --reps 50 --calls ${CALLS:-200} --json "$out/cpu.json" --plot "$out/cpu.png" > "$out/cpu.md" 2>"$out/cpu.err"
tail -5 "$out/cpu.err"
[ -n "${WAITS:-}" ] && python3 benchmarks/engine_waits.py | tee "$out/waits.txt" && python3 benchmarks/engine_waits.py --per-core | tee -a "$out/waits.txt"
