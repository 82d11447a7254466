"""`nerve.lcm` (LCM's Python module on Nerve) against the real `lcm` 1.5.3 module: its event-log API.

Programs written for the `lcm` module - a log writer, a log reader (iteration, tell, size, seek, seek_to_timestamp,
next) and a misuser (bad modes, overwriting, reading in write mode, writing in read mode or after close, wrong
argument types) - run with `import lcm` and with `import nerve.lcm as lcm`; their outputs must be equal, and the
logs the two writers make byte-identical. Logs cross over: written by Python through `nerve.lcm` and played by the
real `lcm-logplayer` to a real LCM subscriber; recorded by the real `lcm-logger` and read through `nerve.lcm`.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import test_log_lcm as logtest

pytest.importorskip("nerve.lcm")

WRITER = r'''
import sys
import {module} as lcm
log = lcm.EventLog(sys.argv[1], "w")
for i in range(40):
    log.write_event(1_000_000 + 250 * i + (i % 3), "CHAN_%d" % (i % 4), bytes((i * 7 + k) % 256 for k in range(i * 13)))
log.write_event(2_000_000, "TEXT", "a str is written as UTF-8: é")
log.write_event(2_000_001, b"BYTES_CHANNEL", b"")
print("tell", log.tell())
log.close()
log.close()
'''

READER = r'''
import json, sys
import {module} as lcm
log = lcm.EventLog(sys.argv[1], "r")
out = {{"size": log.size(), "tell0": log.tell()}}
events, tells = [], []
for e in log:
    events.append([e.eventnum, e.timestamp, e.channel, e.data.hex()])
    tells.append(log.tell())
out["events"], out["tells"] = events, tells
out["after_end"] = log.read_next_event()
out["again"] = [e.eventnum for e in log]  # iteration starts at the beginning again
log.seek(tells[9])
out["seek_event"] = log.read_next_event().eventnum
log.seek(tells[9] - 3)  # the next event that starts at or after the offset
out["seek_between"] = log.read_next_event().eventnum
for ts in (0, 1_000_000, 1_000_000 + 250 * 17, 1_000_000 + 250 * 17 + 100, 2_000_000):
    log.seek_to_timestamp(ts)
    e = log.read_next_event()
    out["ts_%d" % ts] = [e.eventnum, e.timestamp]
log.seek(0)
out["next"] = next(log).eventnum
out["next_method"] = log.next().eventnum
out["event_type"] = type(log.read_next_event()).__name__
log.close()
print(json.dumps(out))
'''

MISUSE = r'''
import os, sys, tempfile
import {module} as lcm
d = tempfile.mkdtemp()
p = os.path.join(d, "a.lcmlog")
def t(name, f):
    try:
        r = f()
        print(name, "->", r if r is None or isinstance(r, (int, str)) else type(r).__name__)
    except Exception as e:
        print(name, "!!", type(e).__name__, e)
t("mode x", lambda: lcm.EventLog(p, "x"))
t("mode a", lambda: lcm.EventLog(p, "a"))
t("mode None", lambda: lcm.EventLog(p, None))
t("read missing", lambda: lcm.EventLog(os.path.join(d, "missing.lcmlog"), "r"))
t("write in missing dir", lambda: lcm.EventLog(os.path.join(d, "no", "x.lcmlog"), "w"))
t("path int", lambda: lcm.EventLog(5, "r"))
w = lcm.EventLog(p, "w")
t("write", lambda: w.write_event(1, "C", b"x"))
t("write float utime", lambda: w.write_event(1.5, "C", b"x"))
t("write None data", lambda: w.write_event(2, "C", None))
t("read in write mode", lambda: w.read_next_event())
t("seek in write mode", lambda: w.seek(0))
t("seek_to_timestamp in write mode", lambda: w.seek_to_timestamp(0))
t("iterate in write mode", lambda: list(w))
t("close", lambda: w.close())
t("write after close", lambda: w.write_event(3, "C", b"y"))
t("overwrite refused", lambda: lcm.EventLog(p, "w"))
t("overwrite allowed", lambda: lcm.EventLog(p, "w", overwrite=True).close())
lcm.EventLog(p, "w", True).write_event(5, "D", b"z")
r = lcm.EventLog(p, "r")
t("write in read mode", lambda: r.write_event(1, "C", b"x"))
t("seek str", lambda: r.seek("0"))
t("seek float", lambda: r.seek(1.0))
t("read", lambda: r.read_next_event().channel)
t("close r", lambda: r.close())
t("read after close", lambda: r.read_next_event())
t("seek after close", lambda: r.seek(0))
t("iterate after close", lambda: list(r))
t("close twice", lambda: r.close())
t("Event", lambda: sorted(vars(lcm.Event(1, 2, "c", b"d")).items()) and lcm.Event(1, 2, "c", b"d").channel)
'''


def run(program: str, module: str, *args) -> str:
    r = subprocess.run([sys.executable, "-c", program.format(module=module), *map(str, args)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, (module, r.stderr[-3000:])
    return r.stdout


def test_log_programs_behave_the_same_with_lcm_and_nerve_lcm(tmp_path):
    logs = {}
    for module in ("lcm", "nerve.lcm"):
        logs[module] = tmp_path / f"{module}.lcmlog"
        run(WRITER, module, logs[module])
    assert logs["lcm"].read_bytes() == logs["nerve.lcm"].read_bytes()
    want = None
    for module in ("lcm", "nerve.lcm"):
        for log in logs.values():
            got = json.loads(run(READER, module, log))
            if want is None:
                want = got
                assert len(want["events"]) == 42 and want["seek_event"] == 10 and want["after_end"] is None
            assert got == want, (module, log.name)


def test_writer_tell_is_lcms(tmp_path):
    outs = {m: run(WRITER, m, tmp_path / f"{m}.lcmlog") for m in ("lcm", "nerve.lcm")}
    assert outs["lcm"] == outs["nerve.lcm"]


def test_misuse_raises_the_same_exceptions(tmp_path):
    want, got = run(MISUSE, "lcm"), run(MISUSE, "nerve.lcm")
    assert want.splitlines() == got.splitlines()
    assert "mode x !! ValueError invalid event log mode" in got
    assert "write after close !! ValueError event log already closed" in got
    assert "overwrite refused !! ValueError Refusing to overwrite" in got


def test_log_written_through_nerve_lcm_plays_with_real_lcm_logplayer(venv_python, tmp_path):
    msgs = logtest.payloads()
    log = tmp_path / "python.lcmlog"
    code = ("import json, sys, time\nimport nerve.lcm as lcm\nlog = lcm.EventLog(sys.argv[1], 'w')\n"
            "t = int(time.time() * 1e6)\n"
            "for i, (ch, data) in enumerate(json.loads(sys.stdin.read())):\n"
            "    log.write_event(t + 1000 * i, ch, bytes.fromhex(data))\nlog.close()\n")
    subprocess.run([sys.executable, "-c", code, str(log)], input=json.dumps([(c, d.hex()) for c, d in msgs]),
                   text=True, check=True, timeout=60)
    sub = logtest.start_subscriber(venv_python, logtest.url(8), len(msgs))
    subprocess.run([str(logtest.LCM_LOGPLAYER), "-s", "4", "-l", logtest.url(8, rcvbuf=False), str(log)], check=True,
                   timeout=60, capture_output=True)
    assert logtest.subscriber_result(sub) == logtest.digest(msgs)


def test_log_recorded_by_real_lcm_logger_reads_through_nerve_lcm(venv_python, tmp_path):
    msgs = logtest.payloads()
    log = tmp_path / "lcm.lcmlog"
    rec = subprocess.Popen([str(logtest.LCM_LOGGER), "-q", f"--lcm-url={logtest.url(9)}", str(log)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.7)
        logtest.publish(venv_python, logtest.url(9, rcvbuf=False), msgs)
        time.sleep(0.5)
    finally:
        rec.send_signal(signal.SIGINT)
        rec.communicate(timeout=20)
    code = ("import json, sys\nimport nerve.lcm as lcm\n"
            "print(json.dumps([(e.eventnum, e.channel, e.data.hex()) for e in lcm.EventLog(sys.argv[1], 'r')]))")
    out = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, check=True)
    events = json.loads(out.stdout)
    assert [(c, bytes.fromhex(d)) for _, c, d in events] == msgs
    assert [n for n, _, _ in events] == list(range(len(msgs)))
