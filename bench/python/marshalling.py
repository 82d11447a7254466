"""The Python rows of the marshalling bench (bench/README.md).

Run by `nerve-bench marshalling` once per Python system, each in its own interpreter (the generators write modules
named `seed` and `lidar`), all at once:

    python marshalling.py --system lcm-python --path DIR --manifest cases.json [--quick]

DIR holds the generated packages. The manifest lists the cases: the LCM type, a file with the reference encoding
(written by the Rust side) and, for LiDAR, the expected projections. Every case is verified first: decode then
encode must give the reference bytes back, and the projections the expected values; a mismatch prints an
{"error": ...} line and exits 1. nerve-python prints {"info": ...} saying whether the native accelerator is in use
(nerve_lcm.NATIVE), which the bench shows. Then {"ready": true}, and the script times what the driver asks for: one
request per line on stdin, {"case", "metric"}, answered by {"case", "metric", "ns"} with the median time of one
operation in nanoseconds (null for a metric the case does not have), until stdin closes; each request is timed
twice and the second timing reported (see the serve loop). The driver alternates its
requests between the interpreters, so the two sides of a ratio are timed moments apart. Metrics: encode,
decode, and on the LiDAR cases full_projection, fixed_field, variable_region and object_loop (decode + read every
value through objects, the loop lcm-python runs). {"unavailable": reason} if the generated code cannot be imported.
"""

import argparse
import importlib
import json
import sys
import time


def measure(op, arg, cfg):
    """Median time of op(arg) in ns: batches of at least 20 us, warm-up, then samples."""
    clock = time.perf_counter_ns
    batch = 1
    while True:
        t0 = clock()
        for _ in range(batch):
            op(arg)
        t = clock() - t0
        if t >= 20_000 or batch >= 1 << 24:
            break
        batch *= 2
    end = clock() + cfg["warmup_ns"]
    while clock() < end:
        for _ in range(batch):
            op(arg)
    samples = []
    start = clock()
    while len(samples) < cfg["max_samples"] and (
        len(samples) < cfg["min_samples"] or clock() - start < cfg["budget_ns"]
    ):
        t0 = clock()
        for _ in range(batch):
            op(arg)
        samples.append((clock() - t0) / batch)
    samples.sort()
    n = len(samples)
    return samples[n // 2] if n % 2 else (samples[n // 2 - 1] + samples[n // 2]) / 2


def lidar_sum(m):
    """Full projection: every numeric value as a float, summed in the order the Rust and C rows use."""
    i = m.msg_info
    pts = m.points
    s = float(i.kind) + float(i.timestamp) + float(i.guid) + float(len(pts))
    for p in pts:
        pos = p.position
        s += float(pos[0]) + float(pos[1]) + float(pos[2]) + float(p.intensity)
    return s


def lidar_sum_numpy(m):
    """The same full projection through nerve-python's array API, as a Python user reads a point cloud: the points
    as one numpy structured array (``StructArray.to_numpy()``, a copy of every value), the per-point sums
    vectorized, then accumulated left to right (``cumsum`` adds in order, unlike ``sum``), so the result is
    bit-identical to :func:`lidar_sum`."""
    import numpy as np

    i = m.msg_info
    rec = m.points.to_numpy()
    pos = rec["position"].astype(np.float64)
    t = np.empty(len(rec) + 1)
    t[0] = float(i.kind) + float(i.timestamp) + float(i.guid) + float(len(rec))
    t[1:] = pos[:, 0] + pos[:, 1] + pos[:, 2] + rec["intensity"]
    return float(np.cumsum(t)[-1])


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--system", required=True)
    ap.add_argument("--path", required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.quick:
        cfg = {"warmup_ns": 0, "budget_ns": 2_000_000, "max_samples": 5, "min_samples": 3}
    else:
        cfg = {"warmup_ns": 10_000_000, "budget_ns": 40_000_000, "max_samples": 201, "min_samples": 11}
    sys.path.insert(0, a.path)
    with open(a.manifest) as f:
        cases = json.load(f)
    try:
        import nerve_lcm  # the runtime of nerve-generated code (absent for lcm-python)
    except ImportError:
        pass
    else:
        how = "native accelerator" if nerve_lcm.NATIVE else "pure Python codec"
        emit({"info": f"{a.system}: {how} (nerve_lcm.NATIVE = {nerve_lcm.NATIVE})"})

    # Load and verify every case first; then time what the driver asks for, one request per line.
    ops = {}
    for case in cases:
        pkg, name = case["type"].split(".")
        try:
            T = getattr(importlib.import_module(pkg), name)
        except Exception as e:  # generated code missing or broken: say so, do not fake
            emit({"unavailable": f"importing {pkg}.{name}: {type(e).__name__}: {e}"})
            return 0
        with open(case["file"], "rb") as f:
            data = f.read()
        cname = case["name"]
        try:
            msg = T.decode(data)
            again = msg.encode()
        except Exception as e:
            emit({"error": f"{cname}: decode/encode raised {type(e).__name__}: {e}"})
            return 1
        if bytes(again) != data:
            emit({"error": f"{cname}: decode then encode does not give the reference bytes back"})
            return 1
        exp = case.get("expect")
        # decode + read every value: LCM's Python API gives a list of objects, so lcm-python reads them in a loop;
        # nerve-python's array of fixed-size structs also reads as a numpy structured array, which is how a Python
        # user reads a point cloud. The object loop is measured for nerve-python too ("object_loop").
        read_all = lidar_sum_numpy if a.system == "nerve-python" else lidar_sum
        if exp is not None:
            got = {
                "sum": read_all(T.decode(data)),
                "guid": int(msg.msg_info.guid),
                "middle_y": float(msg.points[len(msg.points) // 2].position[1]),
            }
            if got != exp or lidar_sum(T.decode(data)) != exp["sum"]:
                emit({"error": f"{cname}: projections {got} != expected {exp}"})
                return 1
        ops[(cname, "encode")] = (lambda m: m.encode(), msg)
        ops[(cname, "decode")] = (T.decode, data)
        if exp is not None:
            ops[(cname, "full_projection")] = (lambda d, T=T, f=read_all: f(T.decode(d)), data)
            ops[(cname, "object_loop")] = (lambda d, T=T: lidar_sum(T.decode(d)), data)
            ops[(cname, "fixed_field")] = (lambda d, T=T: T.decode(d).msg_info.guid, data)
            ops[(cname, "variable_region")] = (lambda d, T=T: _middle_y(T.decode(d)), data)
    emit({"ready": True})
    for line in sys.stdin:
        req = json.loads(line)
        op = ops.get((req["case"], req["metric"]))
        if op is None:
            emit({"case": req["case"], "metric": req["metric"], "ns": None})
        else:
            # One pass unreported first: the first timing of an operation after other work came out about 2x its
            # steady cost for its whole length, however long its warm-up (bench/README.md, "Python rows").
            measure(op[0], op[1], cfg)
            emit({"case": req["case"], "metric": req["metric"], "ns": measure(op[0], op[1], cfg)})
    return 0


def _middle_y(m):
    pts = m.points
    return pts[len(pts) // 2].position[1]


if __name__ == "__main__":
    sys.exit(main())
