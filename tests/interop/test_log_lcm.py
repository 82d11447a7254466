"""`nerve log`, `nerve play`, `nerve export` and the file:// provider against the real LCM 1.5.3.

Both ways: `nerve log` records a real LCM publisher and the real `lcm-logplayer` plays that log to a real LCM
subscriber; the real `lcm-logger` records a real publisher and `nerve play` plays it to a real subscriber. Byte for
byte: a log copied by Nerve's writer equals the one LCM's Python `EventLog` wrote, and a log written by Nerve's
file provider reads back in `EventLog`. Damage: a log with garbage, a huge length field and a truncated tail plays
every intact event and reports the damage. Export: MCAP read back by the PyPI `mcap` package, every message
validated against its JSON schema with `jsonschema` and compared with the value the real LCM encoded; JSON lines and
CSV likewise. Loopback multicast with TTL 0 on ports of this test's own.
"""

from __future__ import annotations

import base64
import collections
import csv
import hashlib
import json
import math
import os
import signal
import struct
import subprocess
import time
from pathlib import Path

import pytest

import oracle

LCM_LOGGER = oracle.lcm_program("lcm-logger")
LCM_LOGPLAYER = oracle.lcm_program("lcm-logplayer")
EXAMPLES = oracle.REPO / "examples" / "types"


def url(offset: int, rcvbuf: bool = True) -> str:
    """A port of its own per test and per run (61000-64999: above the ephemeral range, apart from other suites)."""
    port = 61000 + (os.getpid() % 390) * 10 + offset
    opts = "&recv_buf_size=8388608" if rcvbuf else ""
    return f"udpm://239.255.76.81:{port}?ttl=0{opts}"


def payloads() -> list[tuple[str, bytes]]:
    """Channels and messages of every size class: empty, small, one byte past a datagram, 300 kB."""
    out = []
    for i, n in enumerate([0, 1, 10, 800, 65500, 300_000] * 5):
        out.append((f"DATA_{i % 3}", bytes((i * 31 + k) % 251 for k in range(n))))
    return out


PUBLISH = """
import lcm, time, sys, json
lc = lcm.LCM(sys.argv[1])
for ch, data in json.loads(sys.stdin.read()):
    lc.publish(ch, bytes.fromhex(data))
    time.sleep(0.002)
"""

SUBSCRIBE = """
import lcm, hashlib, sys
lc = lcm.LCM(sys.argv[1])
want = int(sys.argv[2])
got = []
lc.subscribe(".*", lambda ch, d: got.append((ch, len(d), hashlib.sha256(d).hexdigest())))
lc.handle_timeout(0)
print("ready", flush=True)
while len(got) < want and lc.handle_timeout(15000) > 0:
    pass
for g in got:
    print(*g)
"""


def digest(msgs: list[tuple[str, bytes]]) -> list[str]:
    return [f"{ch} {len(d)} {hashlib.sha256(d).hexdigest()}" for ch, d in msgs]


