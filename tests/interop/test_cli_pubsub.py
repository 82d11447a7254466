"""`nerve pub` and `nerve sub` end to end: exit codes, output formats, typed values through --types, and the errors a
user meets first (a bad pattern, bad hex, an unknown type, multicast not routed)."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

import oracle

EXAMPLES = str(oracle.REPO / "examples" / "types")


def url(offset: int) -> str:
    return f"udpm://239.255.76.75:{45000 + (os.getpid() % 400) * 10 + offset}?ttl=0"


def run(nerve_bin, *args, **kw):
    return subprocess.run([str(nerve_bin), *args], capture_output=True, text=True, timeout=60, **kw)


def test_sub_prints_text_and_json_and_counts(nerve_bin):
    u = url(0)
    text = subprocess.Popen([str(nerve_bin), "sub", "EX.*", "--url", u, "--count", "2", "--timeout-ms", "10000",
                             "--types", EXAMPLES], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    js = subprocess.Popen([str(nerve_bin), "sub", "EX.*", "--url", u, "--count", "2", "--timeout-ms", "10000",
                           "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.4)
    laser = {"utime": 7, "ranges": [1.5, 2.0], "rad0": 0.0, "radstep": 0.25}
    assert run(nerve_bin, "pub", "EXLASER", "--url", u, "--types", EXAMPLES, "--type", "exlcm.laser_t",
               "--json", json.dumps(laser)).returncode == 0
    assert run(nerve_bin, "pub", "EXRAW", "--url", u, "--hex", "de ad be ef").returncode == 0
    out, err = text.communicate(timeout=30)
    assert text.returncode == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("EXLASER 36 bytes exlcm.laser_t: ")
    # The count member was left out of the JSON: it is taken from the array's length.
    assert json.loads(lines[0].split(": ", 1)[1])["nranges"] == 2
    assert lines[1] == "EXRAW 4 bytes (no fingerprint): message of 4 bytes has no 8-byte fingerprint"
    out, err = js.communicate(timeout=30)
    assert js.returncode == 0, err
    raw = json.loads(out.splitlines()[1])
    assert raw == {"channel": "EXRAW", "size": 4, "fingerprint": None, "recv_utime": raw["recv_utime"], "data_hex": "deadbeef"}


def test_sub_timeout_before_count_exits_1(nerve_bin):
    res = run(nerve_bin, "sub", "NOTHING", "--url", url(1), "--count", "1", "--timeout-ms", "200")
    assert res.returncode == 1
    assert "timed out after 0 of 1 messages" in res.stderr


def test_pub_count_and_rate(nerve_bin):
    u = url(2)
    sub = subprocess.Popen([str(nerve_bin), "sub", "R", "--url", u, "--count", "5", "--timeout-ms", "10000", "--json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.4)
    start = time.monotonic()
    assert run(nerve_bin, "pub", "R", "--url", u, "--hex", "01", "--count", "5", "--rate", "20").returncode == 0
    elapsed = time.monotonic() - start
    out, _ = sub.communicate(timeout=30)
    assert len(out.splitlines()) == 5
    assert elapsed >= 0.2, "5 messages at 20 Hz are spaced over at least 4 periods"


@pytest.mark.parametrize(
    "args, message",
    [
        (["sub", "X(", "--count", "1", "--timeout-ms", "10"], "bad channel pattern 'X('"),
        (["pub", "X", "--hex", "0g"], "'0g' at digit 0 is not hex"),
        (["pub", "X", "--hex", "012"], "odd number of hex digits"),
        (["pub", "X", "--type", "exlcm.nope_t", "--types", EXAMPLES, "--json", "{}"], "type 'exlcm.nope_t' not found"),
        (["pub", "X", "--type", "exlcm.laser_t", "--types", EXAMPLES, "--json", '{"utime": "x"}'], "utime"),
        (["pub", "X"], "give the message with --hex, --file, or --type"),
        (["pub", "X", "--url", "udpm://10.0.0.1:7667", "--hex", "00"], "not a multicast group"),
        (["pub", "X", "--url", "nosuch://", "--hex", "00"], "unknown provider 'nosuch://'"),
    ],
)
def test_errors_say_what_is_wrong(nerve_bin, args, message):
    res = run(nerve_bin, *args)
    assert res.returncode == 1, res  # input rejected
    assert message in res.stderr, res.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a network namespace")
def test_unrouted_multicast_says_what_to_run(nerve_bin):
    ns = f"nerve_noroute_{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"], check=True)
        res = subprocess.run(["ip", "netns", "exec", ns, str(nerve_bin), "pub", "X", "--hex", "00"],
                             capture_output=True, text=True, timeout=30)
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=True)
    assert res.returncode == 2
    assert "no route to multicast group 239.255.76.67" in res.stderr
    assert "ip route add 224.0.0.0/4 dev lo" in res.stderr
