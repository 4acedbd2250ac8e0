"""First call of each operator in a fresh process, on torch CUDA tensors of 16 MiB (the
calls of the CPU's `dmlops bench --section startup`, on the GPU), beside
torch's own first call (a flip) in the same process: three processes in a row per operator
(the first finds whatever kernel cache the machine has).

    python benchmarks/first_calls_gpu.py [OPERATOR ...]   (default: every operator)
"""

import json
import subprocess
import sys

from dmlops.bench.startup import FIRST_CALL_NAMES, FIRST_CALL_SETUP

CODE = (
    """
import time, json
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
import dmlops
t2 = time.perf_counter()
T = lambda a: torch.from_numpy(a).to("cuda")
"""
    + FIRST_CALL_SETUP
    + """
torch.cuda.synchronize()
name = NAME
t3 = time.perf_counter(); calls[name](); torch.cuda.synchronize(); t4 = time.perf_counter()
calls[name](); torch.cuda.synchronize(); t5 = time.perf_counter()
tf0 = time.perf_counter(); x.flip(2); torch.cuda.synchronize(); tf1 = time.perf_counter()
print(json.dumps({
    "torch_import": t1 - t0, "dmlops_import": t2 - t1, "first": t4 - t3,
    "second": t5 - t4, "torch_first_flip": tf1 - tf0,
}))
"""
)
NAMES = FIRST_CALL_NAMES


def main() -> None:
    import compileall
    import pathlib

    import dmlops

    compileall.compile_dir(str(pathlib.Path(dmlops.__file__).parent), quiet=1)
    print(f"{'operator':22} {'1st s':>8} {'2nd s':>8} {'3rd s':>8} {'warm ms':>8} {'torch s':>8}")
    for name in sys.argv[1:] or NAMES:
        seen = []
        for _ in range(3):
            code = CODE.replace("NAME", repr(name))
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
            if done.returncode:
                print(name, "failed:", done.stderr[-600:])
                break
            seen.append(json.loads(done.stdout.strip().splitlines()[-1]))
        else:
            firsts = " ".join(f"{s['first']:8.3f}" for s in seen)
            last = seen[-1]
            print(
                f"{name:22} {firsts} {last['second'] * 1e3:8.2f} {last['torch_first_flip']:8.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
