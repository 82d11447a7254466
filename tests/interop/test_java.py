"""Nerve's lcm.jar (bindings/java): LCM's Java API over Nerve's bus, from Java and from MATLAB's language (Octave).

One program written for LCM's jar (bindings/java/interop/LcmPeer.java, with lcm-gen's Java classes of
examples/types) is compiled once, against LCM's own jar, and the same class files run on both jars:

- on each jar alone: it receives its own laser_t / path_t (an LCMSubscriber and a MessageAggregator), each jar reads
  the event log the other's lcm.logging.Log wrote (and LCM's C reader, the `lcm` module, reads Nerve's), and every
  misuse is an exception on Nerve's jar (null channel, closed LCM, garbage and truncated bytes to decode, a bad
  regex or URL), never a JVM crash;
- Nerve's jar and LCM's jar, in two JVMs, exchange messages both ways over udpm (multicast on loopback, TTL 0);
- Nerve's jar and a Python Nerve process (the `nerve` package, Rust underneath) over shm://;
- Octave: a .m script (tests/interop/octave/lcm_peer.m) that javaaddpath's Nerve's jar and the lcm-gen classes,
  publishes and subscribes (MessageAggregator, as MATLAB users of LCM do) on inproc://, and talks to Python Nerve
  processes over shm:// and udpm:// at once.

The jar and its native library are built once per session by scripts/install-java (--debug) into build/java.
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import oracle

REPO = oracle.REPO
PEER_SOURCE = REPO / "bindings" / "java" / "interop" / "LcmPeer.java"
OCTAVE_SCRIPT = REPO / "tests" / "interop" / "octave" / "lcm_peer.m"
TYPES = sorted((REPO / "examples" / "types").glob("*.lcm"))
COUNT = 5

pytestmark = pytest.mark.skipif(shutil.which("java") is None or shutil.which("mvn") is None,
                                reason="needs a JDK and Maven")


def lcm_jar() -> Path:
    """LCM 1.5.3's own lcm.jar, from the wheel in .venv."""
    found = sorted(oracle.VENV.glob("lib/python*/site-packages/share/java/lcm.jar"))
    if not found:
        pytest.fail("LCM's lcm.jar is not in .venv (run scripts/setup)")
    return found[0]


def udpm_url(offset: int) -> str:
    """A group and port of this run's own (61000-64999, as the other udpm suites, on a group none of them uses)."""
    return f"udpm://239.255.76.83:{61000 + (os.getpid() % 390) * 10 + offset}?ttl=0"


@pytest.fixture(scope="session")
def nerve_jar() -> Path:
    """Nerve's lcm.jar, installed by scripts/install-java with its native library beside it (PREFIX/lib).

    NERVE_JAVA_PREFIX=PREFIX tests an install made already (e.g. a release one) instead."""
    if os.environ.get("NERVE_JAVA_PREFIX"):
        jar = Path(os.environ["NERVE_JAVA_PREFIX"]) / "share" / "java" / "lcm.jar"
        assert jar.is_file(), jar
        return jar
    prefix = REPO / "build" / "java"
    r = subprocess.run([str(REPO / "scripts" / "install-java"), str(prefix), "--debug"], capture_output=True,
                       text=True, timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-6000:]
    jar = prefix / "share" / "java" / "lcm.jar"
    assert jar.is_file() and (prefix / "lib" / "libnerve_java.so").is_file()
    return jar


