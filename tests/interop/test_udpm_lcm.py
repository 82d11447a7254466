"""The bus over udpm against the real LCM 1.5.3, both directions, on loopback multicast (TTL 0).

Real LCM publishes and `nerve sub` receives; `nerve pub` publishes and the real LCM receives; typed (a laser_t made by
the real lcm-gen's Python and by `nerve pub --type --json`) and raw; empty, small, exactly at the fragmentation
boundary, one byte past it, 1 MB; many channels; pattern subscriptions both ways; and the real `lcm-logger` records
Nerve's traffic byte for byte. (100 MB messages are tested at the transport level in crates/udpm/tests.)
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

import oracle

EXAMPLES = oracle.REPO / "examples" / "types"


def url(offset: int) -> str:
    """A port of its own per test (and per run), so nothing else on the host interferes."""
    port = 40000 + (os.getpid() % 2000) * 10 + offset
    return f"udpm://239.255.76.69:{port}?ttl=0&recv_buf_size=16777216"


def boundary_payloads(channel: str) -> list[bytes]:
    boundary = 65499 - len(channel) - 1
    return [bytes((i * 31) % 253 for i in range(n)) for n in (0, 100, boundary, boundary + 1, 1_000_000)]


def start_nerve_sub(nerve_bin: Path, pattern: str, u: str, count: int, *extra: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [str(nerve_bin), "sub", pattern, "--url", u, "--count", str(count), "--timeout-ms", "20000", "--json", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.4)  # the subscriber binds and joins before anything is sent
    return proc


def finish(proc: subprocess.Popen) -> list[dict]:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, f"nerve sub failed ({proc.returncode}): {err}"
    return [json.loads(line) for line in out.splitlines()]


def real_lcm(script: str, venv_python: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv_python), "-c", script], capture_output=True, text=True, timeout=timeout)


def start_real_lcm(script: str, venv_python: Path) -> subprocess.Popen:
    proc = subprocess.Popen([str(venv_python), "-u", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    return proc


def test_real_lcm_to_nerve_raw_sizes(nerve_bin, venv_python):
    u = url(0)
    sub = start_nerve_sub(nerve_bin, "EDGE", u, 5)
    res = real_lcm(
        f"""
import lcm
lc = lcm.LCM("{u}")
b = 65499 - len("EDGE") - 1
for n in (0, 100, b, b + 1, 1000000):
    lc.publish("EDGE", bytes((i * 31) % 253 for i in range(n)))
""",
        venv_python,
    )
    assert res.returncode == 0, res.stderr
    got = finish(sub)
    assert [bytes.fromhex(m["data_hex"]) for m in got] == boundary_payloads("EDGE")
    assert all(m["channel"] == "EDGE" for m in got)


def test_nerve_to_real_lcm_raw_sizes(nerve_bin, venv_python, tmp_path):
    u = url(1)
    receiver = start_real_lcm(
        f"""
import lcm, hashlib
lc = lcm.LCM("{u}")
got = []
lc.subscribe("EDGE", lambda ch, d: got.append((ch, len(d), hashlib.sha256(d).hexdigest())))
lc.handle_timeout(0)
print("ready")
while len(got) < 5 and lc.handle_timeout(10000) > 0:
    pass
for g in got:
    print(*g)
""",
        venv_python,
    )
    for i, p in enumerate(boundary_payloads("EDGE")):
        f = tmp_path / f"p{i}"
        f.write_bytes(p)
        subprocess.run([str(nerve_bin), "pub", "EDGE", "--url", u, "--file", str(f)], check=True)
    out, err = receiver.communicate(timeout=60)
    want = [f"EDGE {len(p)} {hashlib.sha256(p).hexdigest()}" for p in boundary_payloads("EDGE")]
    assert out.split("\n")[:-1] == want, err


def test_typed_both_ways(nerve_bin, venv_python, tmp_path):
    """A laser_t from the real lcm-gen's Python reaches `nerve sub --types` decoded; one from `nerve pub --type` reaches
    real LCM Python, which decodes it with its own generated class."""
    gen = tmp_path / "py"
    gen.mkdir()
    subprocess.run([str(oracle.LCM_GEN), "-p", "--ppath", str(gen), str(EXAMPLES / "laser_t.lcm")], check=True)
    u = url(2)
    sub = start_nerve_sub(nerve_bin, "LASER", u, 1, "--types", str(EXAMPLES))
    res = real_lcm(
        f"""
