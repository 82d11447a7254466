#!/usr/bin/env python3
"""Hand A/B of nerve-bench's ipc latency peers, receiver and sender apart (ipc-recv on CPU 1, ipc-send on CPU 0,
64 B at 1 kHz, rows alternating). Run from the repository root after `cargo build --release -p nerve-bench`:

    python3 ab-split.py COUNT PAIRS ROW[,ROW...]

A ROW is SCHEME (both ends) or RX+TX (e.g. `shm-poll+ach-poll`: a nerve-shm receiver of libach's puts; the ach and
shm schemes name the same kind of channel), optionally prefixed `BUILD:` to run /tmp/nb-BUILD instead of
target/release/nerve-bench (copies of earlier builds, for a before/after). The first 600 messages are warm-up.
Prints p50/p90/p99 (us), the messages slower than 2.5 us, how many of those fall on positions 58/59 of 64 (the
first index entry and data frame on a new page of a 512-frame channel) and the commonest positions mod 64."""
import collections, os, shutil, subprocess, sys

count, pairs, rows = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(",")
tmp = "/dev/shm/ab-split-%d" % os.getpid()
os.makedirs(tmp, exist_ok=True)
WARM = 600
n = 0


def run(row):
    global n
    n += 1
    exe = "target/release/nerve-bench"
    if ":" in row:
        build, row = row.split(":", 1)
        exe = "/tmp/nb-" + build
    rx_scheme, tx_scheme = row.split("+") if "+" in row else (row, row)
    rx = subprocess.Popen(["taskset", "-c", "1", exe, "ipc-recv", f"{rx_scheme}:{tmp}/c{n}", str(count), "30000"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rx.stdout.readline()  # "ready"
    subprocess.run(["taskset", "-c", "0", exe, "ipc-send", f"{tx_scheme}:{tmp}/c{n}", str(count), "1000", "64"],
                   capture_output=True, text=True, check=True)
    out, err = rx.communicate()
    if err:
        print(err, file=sys.stderr)
    lat = [int(l.split()[1]) for l in out.splitlines() if l.startswith("lat ")][WARM:]
    s = sorted(lat)
    p = lambda q: s[int(round((len(s) - 1) * q))] / 1000
    slow = collections.Counter((i + WARM) % 64 for i, x in enumerate(lat) if x > 2500)
    return (f"{p(.5):5.2f} {p(.9):5.2f} {p(.99):5.2f}  slow {sum(slow.values()):4}  at 58/59 {slow[58] + slow[59]:3}"
            f"  commonest {slow.most_common(3)}")


print("row                          p50   p90   p99  (us)")
for _ in range(pairs):
    for row in rows:
        print(f"{row:26} {run(row)}", flush=True)
shutil.rmtree(tmp, ignore_errors=True)
