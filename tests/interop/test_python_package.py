"""The `nerve` Python package (bindings/python): shared-memory channels and event logs from Python.

Channels: create / open / list / remove with modes, put and get (next, newest, missed counts, polling, waiting with a
timeout), a loan written in place through numpy and committed, Python <-> Rust (`nerve chan dump`, `nerve pub
--url shm://`). Logs: write, read, iterate, seek by offset and by time, damage skipped or (strict) raised, and
LCM's own reader on what Python wrote. The GIL is released while waiting: another Python thread keeps running.
Hostile input: files of random bytes and corrupted channels opened as channels, random bytes and damaged logs read as
logs, wrong argument types - a Python exception every time, never a crash (the fuzz loops run in a child
interpreter, so a crash fails the test instead of killing pytest). Corrupting a channel's writer lock is left out:
nerve-shm trusts every process that may write the file, and a forged lock owner makes a put wait for ever.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

nerve = pytest.importorskip("nerve")


def unique(tag: str) -> str:
    return f"pytest-{tag}-{os.getpid()}-{time.monotonic_ns() % 10**9}"


@pytest.fixture
def shm_dir(tmp_path) -> Path:
    d = tmp_path / "shm"
    d.mkdir()
    return d


# ---------------------------------------------------------------------------------------------------------------
# Channels


def test_channel_create_open_list_remove_and_mode(shm_dir):
    name = unique("c")
    ch = nerve.Channel.create(name, frames=8, frame_size=256, mode=0o640, dir=shm_dir)
    assert (ch.name, ch.frames, ch.frame_size) == (name, 8, 256)
    assert os.stat(ch.path).st_mode & 0o777 == 0o640
    with pytest.raises(FileExistsError):
        nerve.Channel.create(name, frames=8, frame_size=256, dir=shm_dir)
    again = nerve.Channel.open(name, dir=shm_dir)
    assert again.frames == 8 and again.stats()["mode"] == 0o640
    listed = {c["name"]: c for c in nerve.Channel.list(dir=shm_dir)}
    assert listed[name]["frames"] == 8 and listed[name]["frame_size"] == 256
    nerve.Channel.remove(name, dir=shm_dir)
    with pytest.raises(FileNotFoundError):
        nerve.Channel.open(name, dir=shm_dir)
    with pytest.raises(ValueError):
        nerve.Channel.create("../bad", dir=shm_dir)
    with pytest.raises(ValueError):
        nerve.Channel.create(unique("z"), frames=0, frame_size=0, dir=shm_dir)


def test_put_and_get_in_order_newest_and_missed(shm_dir):
    ch = nerve.Channel.create(unique("pg"), frames=4, frame_size=64, dir=shm_dir)
    reader = nerve.Channel.open(ch.name, dir=shm_dir)
    assert reader.get() is None  # nothing yet: polls
    assert [ch.put(b"m%d" % i) for i in range(3)] == [1, 2, 3]
    assert reader.get() == (b"m0", 0)
    assert reader.get(newest=True) == (b"m2", 0)
    assert reader.get() is None
    for i in range(3, 10):
        ch.put(bytearray(b"m%d" % i))  # any bytes-like object
    data, missed = reader.get()
    assert missed > 0 and data == b"m%d" % (3 + missed)
    ch.put(memoryview(b"x" * 64))
    with pytest.raises(ValueError, match="64|large|long"):
        ch.put(b"x" * 65)
    with pytest.raises(TypeError):
        ch.put("text")
    with pytest.raises(TypeError):
        ch.get(newest="yes")
    with pytest.raises(ValueError):
        ch.get(timeout=-1)
    t0 = time.monotonic()
    late = nerve.Channel.open(ch.name, dir=shm_dir)
    late.get(newest=True)
    assert late.get(timeout=0.2) is None and 0.15 < time.monotonic() - t0 < 5


def test_loan_is_written_in_place_with_numpy_and_committed(shm_dir):
    ch = nerve.Channel.create(unique("loan"), frames=4, frame_size=4096, dir=shm_dir)
    reader = nerve.Channel.open(ch.name, dir=shm_dir)
    with ch.loan(1024) as buf:
        assert isinstance(buf, memoryview) and not buf.readonly and len(buf) == 1024
        img = np.frombuffer(buf, np.uint8).reshape(32, 32)
        img[:] = np.arange(32, dtype=np.uint8)[None, :]
        del img  # arrays made from the buffer go before the commit
    data, missed = reader.get()
    assert data == bytes(np.tile(np.arange(32, dtype=np.uint8), 32)) and missed == 0

    loan = ch.loan(16)
    with pytest.raises(RuntimeError, match="holds a loan"):
        ch.put(b"now")  # the loan holds the writer lock: refused, not a deadlock
    arr = np.frombuffer(loan.buffer, np.uint8)
    arr[:] = 7
    with pytest.raises(BufferError):
        loan.commit()  # an array still points into the frame
    del arr
    assert loan.commit() == 2
    with pytest.raises(ValueError):
        loan.commit()
    assert reader.get() == (bytes([7] * 16), 0)
    aborted = ch.loan(8)
    aborted.abort()
    with pytest.raises(ValueError):
        ch.loan(10**6)
    try:
        with ch.loan(4) as b:
            b[:] = b"abcd"
            raise KeyError("boom")
    except KeyError:
        pass
    assert reader.get() is None  # an exception in the block aborts the loan
    assert ch.put(b"after") == 3 and ch.stats()["aborted_loans"] == 2


def test_get_into_copies_into_a_buffer_of_the_callers(shm_dir):
    ch = nerve.Channel.create(unique("into"), frames=4, frame_size=4096, dir=shm_dir)
    reader = nerve.Channel.open(ch.name, dir=shm_dir)
    frame = np.zeros(4096, np.uint8)
    assert reader.get_into(frame) is None
    ch.put(bytes(range(256)) * 4)
    assert reader.get_into(frame, timeout=1) == (1024, 0)
    assert bytes(frame[:1024]) == bytes(range(256)) * 4
    ch.put(b"z" * 100)
    small = bytearray(10)
    with pytest.raises(ValueError, match="100 bytes"):
        reader.get_into(small)
    assert reader.get() == (b"z" * 100, 0)  # a message too long for the buffer stays unread
    with pytest.raises(TypeError):
        reader.get_into(b"read-only bytes")
    with pytest.raises(TypeError):
        reader.get_into(np.zeros((8, 8), np.uint8)[:, ::2])  # not contiguous


def test_a_loan_refuses_puts_that_would_wait_for_it_and_others_wait(shm_dir):
    """A put or a loan from the thread holding a loan, through any Channel object of that file, would wait for ever
    on the writer lock the loan holds: it raises. Another thread's put waits for the commit (GIL released)."""
    a = nerve.Channel.create(unique("two"), frames=4, frame_size=64, dir=shm_dir)
    b = nerve.Channel.open(a.name, dir=str(shm_dir) + "/.")  # the same file, spelled differently
    loan = a.loan(3)
    with pytest.raises(RuntimeError, match="holds a loan"):
        b.put(b"self")
    with pytest.raises(RuntimeError, match="holds a loan"):
        b.loan(1)
    done = []
    t = threading.Thread(target=lambda: done.append(b.put(b"other thread")))
    t.start()
    time.sleep(0.2)
    assert not done and t.is_alive()  # waits for the writer lock, without the GIL
    loan.buffer[:] = b"abc"
    assert loan.commit() == 1
    t.join(5)
    assert done == [2]
    r = nerve.Channel.open(a.name, dir=shm_dir)
    r.get(newest=True)
    assert b.put(b"free again") == 3