import sys, lcm
sys.path.insert(0, {str(gen)!r})
from exlcm import laser_t
m = laser_t(); m.utime = 12345; m.nranges = 3; m.ranges = [1.0, 2.5, -0.0]; m.rad0 = -1.5; m.radstep = 0.01
lcm.LCM("{u}").publish("LASER", m.encode())
print(m.encode().hex())
""",
        venv_python,
    )
    assert res.returncode == 0, res.stderr
    [got] = finish(sub)
    assert got["data_hex"] == res.stdout.strip()
    assert got["type"] == "exlcm.laser_t"
    assert got["fingerprint"] == "0x18f48ab44e6fd954"
    assert got["value"]["utime"] == 12345 and got["value"]["ranges"] == [1.0, 2.5, -0.0]

    u = url(3)
    receiver = start_real_lcm(
        f"""
import sys, lcm
sys.path.insert(0, {str(gen)!r})
from exlcm import laser_t
lc = lcm.LCM("{u}")
got = []
lc.subscribe("LASER", lambda ch, d: got.append(laser_t.decode(d)))
lc.handle_timeout(0)
print("ready")
while not got and lc.handle_timeout(10000) > 0:
    pass
m = got[0]
print(m.utime, m.nranges, list(m.ranges), m.rad0, m.radstep)
""",
        venv_python,
    )
    value = {"utime": -7, "nranges": 2, "ranges": [0.5, 4.0], "rad0": 0.25, "radstep": 0.125}
    subprocess.run(
        [str(nerve_bin), "pub", "LASER", "--url", u, "--type", "exlcm.laser_t", "--types", str(EXAMPLES), "--json", json.dumps(value)],
        check=True,
    )
    out, err = receiver.communicate(timeout=30)
    assert out.strip() == "-7 2 [0.5, 4.0] 0.25 0.125", err


def test_many_channels_and_patterns(nerve_bin, venv_python):
    """50 channels from real LCM; Nerve's pattern `CH_1.*` gets exactly the 11 it matches (anchored), in order."""
    u = url(4)
    sub = start_nerve_sub(nerve_bin, "CH_1.*", u, 11)
    res = real_lcm(
        f"""
import lcm
lc = lcm.LCM("{u}")
for i in range(50):
    lc.publish("CH_%d" % i, bytes([i]) * (i + 1))
lc.publish("XCH_1", b"not anchored at the start")
""",
        venv_python,
    )
    assert res.returncode == 0, res.stderr
    got = finish(sub)
    want = ["CH_1"] + [f"CH_{i}" for i in range(10, 20)]
    assert [m["channel"] for m in got] == want
    for m in got:
        i = int(m["channel"][3:])
        assert bytes.fromhex(m["data_hex"]) == bytes([i]) * (i + 1)


def test_real_lcm_pattern_receives_nerve_channels(nerve_bin, venv_python):
    u = url(5)
    receiver = start_real_lcm(
        f"""
import lcm
lc = lcm.LCM("{u}")
got = []
lc.subscribe("(POSE|TWIST)_.*", lambda ch, d: got.append(ch))
lc.handle_timeout(0)
print("ready")
while len(got) < 4 and lc.handle_timeout(5000) > 0:
    pass
print(" ".join(got))
""",
        venv_python,
    )
    for ch in ["POSE_A", "OTHER", "TWIST_B", "POSE_C", "XPOSE_D", "TWIST_E"]:
        subprocess.run([str(nerve_bin), "pub", ch, "--url", u, "--hex", "00"], check=True)
    out, err = receiver.communicate(timeout=30)
    assert out.split() == ["POSE_A", "TWIST_B", "POSE_C", "TWIST_E"], err


def test_lcm_logger_records_nerve_traffic_byte_for_byte(nerve_bin, venv_python, tmp_path):
    u = url(6)
    log = tmp_path / "nerve.lcmlog"
    # Its output goes to a file, not a pipe nobody reads: a full pipe would block lcm-logger (and its exit) forever.
    logger_out = open(tmp_path / "lcm-logger.out", "wb")
    logger = subprocess.Popen(
        [str(oracle.lcm_program("lcm-logger")), "-q", "-f", f"--lcm-url={u}", str(log)],
        stdout=logger_out,
        stderr=subprocess.STDOUT,
    )
    try:
        time.sleep(1.0)
        payloads = [b"", b"small", bytes(range(256)) * 1000]
        for i, p in enumerate(payloads):
            f = tmp_path / f"m{i}"
            f.write_bytes(p)
            subprocess.run([str(nerve_bin), "pub", f"LOG_{i}", "--url", u, "--file", str(f)], check=True)
        time.sleep(0.5)
    finally:
        # SIGINT is lcm-logger's clean exit (it flushes and closes the log); on SIGTERM it loses what is still in its
        # stdio buffer.
        try:
            oracle.stop_with_sigint(logger)
        finally:
            logger_out.close()
    read = real_lcm(
        f"""
import lcm
for e in lcm.EventLog({str(log)!r}, "r"):
    print(e.channel, e.data.hex())
""",
        venv_python,
    )
    assert read.returncode == 0, read.stderr
    events = [line.split(" ") for line in read.stdout.splitlines()]
    events = [(e[0], bytes.fromhex(e[1]) if len(e) > 1 else b"") for e in events if e[0] != "LCM_SELF_TEST"]
    assert events == [(f"LOG_{i}", p) for i, p in enumerate(payloads)]


