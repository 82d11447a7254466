"""Every tool and binding that reads shm:// sleeps on one wait set, not a thread per channel (issue 39): `nerve sub`,
`nerve log`, `nerve spy`, `nerve foxglove`, `nerve bridge`, a Python `nerve.Bus` subscription and a C `nerve_bus`
subscription (libnerve through ctypes), and Python's and C's view subscriptions (`nerve.subscribe_views`,
`nerve_shm_subscribe_views`) over a directory of 300 idle channels. Each runs twice at once, over those
300 channels and over an empty directory; from /proc, the first must have mapped all 300 channel files (so it reads
them), run at most 4 threads more than the second, and take at most 10 ms of CPU a second more while nothing is
published (a thread per channel ran 302 threads and took about 220 ms/s over 300 channels). All eighteen processes
are measured in the same two seconds, so the test takes a few seconds after its binaries are built."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

nerve = pytest.importorskip("nerve")

CHANNELS = 300
MEASURE_S = 2.0

# A Python process subscribing through libnerve's C API (nerve.h) by ctypes: argv is the library and the URL.
C_SUBSCRIBER = r"""
import ctypes, sys, time
lib = ctypes.CDLL(sys.argv[1])
HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
handler = HANDLER(lambda msg, user: None)
bus, sub = ctypes.c_void_p(), ctypes.c_void_p()
assert lib.nerve_bus_open(sys.argv[2].encode(), ctypes.byref(bus)) == 0
assert lib.nerve_bus_subscribe(bus, b".*", ctypes.c_size_t(30), 0, handler, None, ctypes.byref(sub)) == 0
while True:
    lib.nerve_bus_handle_timeout(bus, ctypes.c_int64(10**9))
"""

# The same through nerve_shm_subscribe_views (each message a view): argv is the library and the directory.
C_VIEWS = r"""
import ctypes, sys, time
lib = ctypes.CDLL(sys.argv[1])
HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
handler = HANDLER(lambda channel, view, data, info, user: lib.nerve_view_release(ctypes.c_void_p(view)))
sub = ctypes.c_void_p()
assert lib.nerve_shm_subscribe_views(sys.argv[2].encode(), b".*", handler, None, ctypes.byref(sub)) == 0
while True:
    time.sleep(1)
"""

PY_VIEWS = r"""
import sys, time, nerve
sub = nerve.subscribe_views(".*", lambda channel, view: view.release(), dir=sys.argv[1])
while True:
    time.sleep(1)
"""

PY_SUBSCRIBER = r"""
import sys, nerve
bus = nerve.Bus(sys.argv[1])
sub = bus.subscribe(".*", lambda channel, data: None)
while True:
    bus.handle_timeout(1000)
"""


def tools(nerve_bin: Path, venv_python: Path, libnerve: Path, d: Path, scratch: Path) -> dict:
    n, url = str(nerve_bin), f"shm://?dir={d}"
    return {
        "nerve sub": [n, "sub", ".*", "--url", url],
        "nerve log": [n, "log", str(scratch / "idle.lcmlog"), "--url", url],
        "nerve spy": [n, "spy", "--url", url, "--once", "--duration", "120"],
        "nerve foxglove": [n, "foxglove", "--url", url, "--listen", "127.0.0.1:0"],
        "nerve bridge": [n, "bridge", url, "memq://"],
        "python nerve.Bus": [str(venv_python), "-c", PY_SUBSCRIBER, url],
        "C nerve_bus": [str(venv_python), "-c", C_SUBSCRIBER, str(libnerve), url],
        "python views": [str(venv_python), "-c", PY_VIEWS, str(d)],
        "C views": [str(venv_python), "-c", C_VIEWS, str(libnerve), str(d)],
    }


def threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def cpu_ns(pid: int) -> int:
    """Nanoseconds on a CPU summed over the process's live threads (/proc/PID/task/*/schedstat)."""
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended meanwhile
    return total


def mapped(pid: int, inodes: set) -> int:
    """How many of the channel files (by inode) the process has mapped."""
    with open(f"/proc/{pid}/maps") as f:
        return len({fields[4] for fields in (line.split() for line in f) if len(fields) > 4} & inodes)


def test_every_tool_and_binding_reads_300_idle_channels_with_few_threads_and_no_cpu(nerve_bin, venv_python,
                                                                                  c_prefix, tmp_path):
    full, empty = tmp_path / "full", tmp_path / "empty"
    full.mkdir()
    empty.mkdir()
    channels = [nerve.Channel.create(f"IDLE_{i:03}", frames=4, frame_size=256, dir=full) for i in range(CHANNELS)]
    inodes = {str(os.stat(p).st_ino) for p in full.iterdir() if p.name.startswith("nerve-")}
    assert len(inodes) == CHANNELS
    libnerve = next(p for p in (c_prefix / "lib").glob("libnerve.so*"))
    env = dict(os.environ, NERVE_SHM_DIR=str(full), PYTHONUNBUFFERED="1")
    procs = {}
    try:
        for side, d in (("full", full), ("empty", empty)):
            scratch = tmp_path / side
            for name, argv in tools(nerve_bin, venv_python, libnerve, d, scratch).items():
                procs[name, side] = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                     stderr=subprocess.PIPE)
        # Up: every process over the full directory has mapped every channel (the empty ones get the same time).
        deadline = time.monotonic() + 60
        waiting = [name for (name, side) in procs if side == "full"]
        while waiting and time.monotonic() < deadline:
            for name, side in list(procs):
                p = procs[name, side]
                if p.poll() is not None:
                    pytest.fail(f"{name} ({side}) exited with {p.returncode}: {p.stderr.read().decode()[-2000:]}")
            waiting = [name for name in waiting if mapped(procs[name, "full"].pid, inodes) < CHANNELS]
            time.sleep(0.2)
        assert not waiting, f"not every channel mapped within 60 s by {waiting}"
        time.sleep(1.0)  # start-up work (the scan, opening files, a server's bind) is over

        before = {k: (cpu_ns(p.pid), threads(p.pid)) for k, p in procs.items()}
        t0 = time.monotonic()
        time.sleep(MEASURE_S)
        secs = time.monotonic() - t0
        after = {k: (cpu_ns(p.pid), max(threads(p.pid), before[k][1])) for k, p in procs.items()}

        rows, failures = [], []
        for name in dict.fromkeys(n for n, _ in procs):
            ms = {side: (after[name, side][0] - before[name, side][0]) / 1e6 / secs for side in ("full", "empty")}
            th = {side: after[name, side][1] for side in ("full", "empty")}
            rows.append(f"{name:18} {CHANNELS} channels: {th['full']:3} threads, {ms['full']:6.2f} ms/s; "
                        f"none: {th['empty']:3} threads, {ms['empty']:6.2f} ms/s")
            if th["full"] > th["empty"] + 4 or ms["full"] > ms["empty"] + 10.0:
                failures.append(rows[-1])
        print("\n" + "\n".join(rows), file=sys.stderr)
        assert not failures, "\n".join(failures)

        # And the wait set wakes them: a message on the last channel reaches `nerve sub` at once.
        writer = channels[-1]
        writer.put(b"\x01" * 8)
        sub = procs["nerve sub", "full"]
        os.set_blocking(sub.stdout.fileno(), False)
        got, deadline = b"", time.monotonic() + 10
        while b"IDLE_299" not in got and time.monotonic() < deadline:
            got += sub.stdout.read() or b""
            time.sleep(0.05)
        assert b"IDLE_299" in got, got
    finally:
        for p in procs.values():
            p.kill()
        for p in procs.values():
            p.wait()
