"""Windows builds under Wine, cross-built by scripts/build-windows: nerve-udpm's portable peer
(crates/udpm/examples/udpm_peer.rs) and `nerve.exe` talk udpm over multicast on loopback (TTL 0) both ways with a
Linux `nerve` and the real LCM; `nerve.exe gen` writes what Linux `nerve gen` does; a log `nerve.exe log` writes is
read on Linux, and a Linux-written log is exported and played by `nerve.exe` as Linux does; `shm://` and `nerve chan`
are refused with a clear error. One Wine prefix and one persistent wineserver serve every test (Wine starts slowly).

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
WINESERVER = Path("/usr/lib/wine/wineserver")


def url(offset: int) -> str:
    return f"udpm://239.255.76.77:{47000 + (os.getpid() % 400) * 10 + offset}?ttl=0"


class Wine:
    """Runs the cross-built programs in `dir` under Wine, in one prefix."""

    def __init__(self, exe_dir: Path, env: dict):
        self.dir, self.env = exe_dir, env

    def start(self, exe: str, args, **kw) -> subprocess.Popen:
        return subprocess.Popen([str(WINE), str(self.dir / exe), *map(str, args)], env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)

    def peer(self, args) -> subprocess.Popen:
        return self.start("udpm_peer.exe", args)

    def nerve(self, args, timeout=60, **kw) -> subprocess.CompletedProcess:
        return subprocess.run([str(WINE), str(self.dir / "nerve.exe"), *map(str, args)], env=self.env,
                              capture_output=True, timeout=timeout, **kw)


@pytest.fixture(scope="module")
def wine(tmp_path_factory):
    """A Wine with udpm_peer.exe and nerve.exe built, in a fresh prefix whose wineserver stays up for the module."""
    if not WINE.exists():
        pytest.skip("wine64 missing (/usr/lib/wine/wine64): apt-get install wine64, or run scripts/setup")
    if shutil.which("x86_64-w64-mingw32-gcc") is None:
        pytest.skip("mingw toolchain missing (x86_64-w64-mingw32-gcc): apt-get install gcc-mingw-w64-x86-64")
    out = tmp_path_factory.mktemp("windows")
    # The dev profile: after cargo test's build only the Windows half compiles (about a minute, where a release
    # build takes over ten); what runs under Wine is checked for behaviour, and the echo figure is only a smoke.
    build = subprocess.run([str(oracle.REPO / "scripts" / "build-windows"), str(out)], capture_output=True, text=True,
                           timeout=1800, env=dict(os.environ, NERVE_WINDOWS_PROFILE="dev"))
    assert build.returncode == 0, build.stderr[-4000:]
    # Wine only: the DLL that gives Rust's std the ProcessPrng Wine 8.0 lacks.
    shutil.copy(out / "wine" / "bcryptprimitives.dll", out / "bcryptprimitives.dll")
    env = dict(os.environ, WINEPREFIX=str(out / "prefix"), WINEDEBUG="-all", DISPLAY="")
    # The first run makes the prefix (seconds); do it once, outside any timed exchange. A persistent wineserver
    # spares every later program the server's start.
    # (It forks into the background; its output goes nowhere, so no pipe waits for it.)
    subprocess.run([str(WINESERVER), "-p"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    subprocess.run([str(WINE), "wineboot", "-i"], env=env, capture_output=True, timeout=120)
    yield Wine(out, env)
    subprocess.run([str(WINESERVER), "-k"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)


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
    pub = wine.peer(["pub", u, "WINPUB", "40"])
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
    sub = wine.peer(["sub", u, "TOWIN", "6", "30"])
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


def test_windows_nerve_gen_writes_what_linux_nerve_gen_writes(wine, nerve_bin, tmp_path):
    types = sorted(p.name for p in (oracle.REPO / "examples" / "types").glob("*.lcm"))
    shutil.copytree(oracle.REPO / "examples" / "types", tmp_path / "types")
    inputs = [f"types/{t}" for t in types]
    for side in ("linux", "windows"):
        args = ["gen", "-c", "--c-cpath", f"{side}/c", "--c-hpath", f"{side}/c", "-p", "--ppath", f"{side}/py",
                "--rust", "--rust-path", f"{side}/rs", *inputs]
        (tmp_path / side).mkdir()
        if side == "linux":
            res = subprocess.run([str(nerve_bin), *args], cwd=tmp_path, capture_output=True, timeout=60)
        else:
            res = wine.nerve(args, cwd=tmp_path)
        assert res.returncode == 0, res.stderr
    linux = sorted(p.relative_to(tmp_path / "linux") for p in (tmp_path / "linux").rglob("*") if p.is_file())
    windows = sorted(p.relative_to(tmp_path / "windows") for p in (tmp_path / "windows").rglob("*") if p.is_file())
    assert linux and linux == windows
    for f in linux:
        assert (tmp_path / "windows" / f).read_bytes() == (tmp_path / "linux" / f).read_bytes(), f


def test_windows_nerve_pub_heard_by_linux_nerve_and_real_lcm(wine, nerve_bin, venv_python):
    u = url(2)
    nerve = subprocess.Popen([str(nerve_bin), "sub", "WINNERVE", "--url", u, "--count", "3", "--timeout-ms", "30000",
                              "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lcm = subprocess.Popen([str(venv_python), "-c", LCM_SUB, u, "WINNERVE", "3"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    wait_ready(lcm)
    time.sleep(0.5)
    # 40 at 20 a second: a listener late to join still hears three.
    res = wine.nerve(["pub", "WINNERVE", "--url", u, "--hex", "6e 65 72 76 65 2e 65 78 65", "--count", "40",
                      "--rate", "20"])
    assert res.returncode == 0, res.stderr
    out, err = lcm.communicate(timeout=60)
    assert lcm.returncode == 0, err
    assert out.splitlines()[:3] == ["nerve.exe"] * 3
    out, err = nerve.communicate(timeout=60)
    assert nerve.returncode == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [(m["channel"], bytes.fromhex(m["data_hex"])) for m in lines] == [("WINNERVE", b"nerve.exe")] * 3


def test_linux_nerve_and_real_lcm_heard_by_windows_nerve_sub(wine, nerve_bin, venv_python):
    u = url(3)
    sub = wine.start("nerve.exe", ["sub", "TOWINNERVE_.*", "--url", u, "--count", "12", "--timeout-ms", "40000",
                                   "--json"])
    # Both keep publishing, 20 a second, until the Windows subscriber (whose start under Wine takes a while) has
    # heard twelve.
    lcm = subprocess.Popen([str(venv_python), "-c", LCM_PUB, u, "TOWINNERVE_LCM", "800"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    nerve = subprocess.Popen([str(nerve_bin), "pub", "TOWINNERVE_NERVE", "--url", u, "--hex", "6c 69 6e 75 78",
                              "--count", "800", "--rate", "20"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = sub.communicate(timeout=60)
    finally:
        lcm.kill()
        nerve.kill()
        lcm.wait()
        nerve.wait()
    assert sub.returncode == 0, (out, err)
    got = [(m["channel"], bytes.fromhex(m["data_hex"])) for m in map(json.loads, out.splitlines())]
    assert len(got) == 12
    assert ("TOWINNERVE_NERVE", b"linux") in got, got
    from_lcm = [d for c, d in got if c == "TOWINNERVE_LCM"]
    assert from_lcm and all(d.startswith(b"from lcm ") for d in from_lcm), got


TYPES = oracle.REPO / "examples" / "types"
# exlcm.pose_t (examples/types/pose_t.lcm): its fingerprint, then utime and 16 doubles, as LCM encodes it.
POSE = """
import struct
def pose(utime):
    return struct.pack(">Qq16d", 0x2e16efb052b0105e, utime, *[0.5] * 16)
