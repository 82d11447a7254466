#!/usr/bin/env python3
"""Hand A/B of two latency peers of nerve-bench (ipc-recv on CPU 1, ipc-send on CPU 0, 64 B at 1 kHz), rows
alternating: python3 ab.py [COUNT] [PAIRS] [SCHEME,SCHEME]. Prints p50/p99/max (us) and the first slow messages."""
import os, shutil, subprocess, sys
# Run from the repository root after `cargo build --release -p nerve-bench`.
exe = os.environ.get("NERVE_BENCH", "target/release/nerve-bench")
d = "/dev/shm/ab-%d" % os.getpid()
os.makedirs(d, exist_ok=True)
count = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 4
schemes = sys.argv[3].split(",") if len(sys.argv) > 3 else ["shm-poll", "ach-poll"]
n = 0
def run(scheme):
    global n
    n += 1
    addr = f"{scheme}:{d}/c{n}"
    rx = subprocess.Popen(["taskset", "-c", "1", exe, "ipc-recv", addr, str(count), "30000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # wait for "ready" on stderr
    line = rx.stdout.readline()
    tx = subprocess.run(["taskset", "-c", "0", exe, "ipc-send", addr, str(count), "1000", "64"], capture_output=True, text=True)
    out, err = rx.communicate()
    if err: print(err, file=sys.stderr)
    lat = [int(l.split()[1]) for l in out.splitlines() if l.startswith("lat ")]
    s = sorted(lat)
    p = lambda q: s[int(round((len(s)-1)*q))]/1000
    slow = [i for i, x in enumerate(lat) if x > 3 * s[len(s)//2]]
    return p(0.5), p(0.99), s[-1]/1000, len(slow), slow[:12]
for k in range(pairs):
    for sch in schemes:
        r = run(sch)
        print(f"{sch:9} p50 {r[0]:6.2f} p99 {r[1]:7.2f} max {r[2]:8.1f} slow(>3x p50) {r[3]:4} first {r[4]}", flush=True)
shutil.rmtree(d, ignore_errors=True)