def mp_url(offset: int) -> str:
    port = 50000 + (os.getpid() % 400) * 20 + offset * 10
    return f"mpudpm://239.255.76.73:{port}?ttl=0&nports=8&recv_buf_size=4194304"


def test_mpudpm_real_lcm_to_nerve(nerve_bin, venv_python):
    """liblcm's multi-port publisher; Nerve subscribes by name and by pattern. The pattern learns the channels from
    liblcm's announcements, so the publisher keeps publishing until the subscriber has what it needs."""
    u = mp_url(0)
    by_name = start_nerve_sub(nerve_bin, "POSE", u, 3)
    by_pattern = start_nerve_sub(nerve_bin, "CAM_.*", u, 3)
    res = real_lcm(
        f"""
import lcm, time
lc = lcm.LCM("{u}")
end = time.time() + 3
i = 0
while time.time() < end:
    lc.publish("POSE", b"p%d" % i)
    lc.publish("CAM_LEFT", b"c%d" % i)
    lc.publish("OTHER", b"o")
    i += 1
    time.sleep(0.05)
""",
        venv_python,
    )
    assert res.returncode == 0, res.stderr
    names = finish(by_name)
    assert [m["channel"] for m in names] == ["POSE"] * 3
    seq = [int(bytes.fromhex(m["data_hex"])[1:]) for m in names]
    assert seq == sorted(seq) and len(set(seq)) == 3
    assert {m["channel"] for m in finish(by_pattern)} == {"CAM_LEFT"}


def test_mpudpm_nerve_to_real_lcm(nerve_bin, venv_python):
    u = mp_url(1)
    receiver = start_real_lcm(
        f"""
import lcm
lc = lcm.LCM("{u}")
got = []
lc.subscribe("POSE", lambda ch, d: got.append((ch, d)))
lc.subscribe("CAM_.*", lambda ch, d: got.append((ch, d)))
lc.handle_timeout(0)
print("ready")
while len({{c for c, _ in got}}) < 2 and lc.handle_timeout(5000) > 0:
    pass
print(" ".join(sorted({{c for c, _ in got}})))
""",
        venv_python,
    )
    # Several rounds: liblcm's pattern subscription joins CAM_LEFT's port once it has seen Nerve's announcement.
    for _ in range(10):
        for ch in ("POSE", "CAM_LEFT", "OTHER"):
            subprocess.run([str(nerve_bin), "pub", ch, "--url", u, "--hex", "0102", "--count", "3", "--rate", "50"], check=True)
        if receiver.poll() is not None:
            break
    out, err = receiver.communicate(timeout=30)
    assert out.split() == ["CAM_LEFT", "POSE"], err


def test_self_test_is_lcms_and_not_application_data(nerve_bin, venv_python):
    """Starting to receive sends LCM's self-test (`lcm self test` on LCM_SELF_TEST), as liblcm does, so tools that
    watch for it see Nerve like any LCM process; Nerve's own `.*` subscribers are not handed self-tests.

    The real LCM receiver sends a self-test of its own when it subscribes, and resends it every 100 ms until it comes
    back: on a loaded host a resent copy arrives after its self-test ended and reaches the subscription. So it counts
    self-tests only from "ready" on, after it has drained its own, and any it sees then came from Nerve."""
    u = url(7)
    receiver = start_real_lcm(
        f"""
import lcm, time
lc = lcm.LCM("{u}")
got = []
lc.subscribe("LCM_SELF_TEST", lambda ch, d: got.append(d))
drain_until = time.monotonic() + 0.5
while time.monotonic() < drain_until:
    lc.handle_timeout(50)
got.clear()
print("ready")
deadline = time.monotonic() + 15
while not got and time.monotonic() < deadline:
    lc.handle_timeout(100)
print(len(got), got[0].decode() if got else "no self-test from Nerve")
""",
        venv_python,
    )
    everything = start_nerve_sub(nerve_bin, ".*", u, 1)
    subprocess.run([str(nerve_bin), "pub", "AFTER", "--url", u, "--hex", "00"], check=True)
    out, err = receiver.communicate(timeout=30)
    count, text = out.strip().split(" ", 1)
    assert int(count) >= 1 and text == "lcm self test", (out, err)
    assert [m["channel"] for m in finish(everything)] == ["AFTER"]