def test_a_thread_keeps_running_while_another_waits(shm_dir):
    """get(wait=...) releases the GIL: the main thread counts while a thread waits, then wakes it with a put."""
    ch = nerve.Channel.create(unique("gil"), frames=4, frame_size=64, dir=shm_dir)
    reader = nerve.Channel.open(ch.name, dir=shm_dir)
    got = []
    t = threading.Thread(target=lambda: got.append(reader.get(wait=True, timeout=10)))
    t.start()
    time.sleep(0.05)
    n, end = 0, time.monotonic() + 0.3
    while time.monotonic() < end:
        n += 1
    assert n > 10_000 and t.is_alive()
    ch.put(b"wake")
    t.join(5)
    assert got == [(b"wake", 0)]


def test_python_and_rust_share_channels(nerve_bin, shm_dir):
    """Python puts, `nerve chan dump` (Rust) reads; `nerve pub --url shm://` (Rust) puts, Python reads."""
    name = unique("rs")
    ch = nerve.Channel.create(name, frames=16, frame_size=1024, dir=shm_dir)
    for i in range(3):
        ch.put(bytes([i]) * 10)
    out = subprocess.run([str(nerve_bin), "chan", "dump", name, "--from-oldest", "--count", "3", "--json",
                          "--timeout-ms", "5000", "--dir", str(shm_dir)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(x) for x in out.stdout.splitlines()]
    assert [(x["seq"], x["data_hex"], x["missed"]) for x in lines] == [(i + 1, (bytes([i]) * 10).hex(), 0)
                                                                       for i in range(3)]

    reader = nerve.Channel.open(name, dir=shm_dir)
    reader.get(newest=True)
    pub = subprocess.run([str(nerve_bin), "pub", name, "--url", f"shm://?dir={shm_dir}", "--hex", "00112233"],
                         capture_output=True, text=True, timeout=30)
    assert pub.returncode == 0, pub.stderr
    assert reader.get(wait=True, timeout=5) == (bytes.fromhex("00112233"), 0)


FUZZ_CHANNELS = r'''
import os, random, sys
import nerve
d, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
base = nerve.Channel.create("good", frames=4, frame_size=128, dir=d)
base.put(b"hello")
good = open(base.path, "rb").read()
del base
outcomes = {}
for i in range(300):
    name = f"f{i}"
    path = os.path.join(d, "nerve-" + name)
    if i % 3 == 0:
        blob = bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 7, 64, 200, 4096])))
    else:  # a real channel with bytes changed: header fields, ring indices, data
        blob = bytearray(good)
        for _ in range(rng.randint(1, 8)):
            k = rng.randrange(len(blob) if i % 3 == 1 else min(len(blob), 256))
            blob[k] = rng.getrandbits(8)
        if i % 7 == 0:
            blob = blob[: rng.randrange(len(blob))]
        blob = bytes(blob)
    with open(path, "wb") as f:
        f.write(blob)
    os.chmod(path, 0o600)
    try:
        ch = nerve.Channel.open(name, dir=d)
        for _ in range(3):
            ch.get()
            ch.get(newest=True)
        ch.put(b"x" * rng.randrange(200))
        ch.get(timeout=0.001)
        outcome = "opened"
    except (nerve.ChannelError, ValueError, OSError) as e:
        outcome = type(e).__name__
    outcomes[outcome] = outcomes.get(outcome, 0) + 1
print(outcomes)
'''


def test_random_and_corrupted_channel_files_raise_python_exceptions(shm_dir):
    r = subprocess.run([sys.executable, "-c", FUZZ_CHANNELS, str(shm_dir), "1"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, (r.returncode, r.stderr[-3000:])
    outcomes = eval(r.stdout)  # noqa: S307 - our child's dict
    assert outcomes.get("ChannelError", 0) > 50, outcomes


def test_wrong_argument_types_are_type_errors(shm_dir):
    with pytest.raises(TypeError):
        nerve.Channel.create(5, dir=shm_dir)
    with pytest.raises(TypeError):
        nerve.Channel.create(unique("t"), frames="many", dir=shm_dir)
    with pytest.raises((TypeError, OverflowError)):
        nerve.Channel.create(unique("t"), frames=-1, dir=shm_dir)
    ch = nerve.Channel.create(unique("t"), frames=4, frame_size=32, dir=shm_dir)
    with pytest.raises(TypeError):
        ch.put(None)
    with pytest.raises(TypeError):
        ch.loan("big")
    with pytest.raises(TypeError):
        nerve.EventLog(3.5)
    with pytest.raises(ValueError):
        nerve.EventLog("x.log", "rw")


# ---------------------------------------------------------------------------------------------------------------
# Event logs


def write_log(path: Path, n: int = 50) -> list:
    events = [(1_000_000 + 1000 * i, f"CH{i % 3}", bytes([i % 256]) * (i * 7)) for i in range(n)]
    with nerve.EventLog(path, "w") as log:
        for t, ch, data in events:
            log.write_event(t, ch, data)
    return events


def test_eventlog_round_trip_iteration_and_seeks(tmp_path):
    path = tmp_path / "a.lcmlog"
    events = write_log(path)
    with pytest.raises(FileExistsError):
        nerve.EventLog(path, "w")
    log = nerve.EventLog(path)
    got = [(e.utime, e.channel, e.data) for e in log]
    assert got == events
    assert log.read_next_event() is None and log.tell() == log.size() == path.stat().st_size
    log.seek(0)
    first = log.read_next_event()
    assert (first.number, first.utime, first.offset) == (0, 1_000_000, 0)
    log.seek(first.offset + 1)  # the next event at or after an offset
    assert log.read_next_event().number == 1
    log.seek_to_timestamp(1_000_000 + 1000 * 37)
    assert log.read_next_event().utime == 1_000_000 + 1000 * 37
    log.seek_to_timestamp(0)
    assert log.read_next_event().number == 0
    with pytest.raises(RuntimeError):
        log.write_event(1, "X", b"")
    log.close()
    with pytest.raises(ValueError, match="closed"):
        log.read_next_event()
    with nerve.EventLog(path, "a") as app:
        app.write_event(5, "APPENDED", b"z")
    assert [e.channel for e in nerve.EventLog(path)][-1] == "APPENDED"
    big = tmp_path / "big.lcmlog"
    with nerve.EventLog(big, "w") as w:
        w.write_event(1, "IMG", np.zeros(1 << 20, np.uint8))  # any buffer; written with the GIL released
    assert len(nerve.EventLog(big).read_next_event().data) == 1 << 20


def test_real_lcm_reads_what_python_wrote(venv_python, tmp_path):
    path = tmp_path / "p.lcmlog"
    events = write_log(path, 20)
    code = ("import lcm, sys, json; print(json.dumps([(e.eventnum, e.timestamp, e.channel, e.data.hex()) "
            "for e in lcm.EventLog(sys.argv[1], 'r')]))")
    out = subprocess.run([str(venv_python), "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [[i, t, ch, d.hex()] for i, (t, ch, d) in enumerate(events)]


def test_damaged_log_is_read_past_the_damage_or_raises_in_strict_mode(tmp_path):
    path = tmp_path / "d.lcmlog"
    write_log(path, 10)
    data = path.read_bytes()
    cut = 28 + len("CH0")  # inside event 0's data... event 0 has none: this is event 1's header
    damaged = tmp_path / "damaged.lcmlog"
    damaged.write_bytes(data[:cut] + b"garbage!" + data[cut:] + b"\xed\xa1\xda\x01tail")
    log = nerve.EventLog(damaged)
    numbers = [e.number for e in log]
    assert numbers == list(range(10)) and len(log.damage) == 2
    assert log.damage[0][0] == cut and "not an event" in log.damage[0][1]
    strict = nerve.EventLog(damaged, strict=True)
    assert strict.read_next_event().number == 0
    with pytest.raises(nerve.LogDamageError, match="offset"):
        strict.read_next_event()
    assert strict.read_next_event().number == 1  # the intact event after the damage comes next
    with pytest.raises(nerve.LogDamageError, match="truncated"):
        while strict.read_next_event():
            pass
    assert strict.read_next_event() is None  # each damaged region is raised once


FUZZ_LOGS = r'''
import os, random, sys
import nerve
d, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
w = nerve.EventLog(os.path.join(d, "good.lcmlog"), "w")
for i in range(20):
    w.write_event(i * 1000, "CH%d" % (i % 3), bytes(rng.getrandbits(8) for _ in range(rng.randrange(100))))
w.close()
good = open(os.path.join(d, "good.lcmlog"), "rb").read()
events = errors = 0
for i in range(400):
    if i % 2:
        blob = bytes(rng.getrandbits(8) for _ in range(rng.randrange(2000)))
        if rng.random() < 0.5:  # make it look like events: sync words in random places
            blob = bytearray(blob)
            for _ in range(5):
                k = rng.randrange(max(len(blob) - 4, 1))
                blob[k:k + 4] = b"\xed\xa1\xda\x01"
            blob = bytes(blob)
    else:
        blob = bytearray(good)
        for _ in range(rng.randint(1, 10)):
            blob[rng.randrange(len(blob))] = rng.getrandbits(8)
        blob = bytes(blob[: rng.randrange(len(blob) + 1)])
    path = os.path.join(d, "f.lcmlog")
    with open(path, "wb") as f:
        f.write(blob)
    for strict in (False, True):
        try:
            log = nerve.EventLog(path, strict=strict)
            for e in log:
                events += 1
            log.seek_to_timestamp(rng.randrange(30000))
            log.seek(rng.randrange(len(blob) + 10))
            log.read_next_event()
        except nerve.LogDamageError:
            errors += 1
print(events, errors)
'''


def test_random_and_corrupted_logs_never_crash(tmp_path):
    r = subprocess.run([sys.executable, "-c", FUZZ_LOGS, str(tmp_path), "2"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, (r.returncode, r.stderr[-3000:])
    events, errors = map(int, r.stdout.split())
    assert events > 1000 and errors > 100, r.stdout


MEMORY = r'''
import os, sys
import nerve
d = sys.argv[1]

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

ch = nerve.Channel.create("mem", frames=64, frame_size=1024, dir=d)
rd = nerve.Channel.open("mem", dir=d)
log_path = os.path.join(d, "mem.lcmlog")

def round_(n):
    for i in range(n):
        ch.put(b"x" * (i % 1000))
        rd.get()
        if i % 10 == 0:
            with ch.loan(100) as b:
                b[:4] = b"abcd"
            rd.get(newest=True)
    with nerve.EventLog(log_path, "w", overwrite=True) as w:
        for i in range(n // 4):
            w.write_event(i, "C", b"y" * (i % 500))
    for e in nerve.EventLog(log_path):
        pass

round_(20000)  # warm up: allocator pools, interned strings
before = rss()
for _ in range(10):
    round_(20000)
print(rss() - before)
'''


def test_a_quarter_million_messages_leave_memory_flat(tmp_path):
    """Puts, gets, loans, log writes and reads in a loop: the process's resident memory does not grow."""
    r = subprocess.run([sys.executable, "-c", MEMORY, str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert int(r.stdout) < 4 << 20, f"resident memory grew by {int(r.stdout)} bytes"
