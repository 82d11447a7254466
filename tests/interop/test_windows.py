"""Windows builds under Wine: nerve-udpm's portable peer (crates/udpm/examples/udpm_peer.rs), cross-built by
scripts/build-windows, talks udpm over multicast on loopback (TTL 0) both ways with a Linux `nerve` and the real LCM.

Skipped when wine64 or the mingw toolchain is missing (scripts/setup installs both)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import oracle

WINE = Path("/usr/lib/wine/wine64")


def url(offset: int) -> str:
    return f"udpm://239.255.76.77:{47000 + (os.getpid() % 400) * 10 + offset}?ttl=0"


@pytest.fixture(scope="module")
def wine(tmp_path_factory):
    """(run, exe dir): run(args, timeout) starts udpm_peer.exe under Wine in a fresh prefix."""
    if not WINE.exists():
        pytest.skip("wine64 missing (/usr/lib/wine/wine64): apt-get install wine64, or run scripts/setup")
    if shutil.which("x86_64-w64-mingw32-gcc") is None:
        pytest.skip("mingw toolchain missing (x86_64-w64-mingw32-gcc): apt-get install gcc-mingw-w64-x86-64")
    out = tmp_path_factory.mktemp("windows")
    build = subprocess.run([str(oracle.REPO / "scripts" / "build-windows"), str(out)], capture_output=True, text=True,
                           timeout=900)
    assert build.returncode == 0, build.stderr[-4000:]
    # Wine only: the DLL that gives Rust's std the ProcessPrng Wine 8.0 lacks.
    shutil.copy(out / "wine" / "bcryptprimitives.dll", out / "bcryptprimitives.dll")
    env = dict(os.environ, WINEPREFIX=str(out / "prefix"), WINEDEBUG="-all", DISPLAY="")
    # The first run makes the prefix (seconds); do it once, outside any timed exchange.
    subprocess.run([str(WINE), "wineboot", "-i"], env=env, capture_output=True, timeout=120)

    def run(args, **kw):
        return subprocess.Popen([str(WINE), str(out / "udpm_peer.exe"), *args], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, **kw)

    return run


LCM_SUB = """
import sys, time, lcm
lc = lcm.LCM(sys.argv[1]); got = []
lc.subscribe(sys.argv[2], lambda c, d: got.append(d.decode()))
print("ready", flush=True)
end = time.time() + 20
while time.time() < end and len(got) < int(sys.argv[3]):
    lc.handle_timeout(100)
print("\\n".join(got))
sys.exit(0 if len(got) >= int(sys.argv[3]) else 1)
"""

LCM_PUB = """
import sys, time, lcm
lc = lcm.LCM(sys.argv[1])
for i in range(int(sys.argv[3])):
    lc.publish(sys.argv[2], b"from lcm %d" % i)
    time.sleep(0.05)
"""


def wait_ready(proc):
    line = proc.stdout.readline()
    assert line.strip() == "ready", (line, proc.stderr.read() if proc.poll() is not None else "")


def test_windows_pub_heard_by_linux_nerve_and_real_lcm(wine, nerve_bin, venv_python):
    u = url(0)
    nerve = subprocess.Popen([str(nerve_bin), "sub", "WINPUB", "--url", u, "--count", "3", "--timeout-ms", "20000",
                              "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lcm = subprocess.Popen([str(venv_python), "-c", LCM_SUB, u, "WINPUB", "3"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    wait_ready(lcm)
    time.sleep(0.5)
    # Keeps publishing past the three each listener waits for, so a listener late to join still hears three.
    pub = wine(["pub", u, "WINPUB", "40"])
    out, err = lcm.communicate(timeout=60)
    assert lcm.returncode == 0, err
    got = out.splitlines()
    assert len(got) >= 3 and all(g.startswith("hello ") for g in got), out
    out, err = nerve.communicate(timeout=60)
    assert nerve.returncode == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == 3 and all(m["channel"] == "WINPUB" for m in lines)
    assert all(bytes.fromhex(m["data_hex"]).startswith(b"hello ") for m in lines)
    pub.communicate(timeout=60)
    assert pub.returncode == 0


def test_linux_nerve_and_real_lcm_heard_by_windows_sub(wine, nerve_bin, venv_python):
    u = url(1)
    sub = wine(["sub", u, "TOWIN", "6", "30"])
    wait_ready(sub)
    time.sleep(0.3)
    lcm = subprocess.run([str(venv_python), "-c", LCM_PUB, u, "TOWIN", "3"], capture_output=True, text=True,
                         timeout=60)
    assert lcm.returncode == 0, lcm.stderr
    for _ in range(3):
        res = subprocess.run([str(nerve_bin), "pub", "TOWIN", "--url", u, "--hex", "6e 65 72 76 65"],
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
    out, err = sub.communicate(timeout=60)
    assert sub.returncode == 0, (out, err)
    lines = out.splitlines()
    assert [line for line in lines if line.startswith("TOWIN from lcm ")] == [f"TOWIN from lcm {i}" for i in range(3)]
    assert lines.count("TOWIN nerve") == 3