@pytest.fixture(scope="session")
def classes(tmp_path_factory) -> Path:
    """lcm-gen's Java classes of examples/types and LcmPeer, compiled against LCM's jar (Java 8, as LCM's)."""
    out = tmp_path_factory.mktemp("java")
    gen = out / "gen"
    subprocess.run([str(oracle.LCM_GEN), "-j", "--jpath", str(gen), *map(str, TYPES)], check=True,
                   capture_output=True)
    sources = sorted(map(str, gen.rglob("*.java"))) + [str(PEER_SOURCE)]
    classes = out / "classes"
    r = subprocess.run(["javac", "--release", "8", "-nowarn", "-d", str(classes), "-cp", str(lcm_jar()), *sources],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return classes


@pytest.fixture(scope="session")
def python_types(tmp_path_factory) -> Path:
    """lcm-gen's Python classes of examples/types (for the Python peer)."""
    out = tmp_path_factory.mktemp("pytypes")
    subprocess.run([str(oracle.LCM_GEN), "-p", "--ppath", str(out), *map(str, TYPES)], check=True,
                   capture_output=True)
    return out


def java_env(url: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NERVE_URL", "JAVA_TOOL_OPTIONS")}
    env["LCM_DEFAULT_URL"] = url
    return env


def java(jar: Path, classes: Path, *args: str) -> list[str]:
    return ["java", "-Xss1m", "-cp", f"{jar}{os.pathsep}{classes}", "LcmPeer", *args]


# A Python Nerve process speaking LcmPeer's peer protocol: subscribe to IN_*, READY, wait for a line on stdin,
# publish COUNT laser_t and path_t on OUT_*, wait for COUNT of each from IN (decoded by lcm-gen's Python, checked).
PY_PEER = r'''
import sys, time
sys.path.insert(0, sys.argv[1])
import nerve
from exlcm import laser_t, path_t, waypoint_t
url, out, inp, count = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])

def laser(i):
    m = laser_t(); m.utime = 1000000 + i; m.nranges = i % 5 + 1
    m.ranges = [k * 0.5 + i for k in range(m.nranges)]; m.rad0 = -1.5; m.radstep = 0.25 * i
    return m

def path(i):
    m = path_t(); m.timestamp = 2000000 + i; m.num_waypoints = i % 3; m.waypoints = []
    for k in range(m.num_waypoints):
        w = waypoint_t(); w.id = "wp%d_%d" % (i, k); w.position = [float(k), -k - 0.5]; m.waypoints.append(w)
    return m

def same(a, b):
    return a.encode() == b.encode()

got, bad = set(), []
def on_msg(channel, data):
    if channel.endswith("_LASER"):
        m = laser_t.decode(data); i = m.utime - 1000000; ok = same(m, laser(i)); what = "laser %d" % i
    elif channel.endswith("_PATH"):
        m = path_t.decode(data); i = m.timestamp - 2000000; ok = same(m, path(i)); what = "path %d" % i
    else:
        return
    (got.add(what) if ok else bad.append(what))
    print(("GOT " if ok else "BAD ") + what + " on " + channel, flush=True)

bus = nerve.Bus(url)
bus.subscribe(inp + "_.*", on_msg, capacity=0)
print("READY", flush=True)
sys.stdin.readline()
for i in range(count):
    bus.publish(out + "_LASER", laser(i).encode())
    bus.publish(out + "_PATH", path(i).encode())
    time.sleep(0.002)
end = time.monotonic() + 20
while len(got) < 2 * count and time.monotonic() < end:
    bus.handle_timeout(100)
ok = len(got) == 2 * count and not bad
print("PEER %s got %d bad %d" % ("OK" if ok else "FAILED", len(got), len(bad)), flush=True)
sys.exit(0 if ok else 1)
'''


def python_peer(types: Path, url: str, out: str, inp: str) -> list[str]:
    return [str(oracle.VENV_PYTHON), "-c", PY_PEER, str(types), url, out, inp, str(COUNT)]


def run_peers(peers: list[tuple[list[str], dict]], timeout: float = 60) -> list[tuple[int, str, str]]:
    """Starts every peer, waits until each has said READY, tells them all to go, and returns each one's exit
    status, output and errors. A peer that dies or is silent for `timeout` fails the test (all are killed)."""
    procs = [subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for cmd, env in peers]
    lines: list[queue.Queue] = []
    outs: list[list[str]] = [[] for _ in procs]

    def pump(i: int, p: subprocess.Popen) -> None:
        for line in p.stdout:
            outs[i].append(line)
            lines[i].put(line)
        lines[i].put(None)

    threads = []
    for i, p in enumerate(procs):
        lines.append(queue.Queue())
        threads.append(threading.Thread(target=pump, args=(i, p), daemon=True))
        threads[-1].start()
    try:
        deadline = time.monotonic() + timeout
        for i, p in enumerate(procs):
            while True:
                line = lines[i].get(timeout=max(0.1, deadline - time.monotonic()))
                if line is None:
                    pytest.fail(f"peer {peers[i][0][:3]} ended before READY:\n{''.join(outs[i])}\n{p.stderr.read()}")
                if line.strip() == "READY":
                    break
        for p in procs:
            # Closed after the line: Octave's fgetl(stdin) on a pipe returns only at the end of its input.
            p.stdin.write("go\n")
            p.stdin.close()
        results = []
        for i, p in enumerate(procs):
            try:
                rc = p.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                pytest.fail("peers still running after %ds:\n%s" % (timeout, "\n".join(
                    f"--- {cmd[:3]}\n{''.join(out)}{q.stderr.read()[-3000:]}"
                    for (cmd, _), out, q in zip(peers, outs, procs))))
            threads[i].join(5)
            results.append((rc, "".join(outs[i]), p.stderr.read()))
        return results
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def got(out: str) -> set[str]:
    return {line.split(" on ")[0][4:] for line in out.splitlines() if line.startswith("GOT ")}


EVERY = {f"{kind} {i}" for kind in ("laser", "path") for i in range(COUNT)}


def misuse(out: str) -> dict[str, str]:
    return dict(line.split()[1:3] for line in out.splitlines() if line.startswith("MISUSE "))


def test_one_program_runs_on_lcms_jar_and_on_nerves(nerve_jar, classes, tmp_path):
    """The same class files (compiled against LCM's jar) on LCM's jar, then on Nerve's: each receives its own
    messages through an LCMSubscriber and a MessageAggregator, reads the log the other wrote with lcm.logging.Log,
    and meets each misuse with an exception (Nerve's jar) or LCM's own answer (LCM's jar)."""
    url = udpm_url(1)
    lcm_log, nerve_log = tmp_path / "lcm.lcmlog", tmp_path / "nerve.lcmlog"
    on_lcm = subprocess.run(java(lcm_jar(), classes, "selftest", "-", str(lcm_log)), env=java_env(url),
                            capture_output=True, text=True, timeout=60)
    assert on_lcm.returncode == 0 and "SELFTEST OK" in on_lcm.stdout, on_lcm.stdout + on_lcm.stderr
    on_nerve = subprocess.run(java(nerve_jar, classes, "selftest", str(lcm_log), str(nerve_log)), env=java_env(url),
                              capture_output=True, text=True, timeout=60)
    assert on_nerve.returncode == 0 and "SELFTEST OK" in on_nerve.stdout, on_nerve.stdout + on_nerve.stderr
    assert got(on_nerve.stdout) == EVERY and "AGGREGATED 5" in on_nerve.stdout
    assert "LOGREAD 10" in on_nerve.stdout  # Nerve's Log read LCM's jar's log, event by event

    # LCM's C event-log reader (the `lcm` module) reads the log Nerve's lcm.logging.Log wrote.
    import lcm

    events = [(e.eventnum, e.timestamp, e.channel) for e in lcm.EventLog(str(nerve_log), "r")]
    assert events == [(n, 5000000 + n, "LOG_LASER" if n % 2 == 0 else "LOG_PATH") for n in range(10)]
    assert nerve_log.read_bytes() == lcm_log.read_bytes()  # byte for byte what LCM's jar wrote

    nerve, theirs = misuse(on_nerve.stdout), misuse(on_lcm.stdout)
    assert nerve == {
        "publish_null_channel": "java.lang.NullPointerException",
        "publish_bytes_null_channel": "java.lang.NullPointerException",
        "publish_bytes_bad_range": "java.lang.IndexOutOfBoundsException",
        "subscribe_bad_regex": "java.util.regex.PatternSyntaxException",
        "decode_garbage": "java.io.IOException",
        "decode_truncated": "java.io.EOFException",
        "decode_empty": "java.io.EOFException",
        "stringz_unterminated": "java.io.EOFException",
        "unknown_url": "java.io.IOException",
        "closed_publish": "java.lang.IllegalStateException",
        "closed_publish_bytes": "java.lang.IllegalStateException",
        "closed_subscribe": "java.lang.IllegalStateException",
        "closed_unsubscribe": "java.lang.IllegalStateException",
        "closed_close": "java.lang.IllegalStateException",
        "log_garbage": "java.io.EOFException",
        **{f"native_garbage_{f}": "java.lang.IllegalStateException"
           for f in ("publish", "subscribe", "unsubscribe", "handle", "close")},
        "native_bad_url": "java.io.IOException",
        # A live bus's handle with null or out-of-range arguments.
        "native_null_data": "java.lang.NullPointerException",
        "native_null_channel": "java.lang.NullPointerException",
        "native_null_regex": "java.lang.NullPointerException",
        "native_bad_range": "java.lang.IndexOutOfBoundsException",
        "native_negative_length": "java.lang.IndexOutOfBoundsException",
        "native_negative_timeout": "java.lang.IllegalArgumentException",
        "native_close_live": "none",
    }, on_nerve.stdout
    # Where LCM's jar throws, it throws the same; where it only prints (publish errors, an unknown URL) or fails
    # out of bounds (an unterminated string), Nerve's throws instead. (LCM's jar has no native class.)
    differ = {k for k in nerve if nerve[k] != theirs.get(k) and not k.startswith("native_")}
    assert differ == {"publish_null_channel", "publish_bytes_null_channel", "publish_bytes_bad_range",
                      "unknown_url", "stringz_unterminated"}, theirs


def test_nerves_jar_and_lcms_jar_talk_over_udpm(nerve_jar, classes):
    """Two JVMs on one multicast group: LcmPeer on Nerve's jar and on LCM's jar, each publishing laser_t and path_t
    and receiving the other's."""
    url = udpm_url(2)
    (rc_n, out_n, err_n), (rc_l, out_l, err_l) = run_peers([
        (java(nerve_jar, classes, "peer", "NV", "LC", str(COUNT)), java_env(url)),
        (java(lcm_jar(), classes, "peer", "LC", "NV", str(COUNT)), java_env(url)),
    ])
    assert rc_n == 0 and got(out_n) == EVERY, out_n + err_n  # Nerve's jar received LCM's jar's
    assert rc_l == 0 and got(out_l) == EVERY, out_l + err_l  # and LCM's jar received Nerve's


def test_nerves_jar_and_python_nerve_over_shm(nerve_jar, classes, python_types, tmp_path):
    """LcmPeer on Nerve's jar and a Python Nerve process, both ways over shm://."""
    url = f"shm://?dir={tmp_path}"
    (rc_j, out_j, err_j), (rc_p, out_p, err_p) = run_peers([
        (java(nerve_jar, classes, "peer", "JV", "PY", str(COUNT)), java_env(url)),
        (python_peer(python_types, url, "PY", "JV"), dict(os.environ)),
    ])
    assert rc_j == 0 and got(out_j) == EVERY, out_j + err_j
    assert rc_p == 0 and got(out_p) == EVERY, out_p + err_p


def octave_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NERVE_URL"}
    # Octave starts the JVM that JAVA_HOME names (the JDK's; Octave's own default may be another).
    javac = shutil.which("javac")
    if javac and "JAVA_HOME" not in env:
        env["JAVA_HOME"] = str(Path(os.path.realpath(javac)).parent.parent)
    return env


@pytest.mark.skipif(shutil.which("octave-cli") is None, reason="needs GNU Octave (scripts/setup installs it)")
def test_octave_publishes_and_subscribes_through_nerves_jar(nerve_jar, classes, python_types, tmp_path):
    """MATLAB's language through Nerve's jar: the .m script loads the jar and lcm-gen's classes with javaaddpath,
    round-trips a laser_t on inproc://, and exchanges laser_t and path_t with a Python Nerve process on shm:// and
    another on udpm://, at once."""
    shm, udpm = f"shm://?dir={tmp_path}", udpm_url(3)
    octave = ["octave-cli", "--norc", "--no-history", "--no-window-system", str(OCTAVE_SCRIPT),
              str(nerve_jar), str(classes), shm, udpm, str(COUNT)]
    (rc_o, out_o, err_o), (rc_s, out_s, err_s), (rc_u, out_u, err_u) = run_peers([
        (octave, octave_env()),
        (python_peer(python_types, shm, "PY", "OC"), dict(os.environ)),
        (python_peer(python_types, udpm, "PY", "OC"), dict(os.environ)),
    ])
    assert rc_o == 0 and "OCTAVE OK" in out_o, out_o + err_o
    assert "INPROC OK" in out_o, out_o
    for scheme in ("shm", "udpm"):
        assert {line.split(" on ")[0][4 + len(scheme) + 1:] for line in out_o.splitlines()
                if line.startswith(f"GOT {scheme} ")} == EVERY, out_o
    assert rc_s == 0 and got(out_s) == EVERY, out_s + err_s
    assert rc_u == 0 and got(out_u) == EVERY, out_u + err_u