def start_subscriber(venv_python: Path, u: str, count: int) -> subprocess.Popen:
    proc = subprocess.Popen([str(venv_python), "-u", "-c", SUBSCRIBE, u, str(count)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    return proc


def subscriber_result(proc: subprocess.Popen) -> list[str]:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out.splitlines()


def publish(venv_python: Path, u: str, msgs: list[tuple[str, bytes]]) -> None:
    subprocess.run([str(venv_python), "-c", PUBLISH, u], input=json.dumps([(ch, d.hex()) for ch, d in msgs]),
                   text=True, check=True, timeout=60)


def read_eventlog(venv_python: Path, path: Path) -> list[dict]:
    """Every event of a log as the real LCM's Python EventLog reads it."""
    script = """
import lcm, sys, json
for e in lcm.EventLog(sys.argv[1], "r"):
    print(json.dumps({"n": e.eventnum, "t": e.timestamp, "ch": e.channel, "data": e.data.hex()}))
"""
    out = subprocess.run([str(venv_python), "-c", script, str(path)], capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def test_nerve_log_recorded_and_real_lcm_logplayer_replays_it(nerve_bin, venv_python, tmp_path):
    log = tmp_path / "nerve.lcmlog"
    msgs = payloads()
    rec = subprocess.Popen([str(nerve_bin), "log", str(log), "--url", url(0), "-q"], stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.7)  # subscribed and joined before anything is sent
        publish(venv_python, url(0, rcvbuf=False), msgs)
        time.sleep(0.5)
    finally:
        rec.send_signal(signal.SIGINT)
        _, err = rec.communicate(timeout=20)
    assert rec.returncode == 0, err
    assert f"recorded {len(msgs)} messages" in err and "missed 0 " in err, err

    events = read_eventlog(venv_python, log)
    assert [e["n"] for e in events] == list(range(len(msgs)))
    assert [(e["ch"], bytes.fromhex(e["data"])) for e in events] == msgs
    stamps = [e["t"] for e in events]
    assert stamps == sorted(stamps) and abs(stamps[0] / 1e6 - time.time()) < 120

    sub = start_subscriber(venv_python, url(1), len(msgs))
    subprocess.run([str(LCM_LOGPLAYER), "-s", "4", "-l", url(1, rcvbuf=False), str(log)], check=True, timeout=60,
                   capture_output=True)
    assert subscriber_result(sub) == digest(msgs)


def test_real_lcm_logger_recorded_and_nerve_play_replays_it(nerve_bin, venv_python, tmp_path):
    log = tmp_path / "lcm.lcmlog"
    msgs = payloads()
    logger = subprocess.Popen([str(LCM_LOGGER), "-q", "-f", f"--lcm-url={url(2)}", str(log)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(1.0)
        publish(venv_python, url(2, rcvbuf=False), msgs)
        time.sleep(0.3)
    finally:
        oracle.stop_with_sigint(logger)
    recorded = [(e["ch"], bytes.fromhex(e["data"])) for e in read_eventlog(venv_python, log)]
    recorded = [r for r in recorded if r[0] != "LCM_SELF_TEST"]
    assert recorded == msgs

    # As fast as possible, only DATA_*, DATA_1 renamed.
    want = [("RENAMED" if ch == "DATA_1" else ch, d) for ch, d in msgs]
    sub = start_subscriber(venv_python, url(3), len(want))
    res = subprocess.run([str(nerve_bin), "play", str(log), "--speed", "0", "--channel", "DATA_.*", "--remap",
                          "DATA_1=RENAMED", "--url", url(3, rcvbuf=False)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert f"published {len(msgs)} messages" in res.stderr, res.stderr
    assert subscriber_result(sub) == digest(want)

    # At the recorded pace (doubled), from 0 s: the same content.
    sub = start_subscriber(venv_python, url(4), len(msgs))
    res = subprocess.run([str(nerve_bin), "play", str(log), "--speed", "2", "--channel", "DATA_.*", "--url",
                          url(4, rcvbuf=False)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert subscriber_result(sub) == digest(msgs)


def write_eventlog(venv_python: Path, path: Path, events: list[tuple[int, str, bytes]]) -> None:
    script = """
import lcm, sys, json
log = lcm.EventLog(sys.argv[1], "w", overwrite=True)
for t, ch, data in json.loads(sys.stdin.read()):
    log.write_event(t, ch, bytes.fromhex(data))
log.close()
"""
    payload = json.dumps([(t, ch, d.hex()) for t, ch, d in events])
    subprocess.run([str(venv_python), "-c", script, str(path)], input=payload, text=True, check=True)


def test_logs_are_byte_identical_to_lcm_eventlog(nerve_bin, venv_python, tmp_path):
    events = [(1_700_000_000_000_000 + i * 777, ch, d) for i, (ch, d) in enumerate(payloads())]
    events += [(-5, "C" * 999, b""), (0, "x", b"\xed\xa1\xda\x01" * 3), (2**62, "UNICODE_é", b"\x00")]
    lcm_log = tmp_path / "python.lcmlog"
    write_eventlog(venv_python, lcm_log, events)
    copy = tmp_path / "nerve.lcmlog"
    res = subprocess.run([str(nerve_bin), "export", str(lcm_log), "--to", "lcm", "-o", str(copy), "-q"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert copy.read_bytes() == lcm_log.read_bytes()

    # The file provider's write mode: LCM's EventLog reads what `nerve pub` wrote through file://...?mode=w.
    out = tmp_path / "provider.lcmlog"
    res = subprocess.run([str(nerve_bin), "pub", "PROV", "--url", f"file://{out}?mode=w", "--hex", "0102ff"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    [e] = read_eventlog(venv_python, out)
    assert (e["n"], e["ch"], e["data"]) == (0, "PROV", "0102ff") and abs(e["t"] / 1e6 - time.time()) < 120


def damaged_log(venv_python: Path, tmp_path: Path) -> tuple[Path, list[tuple[str, bytes]], list[tuple[str, bytes]]]:
    """A log with garbage between events, a huge length field and a truncated tail; and what is intact in it."""
    events = [(1_700_000_000_000_000 + i * 1000, f"CH_{i}", bytes([i]) * (i * 10)) for i in range(10)]
    clean = tmp_path / "clean.lcmlog"
    write_eventlog(venv_python, clean, events)
    raw = clean.read_bytes()
    offsets = []
    pos = 0
    while pos < len(raw):
        offsets.append(pos)
        ch_len, data_len = struct.unpack(">ii", raw[pos + 20:pos + 28])
        pos += 28 + ch_len + data_len
    parts = [raw[offsets[i]:(offsets[i + 1] if i + 1 < len(offsets) else len(raw))] for i in range(len(offsets))]
    parts[3] = parts[3] + b"garbage between events"           # event 3 intact, garbage after it
    huge = bytearray(parts[5])
    huge[24:28] = struct.pack(">i", 0x7FFFFFFF)                 # event 5: a huge length field
    parts[5] = bytes(huge)
    parts[9] = parts[9][:-3]                                    # event 9: truncated
    path = tmp_path / "damaged.lcmlog"
    path.write_bytes(b"junk" + b"".join(parts))
    intact = [(ch, d) for i, (_, ch, d) in enumerate(events) if i not in (5, 9)]
    return path, intact, [(ch, d) for _, ch, d in events]


def test_damaged_log_plays_every_intact_event_and_reports_the_damage(nerve_bin, venv_python, tmp_path):
    path, intact, _ = damaged_log(venv_python, tmp_path)
    sub = start_subscriber(venv_python, url(5), len(intact))
    res = subprocess.run([str(nerve_bin), "play", str(path), "--speed", "0", "--url", url(5, rcvbuf=False)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 1, res.stderr
    assert subscriber_result(sub) == digest(intact)
    assert "damaged in 4 place(s)" in res.stderr, res.stderr
    for what in ["offset 0: 4 bytes that are not an event", "22 bytes that are not an event",
                 "event claims 2147483", "last event truncated"]:
        assert what in res.stderr, (what, res.stderr)

    # The file:// provider plays the same log as a live bus, damage and all.
    res = subprocess.run([str(nerve_bin), "sub", ".*", "--url", f"file://{path}?speed=0", "--count", str(len(intact)),
                          "--timeout-ms", "20000", "--json"], capture_output=True, text=True, timeout=60)
    got = [json.loads(line) for line in res.stdout.splitlines()]
    assert [(m["channel"], bytes.fromhex(m["data_hex"])) for m in got] == intact
    # ... and reported as play reports it (status 1).
    assert res.returncode == 1, res.stderr
    assert "damaged in 4 place(s)" in res.stderr, res.stderr


def test_file_provider_keeps_the_recorded_pace(nerve_bin, venv_python, tmp_path):
    """speed=1 stamps each message's recv_utime with its scheduled time, as LCM does: the recorded offsets. (That is
    computed from the log, not measured: the wall-clock pacing, and speed=0 at once, are timed in
    crates/bus/tests/file_pacing.rs and crates/cli/tests/play.rs.)"""
    events = [(1_700_000_000_000_000 + i * 100_000, "PACE", bytes([i])) for i in range(4)]
    log = tmp_path / "pace.lcmlog"
    write_eventlog(venv_python, log, events)
    res = subprocess.run([str(nerve_bin), "sub", "PACE", "--url", f"file://{log}?speed=1", "--count", "4",
                          "--timeout-ms", "20000", "--json"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    t = [json.loads(line)["recv_utime"] for line in res.stdout.splitlines()]
    # Scheduled times, exactly 100 ms apart (whatever the machine's load did to the actual delivery).
    assert [b - a for a, b in zip(t, t[1:])] == [100_000] * 3


# ----------------------------------------------------------------------------------------------------------------
# Export


def non_finite_paths(descs: dict, ty: str, value) -> bool:
    """Whether a canonical value holds a NaN or an infinity anywhere."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, list):
        return any(non_finite_paths(descs, ty, v) for v in value)
    if isinstance(value, dict):
        return any(non_finite_paths(descs, ty, v) for v in value.values())
    return False


def reshape(flat: list, dims: list, obj: dict) -> list:
    """A flat row-major list back into nested lists, dims being ints or earlier member names."""
    if not dims:
        raise AssertionError("reshape needs a dimension")
    sizes = [d if isinstance(d, int) else obj[d] for d in dims]

    def build(items, sizes):
        if len(sizes) == 1:
            return list(items)
        step = math.prod(sizes[1:])
        return [build(items[i * step:(i + 1) * step], sizes[1:]) for i in range(sizes[0])]

    assert len(flat) == math.prod(sizes), (len(flat), sizes)
    return build(flat, sizes)


def from_mcap(descs: dict, ty: str, got, expected):
    """The MCAP JSON form back in the oracle's canonical form: unflattened arrays, base64 bytes as ints, and `null`
    (JSON has no NaN) as the expected non-finite value when the expected one is non-finite."""
    if ty in ("float", "double"):
        if got is None and isinstance(expected, float) and not math.isfinite(expected):
            return {math.inf: "Infinity", -math.inf: "-Infinity"}.get(expected, "NaN")
        return got
    if ty in oracle.PRIMITIVES:
        return got
    desc = descs[ty]
    out = {}
    for m in desc.members:
        g, e = got[m.name], expected[m.name]
        if m.dims:
            flat = list(base64.b64decode(g)) if m.type == "byte" else g
            nested = reshape(flat, m.dims, out)
            out[m.name] = map_leaves(nested, e, lambda gl, el: from_mcap(descs, m.type, gl, el), len(m.dims))
        else:
            out[m.name] = from_mcap(descs, m.type, g, e)
    return out


def map_leaves(got, expected, f, depth):
    if depth == 0:
        return f(got, expected)
    return [map_leaves(g, e, f, depth - 1) for g, e in zip(got, expected)]


@pytest.fixture(scope="module")
def corpus_log(tmp_path_factory, venv_python):
    """Every corpus type's random values (encoded by the real LCM), on a channel named after the type."""
    cases = oracle.cases(1, 6)
    path = tmp_path_factory.mktemp("export") / "corpus.lcmlog"
    write_eventlog(venv_python, path, [(1_700_000_000_000_000 + i, c.type, c.data) for i, c in enumerate(cases)])
    return path, cases


def test_mcap_export_reads_back_and_validates(nerve_bin, corpus_log, tmp_path):
    from jsonschema import Draft202012Validator
    from mcap.reader import make_reader

    path, cases = corpus_log
    out = tmp_path / "corpus.mcap"
    res = subprocess.run([str(nerve_bin), "export", str(path), "--to", "mcap", "--types", str(oracle.CORPUS), "-o",
                          str(out)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    descs = oracle.desc_by_name()
    with open(out, "rb") as f:
        reader = make_reader(f)
        summary = reader.get_summary()
        assert summary.statistics.message_count == len(cases)
        validators = {}
        seen = 0
        checked_nonfinite = 0
        ambiguous = 0
        shared = collections.Counter(d.fingerprint for d in descs.values())
        for schema, channel, message in reader.iter_messages():
            case = cases[seen]
            seen += 1
            assert channel.topic == case.type and channel.message_encoding == "json"
            if shared[descs[case.type].fingerprint] > 1:
                # Types copied into two packages share a fingerprint: exported raw, with the reason, never guessed.
                value = json.loads(message.data)
                assert schema.name == "nerve.undecoded" and "is shared by" in value["error"], value
                assert base64.b64decode(value["data"]) == case.data
                ambiguous += 1
                continue
            assert schema.encoding == "jsonschema" and schema.name == case.type, (schema.name, case.type)
            assert message.log_time == (1_700_000_000_000_000 + seen - 1) * 1000
            assert message.sequence == seen - 1
            v = validators.setdefault(schema.id, Draft202012Validator(json.loads(schema.data)))
            value = json.loads(message.data)
            errors = list(v.iter_errors(value))
            if non_finite_paths(descs, case.type, case.value):
                # NaN and infinities are null in JSON; they are the only thing the schema may reject.
                assert all(e.instance is None for e in errors), [e.message for e in errors]
                checked_nonfinite += 1
            else:
                assert not errors, (case.type, [e.message for e in errors][:3])
            oracle.check_value(descs, case.type, case.value, from_mcap(descs, case.type, value, case.value))
        assert seen == len(cases)
        assert checked_nonfinite > 0 and ambiguous < len(cases) // 4


def test_jsonl_and_csv_exports(nerve_bin, corpus_log, tmp_path, venv_python):
    path, cases = corpus_log
    out = tmp_path / "corpus.jsonl"
    res = subprocess.run([str(nerve_bin), "export", str(path), "--to", "jsonl", "--types", str(oracle.CORPUS), "-o",
                          str(out), "-q"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    descs = oracle.desc_by_name()
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == len(cases)
    shared = collections.Counter(d.fingerprint for d in descs.values())
    for i, (line, case) in enumerate(zip(lines, cases)):
        assert (line["event"], line["channel"]) == (i, case.type)
        if shared[descs[case.type].fingerprint] > 1:
            assert "is shared by" in line["error"] and bytes.fromhex(line["data_hex"]) == case.data
            continue
        assert line["type"] == case.type
        oracle.check_value(descs, case.type, case.value, line["value"])

    # CSV of a laser_t log: one file per channel, a column per range, values as the real LCM encoded them.
    gen = tmp_path / "py"
    gen.mkdir()
    subprocess.run([str(oracle.LCM_GEN), "-p", "--ppath", str(gen), str(EXAMPLES / "laser_t.lcm")], check=True)
    script = f"""
import sys, lcm
sys.path.insert(0, {str(gen)!r})
from exlcm import laser_t
log = lcm.EventLog(sys.argv[1], "w", overwrite=True)
for i in range(3):
    m = laser_t(); m.utime = i; m.nranges = i + 1; m.ranges = [0.5 * k for k in range(i + 1)]; m.rad0 = -1.5
    m.radstep = 0.25
    log.write_event(1000 + i, "LASER", m.encode())
log.write_event(2000, "OTHER", b"12345678xyz")
"""
    laser_log = tmp_path / "laser.lcmlog"
    subprocess.run([str(venv_python), "-c", script, str(laser_log)], check=True)
    out = tmp_path / "csv"
    res = subprocess.run([str(nerve_bin), "export", str(laser_log), "--to", "csv", "--types", str(EXAMPLES), "-o",
                          str(out), "-q"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    rows = list(csv.reader((out / "LASER.csv").open()))
    assert rows[0] == ["recv_utime", "event", "utime", "nranges", "ranges[0]", "ranges[1]", "ranges[2]", "rad0",
                       "radstep"]
    assert rows[1] == ["1000", "0", "0", "1", "0.0", "", "", "-1.5", "0.25"]
    assert rows[3] == ["1002", "2", "2", "3", "0.0", "0.5", "1.0", "-1.5", "0.25"]
    other = list(csv.reader((out / "OTHER.csv").open()))
    assert other[0] == ["recv_utime", "event", "fingerprint", "data_hex", "error"]
    assert other[1][:4] == ["2000", "3", "0x3132333435363738", b"12345678xyz".hex()]

    # --channel keeps only the matching channels.
    res = subprocess.run([str(nerve_bin), "export", str(laser_log), "--to", "jsonl", "--channel", "OTH.*", "-o", "-",
                          "-q"], capture_output=True, text=True)
    assert [json.loads(line)["channel"] for line in res.stdout.splitlines()] == ["OTHER"]
