"""First call of each operator in a fresh process, on torch CUDA tensors of 16 MiB, beside
torch's own first call (a flip) in the same process: three processes in a row per operator
(the first finds whatever kernel cache the machine has).

    python benchmarks/first_calls_gpu.py [OPERATOR ...]   (default: every operator)
"""

import json
import subprocess
import sys

CODE = r"""
import time, json
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
import dmlops
t2 = time.perf_counter()
x = torch.arange(1 << 22, dtype=torch.float32, device="cuda").reshape(64, 256, 256)
torch.cuda.synchronize()
rows = torch.arange(0, 64, 3, device="cuda")
ie = torch.randint(0, 64, (64, 8, 256), device="cuda")
nd = torch.randint(0, 64, (32, 1), device="cuda")
upd = torch.randn(32, 256, 256, device="cuda")
upd_e = torch.randn(64, 8, 256, device="cuda")
oh = torch.randint(0, 64, (4096,), device="cuda")
lens = torch.full((256,), 3, dtype=torch.int64, device="cuda")
# every other column of each row: a max pool's indices into the whole [1, 64, 256, 512]
pool = (torch.arange(1 << 21, device="cuda", dtype=torch.int64) * 2).reshape(1, 64, 128, 256)
blank = torch.empty(64, 256, 256, device="cuda")
calls = {
 "slice1": lambda: dmlops.slice1(x, [0, 0, 0], [64, 256, 256], [1, -1, 2]),
 "slice": lambda: dmlops.slice(x, [0, 0, 0], [32, 128, 128], [2, 2, 2]),
 "split": lambda: dmlops.split(x, 1, [128, 128]),
 "join": lambda: dmlops.join([x, x], 0),
 "depth_to_space": lambda: dmlops.depth_to_space(x.reshape(1, 64, 256, 256), 2),
 "space_to_depth": lambda: dmlops.space_to_depth(x.reshape(1, 64, 256, 256), 2),
 "padding": lambda: dmlops.padding(x, [0, 2, 2], [0, 2, 2], "REFLECTION"),
 "tile": lambda: dmlops.tile(x[:8], [2, 1, 1]),
 "slice_grad": lambda: dmlops.slice_grad(x, [64, 512, 256], [0, 0, 0], [64, 512, 256], [1, 2, 1]),
 "gather": lambda: dmlops.gather(x, rows, 0),
 "gather_elements": lambda: dmlops.gather_elements(x, ie, 1),
 "gather_nd": lambda: dmlops.gather_nd(x, nd),
 "scatter_elements": lambda: dmlops.scatter_elements(x, ie, upd_e, 1),
 "scatter_nd": lambda: dmlops.scatter_nd(x, nd, upd),
 "one_hot": lambda: dmlops.one_hot(oh, 64, torch.tensor([0.0, 1.0], device="cuda")),
 "reverse_subsequences": lambda: dmlops.reverse_subsequences(x, lens, 0, 1),
 "cast": lambda: dmlops.cast(x, "float16"),
 "nonzero": lambda: dmlops.nonzero(x[:4]),
 "tril": lambda: dmlops.tril(x),
 "resample": lambda: dmlops.resample(x.reshape(1, 64, 256, 256)[:, :16], [1, 1, 2, 2]),
 "triu": lambda: dmlops.triu(x, 1),
 "upsample_2d": lambda: dmlops.upsample_2d(x.reshape(1, 64, 256, 256)[:, :16], [2, 2]),
 "max_unpooling": lambda: dmlops.max_unpooling(
     x.reshape(1, 64, 256, 256)[:, :, :128], pool, [1, 64, 256, 512]),
 "element_wise_identity": lambda: dmlops.element_wise_identity(x, scale_bias=[2.0, 1.0]),
 "diagonal_matrix1": lambda: dmlops.diagonal_matrix1(x, 0, 2, 7.0),
 "nonzero_coordinates": lambda: dmlops.nonzero_coordinates(x.reshape(1, 64, 256, 256)[:, :4]),
 "fill_value_constant": lambda: dmlops.fill_value_constant([64, 256, 256], 7.0, out=blank),
 "fill_value_sequence": lambda: dmlops.fill_value_sequence([64, 256, 256], 0, 2, out=blank),
 "diagonal_matrix": lambda: dmlops.diagonal_matrix([64, 256, 256], 1, out=blank),
}
name = NAME
t3 = time.perf_counter(); calls[name](); torch.cuda.synchronize(); t4 = time.perf_counter()
calls[name](); torch.cuda.synchronize(); t5 = time.perf_counter()
tf0 = time.perf_counter(); x.flip(2); torch.cuda.synchronize(); tf1 = time.perf_counter()
print(json.dumps({
    "torch_import": t1 - t0, "dmlops_import": t2 - t1, "first": t4 - t3,
    "second": t5 - t4, "torch_first_flip": tf1 - tf0,
}))
"""
NAMES = [
    "slice1", "slice", "split", "join", "depth_to_space", "space_to_depth", "padding", "tile",
    "slice_grad", "gather", "gather_elements", "gather_nd", "scatter_elements", "scatter_nd",
    "one_hot", "reverse_subsequences", "cast", "nonzero", "tril", "resample", "triu",
    "upsample_2d", "max_unpooling", "element_wise_identity", "diagonal_matrix1",
    "nonzero_coordinates", "fill_value_constant", "fill_value_sequence", "diagonal_matrix",
]  # fmt: skip


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