"""
LCM_PUB_POSES = POSE + """
import sys, time, lcm
lc = lcm.LCM(sys.argv[1])
for i in range(int(sys.argv[3])):
    lc.publish(sys.argv[2], pose(i))
    time.sleep(0.05)
"""
LCM_WRITE_LOG = POSE + """
import sys, lcm
log = lcm.EventLog(sys.argv[1], "w", overwrite=True)
for i in range(10):
    log.write_event(1_700_000_000_000_000 + i * 1000, "PLAYED_%d" % (i % 2), pose(i))
log.close()
"""


def export(run, log: Path, to: str, out: Path):
    """`nerve export LOG --to TO -o OUT --types examples/types` by `run` (Linux or Windows), which must succeed."""
    res = run(["export", str(log), "--to", to, "-o", str(out), "--types", str(TYPES), "--quiet"])
    assert res.returncode == 0, res.stderr
    return out.read_bytes()


def test_windows_nerve_log_is_read_on_linux(wine, nerve_bin, venv_python, tmp_path):
    u = url(4)
    log = tmp_path / "windows.lcmlog"
    logger = wine.start("nerve.exe", ["log", str(log), "--url", u, "--duration", "8", "--quiet"])
    # The real LCM publishes poses of utime 0.., 20 a second, over the logger's start and for its whole run.
    lcm = subprocess.run([str(venv_python), "-c", LCM_PUB_POSES, u, "TOLOG", "150"], capture_output=True, timeout=60)
    assert lcm.returncode == 0, lcm.stderr
    out, err = logger.communicate(timeout=60)
    assert logger.returncode == 0, (out, err)
    linux = lambda args: subprocess.run([str(nerve_bin), *args], capture_output=True, timeout=60)  # noqa: E731
    lines = [json.loads(line) for line in export(linux, log, "jsonl", tmp_path / "linux.jsonl").splitlines()]
    numbers = [m["value"]["utime"] for m in lines]
    assert len(numbers) >= 20 and all(m["channel"] == "TOLOG" for m in lines), lines
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), "a gap: messages lost or reordered"
    # What Linux reads of the log is what Windows reads of it, byte for byte.
    windows = lambda args: wine.nerve(args)  # noqa: E731
    assert export(windows, log, "jsonl", tmp_path / "windows.jsonl") == (tmp_path / "linux.jsonl").read_bytes()


def test_linux_log_exported_and_played_by_windows_nerve(wine, nerve_bin, venv_python, tmp_path):
    log = tmp_path / "linux.lcmlog"
    write = subprocess.run([str(venv_python), "-c", LCM_WRITE_LOG, str(log)], capture_output=True, timeout=60)
    assert write.returncode == 0, write.stderr
    linux = lambda args: subprocess.run([str(nerve_bin), *args], capture_output=True, timeout=60)  # noqa: E731
    windows = lambda args: wine.nerve(args)  # noqa: E731
    for to in ("jsonl", "lcm"):
        assert export(windows, log, to, tmp_path / f"w.{to}") == export(linux, log, to, tmp_path / f"l.{to}"), to
    u = url(5)
    sub = subprocess.Popen([str(nerve_bin), "sub", "PLAYED_.*", "--url", u, "--count", "10", "--timeout-ms",
                            "30000", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    play = wine.nerve(["play", str(log), "--url", u, "--speed", "0", "--quiet"])
    assert play.returncode == 0, play.stderr
    out, err = sub.communicate(timeout=60)
    assert sub.returncode == 0, err
    got = [(m["channel"], bytes.fromhex(m["data_hex"])) for m in map(json.loads, out.splitlines())]
    assert [c for c, _ in got] == [f"PLAYED_{i % 2}" for i in range(10)]
    assert [int.from_bytes(d[8:16], "big", signed=True) for _, d in got] == list(range(10))


def test_windows_nerve_refuses_shm_with_a_clear_error(wine):
    sub = wine.nerve(["sub", "X", "--url", "shm://", "--count", "1", "--timeout-ms", "100"], text=True)
    assert sub.returncode == 1, (sub.stdout, sub.stderr)
    assert "shm:// channels are only available on Linux" in sub.stderr and "udpm" in sub.stderr, sub.stderr
    chan = wine.nerve(["chan", "ls"], text=True)
    assert chan.returncode == 1 and "only available on Linux" in chan.stderr, chan.stderr



def test_echo_smoke_windows_nerve_client_against_real_lcm_source(wine, venv_python):
    """The echo suite's Nerve client (crates/bus/examples/echo_client.rs) under Wine, echoing for the real LCM's
    C source (bench/csrc/lcm_echo.c, as nerve-bench's build made it) on Linux: a smoke figure, printed, no bar (Wine
    is not Windows). Asserts only that echoes came back."""
    built = sorted(oracle.REPO.glob("target/*/build/nerve-bench-*/out/lcm_echo"), key=lambda p: p.stat().st_mtime)
    if not built:
        pytest.skip("no lcm_echo: nerve-bench's build makes it (cargo build -p nerve-bench)")
    u = url(6)
    client = wine.start("echo_client.exe", [u, "ECHO_REQ", "ECHO_REP_0", "30000"])
    wait_ready(client)
    time.sleep(0.3)
    # 1 MB/s of 800-byte messages for 2 s, then up to 1 s for the last echoes.
    source = subprocess.run([str(built[-1]), "source", u, "ECHO_REQ", "ECHO_REP_", "1", "1000000", "2000", "1000"],
                            capture_output=True, text=True, timeout=60)
    assert source.returncode == 0, source.stderr
    client.communicate(timeout=30)
    lines = source.stdout.split("\n")
    sent = int(next(line for line in lines if line.startswith("sent ")).split()[1])
    echoed = int(next(line for line in lines if line.startswith("client 0 ")).split()[2])
    rtt = sorted(int(line.split()[1]) for line in lines if line.startswith("rtt "))
    assert echoed > 0 and rtt, source.stdout[-2000:]
    print(f"\necho smoke (Wine nerve client, a dev build; Linux LCM C source, 1 MB/s, 800 B): sent {sent}, "
          f"echoed {echoed} "
          f"({100 * (sent - echoed) / sent:.1f}% lost), RTT p50 {rtt[len(rtt) // 2] / 1000:.0f} us, "
          f"p99 {rtt[len(rtt) * 99 // 100] / 1000:.0f} us")
