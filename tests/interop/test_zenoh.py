"""`zenoh://` with the PyPI Zenoh Python API (eclipse-zenoh, the version of the Rust crate Nerve builds with): a plain
Zenoh subscriber reads Nerve's keys and decodes the payloads with Nerve's generated Python types, and a plain Zenoh
publisher's messages reach `nerve sub`, decoded by Nerve."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

import oracle

zenoh = pytest.importorskip("zenoh")

EXAMPLES = oracle.REPO / "examples" / "types"
LASER = {"utime": 7, "ranges": [1.5, 2.0], "rad0": 0.0, "radstep": 0.25}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def session(port: int):
    conf = zenoh.Config()
    conf.insert_json5("connect/endpoints", json.dumps([f"tcp/127.0.0.1:{port}"]))
    conf.insert_json5("scouting/multicast/enabled", "false")
    return zenoh.open(conf)


@pytest.fixture(scope="module")
def exlcm(nerve_bin, tmp_path_factory):
    """Nerve's generated Python for examples/types, importable as `exlcm`."""
    out = tmp_path_factory.mktemp("zenoh-py")
    files = sorted(str(p) for p in EXAMPLES.glob("*.lcm"))
    subprocess.run([str(nerve_bin), "gen", "-p", "--ppath", str(out), *files], check=True, capture_output=True)
    sys.path.insert(0, str(out))
    try:
        import exlcm  # noqa: PLC0415

        yield exlcm
    finally:
        sys.path.remove(str(out))


def test_python_zenoh_subscriber_decodes_nerve_messages(nerve_bin, exlcm):
    port, prefix = free_port(), f"py{os.getpid()}a"
    # The Nerve side listens; Python connects to it.
    listener = subprocess.Popen([str(nerve_bin), "sub", "NONE", "--url",
                                 f"zenoh://?scouting=off&listen=tcp/127.0.0.1:{port}&prefix={prefix}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(0.5)
        z = session(port)
        got = []
        sub = z.declare_subscriber(f"{prefix}/**", lambda s: got.append((str(s.key_expr), s.payload.to_bytes())))
        deadline = time.time() + 20
        while not got:
            assert time.time() < deadline, "nothing reached the Python subscriber"
            res = subprocess.run([str(nerve_bin), "pub", "EXLASER", "--url",
                                  f"zenoh://tcp/127.0.0.1:{port}?scouting=off&prefix={prefix}",
                                  "--types", str(EXAMPLES), "--type", "exlcm.laser_t", "--json", json.dumps(LASER)],
                                 capture_output=True, text=True, timeout=30)
            assert res.returncode == 0, res.stderr
            time.sleep(0.2)
        key, payload = got[0]
        assert key == f"{prefix}/EXLASER"
        msg = exlcm.laser_t.decode(payload)
        assert msg.utime == 7 and list(msg.ranges) == [1.5, 2.0] and msg.radstep == 0.25
        sub.undeclare()
        z.close()
    finally:
        listener.kill()
        listener.wait()


def test_python_zenoh_publisher_reaches_nerve_sub(nerve_bin, exlcm):
    port, prefix = free_port(), f"py{os.getpid()}b"
    sub = subprocess.Popen([str(nerve_bin), "sub", "EXLASER", "--json", "--count", "1", "--timeout-ms", "20000",
                            "--types", str(EXAMPLES), "--url",
                            f"zenoh://?scouting=off&listen=tcp/127.0.0.1:{port}&prefix={prefix}"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        z = session(port)
        msg = exlcm.laser_t()
        msg.utime, msg.nranges, msg.ranges, msg.rad0, msg.radstep = 9, 3, [1.0, 2.0, 3.0], 0.5, 0.125
        data = msg.encode()
        # A key under the prefix that no channel maps to: never handed to the subscription.
        z.put(f"{prefix}/%ZZ", b"junk")
        while sub.poll() is None:
            z.put(f"{prefix}/EXLASER", data)
            time.sleep(0.1)
        out, err = sub.communicate(timeout=10)
        assert sub.returncode == 0, err
        line = json.loads(out.splitlines()[0])
        assert line["channel"] == "EXLASER"
        assert line["data_hex"] == data.hex()
        z.close()
    finally:
        if sub.poll() is None:
            sub.kill()
            sub.wait()
