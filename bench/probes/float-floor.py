"""How close laser_t's default (list) decode is to the cost of the 180 Python floats it must return (issue 20).

Generates seed.laser_t with `nerve gen -p` and with the real `lcm-gen -p`, then times in one process, interleaved:
Nerve's decode, lcm-python's decode, `struct.unpack('>180f')` (the line of lcm-gen's decoder that makes the floats)
and `array('f').tolist()` ("array.tolist()": CPython making 180 floats from native memory and nothing else). Minimum of ROUNDS
batches of 20,000 calls, ns per call.

    taskset -c 0 .venv/bin/python bench/probes/float-floor.py [ROUNDS]
"""
import array
import importlib
import os
import random
import struct
import subprocess
import sys
import tempfile
import time

repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
lcm = os.path.join(repo, "tests/corpus/seed/laser_t.lcm")
tmp = tempfile.mkdtemp()
subprocess.run([os.path.join(repo, "target/release/nerve"), "gen", "-p", "--ppath", f"{tmp}/n", lcm], check=True,
               stdout=subprocess.DEVNULL)
subprocess.run([os.path.join(os.path.dirname(sys.executable), "lcm-gen"), "-p", "--ppath", f"{tmp}/l", lcm],
               check=True)


def load(d):
    sys.path.insert(0, d)
    for k in [k for k in sys.modules if k == "seed" or k.startswith("seed.") or k == "nerve_lcm"]:
        del sys.modules[k]
    cls = importlib.import_module("seed.laser_t").laser_t
    sys.path.remove(d)
    return cls


nerve_cls, lcm_cls = load(f"{tmp}/n"), load(f"{tmp}/l")
random.seed(1)
values = [random.uniform(0.2, 30.0) for _ in range(180)]
m = lcm_cls()
m.utime, m.nranges, m.ranges = 1, 180, values
data = m.encode()
assert nerve_cls.decode(data).ranges == lcm_cls.decode(data).ranges
floats = struct.pack(">180f", *values)
unpack = struct.Struct(">180f").unpack
native = array.array("f", values)
cases = {
    "nerve-python-list decode": (nerve_cls.decode, data),
    "lcm-python decode": (lcm_cls.decode, data),
    "struct.unpack('>180f')": (unpack, floats),
    "array.tolist()": (array.array.tolist, native),
}


def batch(f, a, n=20000):
    t0 = time.perf_counter_ns()
    for _ in range(n):
        f(a)
    return (time.perf_counter_ns() - t0) / n


best = {k: float("inf") for k in cases}
for k, (f, a) in cases.items():
    batch(f, a)
for _ in range(rounds):
    for k, (f, a) in cases.items():
        best[k] = min(best[k], batch(f, a))
for k, v in best.items():
    print(f"{k:28s} {v:8.1f} ns")
ratio = best["lcm-python decode"] / best["nerve-python-list decode"]
ceiling = best["lcm-python decode"] / best["array.tolist()"]
print(f"lcm / nerve: {ratio:.3f} (the bar: >= 2); lcm / array.tolist(): {ceiling:.3f} (no decoder that makes the floats can go past it)")
