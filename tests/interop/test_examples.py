"""examples/pubsub: the publisher and subscriber of laser_t in Rust, Python, C and C++ are built as a user would
(cargo; `nerve gen -p`; CMake against a scripts/install-c install), and each subscriber receives every scan of the
publisher of its own language, and of other languages, over udpm:// (TTL 0) and shm:// (a temporary directory), with
the right field values."""

from __future__ import annotations

import os
import re
import select
import subprocess
import time
from pathlib import Path

import pytest

import oracle

EXAMPLES = oracle.REPO / "examples" / "pubsub"
COUNT = 6
LINE = re.compile(r"laser_t utime=(\d+) nranges=5 ranges=\[([0-9. ]+)\] rad0=-1\.5708 radstep=0\.0175")


@pytest.fixture(scope="module")
def programs(c_prefix, debug_build, nerve_bin, venv_python, tmp_path_factory) -> dict:
    """lang -> (publisher argv, subscriber argv, extra environment)."""
    root = tmp_path_factory.mktemp("examples")
    progs = {}
    rust = debug_build / "nerve-example-pubsub"
    progs["rust"] = ([str(rust), "pub"], [str(rust), "sub"], {})
    gen = root / "python"
    subprocess.run([str(nerve_bin), "gen", "-p", "--ppath", str(gen), *map(str, (oracle.REPO / "examples" /
                    "types").glob("*.lcm"))], check=True, capture_output=True)
    py = [str(venv_python), "-u"]
    progs["python"] = ([*py, str(EXAMPLES / "python" / "publisher.py")],
                       [*py, str(EXAMPLES / "python" / "subscriber.py")], {"PYTHONPATH": str(gen)})
    for lang in ("c", "cpp"):
        build = root / lang
        for cmd in (["cmake", "-S", str(EXAMPLES / lang), "-B", str(build), f"-DCMAKE_PREFIX_PATH={c_prefix}",
                     "-DCMAKE_C_FLAGS=-Wall -Wextra -Werror", "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Werror"],
                    ["cmake", "--build", str(build)]):
            p = subprocess.run(cmd, capture_output=True, text=True)
            assert p.returncode == 0, f"{' '.join(cmd)}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
        progs[lang] = ([str(build / "publisher")], [str(build / "subscriber")], {})
    return progs


def _url(transport: str, tmp_path: Path, offset: int) -> str:
    if transport == "shm":
        return f"shm://?dir={tmp_path}"
    return f"udpm://239.255.76.81:{53000 + (os.getpid() % 400) * 16 + offset}?ttl=0"


def _exchange(programs: dict, pub: str, sub: str, url: str) -> None:
    pub_argv, _, pub_env = programs[pub]
    _, sub_argv, sub_env = programs[sub]
    opts = ["--url", url, "--channel", "EXSCAN", "--count", str(COUNT)]
    start_us = time.time_ns() // 1000
    listener = subprocess.Popen([*sub_argv, *opts, "--timeout", "15"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=dict(os.environ, **sub_env))
    try:
        # The subscriber says it is waiting once it has subscribed (udpm:// and shm:// deliver what comes after).
        ready, _, _ = select.select([listener.stderr], [], [], 30)
        assert ready, "the subscriber did not start within 30 s"
        assert listener.stderr.readline().startswith(f"waiting for {COUNT} laser_t on EXSCAN"), listener.stderr.read()
        p = subprocess.run([*pub_argv, *opts, "--rate", "50"], capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, **pub_env))
        assert p.returncode == 0, p.stderr[-3000:]
        assert p.stdout.splitlines() == [f"published scan {i} on EXSCAN" for i in range(COUNT)]
        out, err = listener.communicate(timeout=30)
    finally:
        if listener.poll() is None:
            listener.kill()
            listener.wait()
    assert listener.returncode == 0, out + err[-3000:]
    lines = out.splitlines()
    assert len(lines) == COUNT, out
    utimes = []
    for i, line in enumerate(lines):
        m = LINE.fullmatch(line)
        assert m, line
        utimes.append(int(m.group(1)))
        assert m.group(2) == " ".join(f"{1 + i + 0.25 * b:.2f}" for b in range(5)), line
    assert start_us <= utimes[0] and utimes == sorted(set(utimes)) and utimes[-1] <= time.time_ns() // 1000, utimes


LANGS = ["rust", "python", "c", "cpp"]
PAIRS = [(lang, lang) for lang in LANGS] + [("c", "python"), ("python", "cpp"), ("cpp", "rust"), ("rust", "c")]


@pytest.mark.parametrize("transport", ["udpm", "shm"])
@pytest.mark.parametrize("pub,sub", PAIRS, ids=[f"{p}-to-{s}" for p, s in PAIRS])
def test_subscriber_receives_every_scan(programs, tmp_path, pub, sub, transport):
    _exchange(programs, pub, sub, _url(transport, tmp_path, PAIRS.index((pub, sub))))


def test_subscriber_exits_non_zero_when_nothing_arrives(programs, tmp_path):
    for lang in LANGS:
        _, sub_argv, env = programs[lang]
        p = subprocess.run([*sub_argv, "--url", f"shm://?dir={tmp_path}", "--count", "1", "--timeout", "0.3"],
                           capture_output=True, text=True, timeout=30, env=dict(os.environ, **env))
        assert p.returncode != 0 and "timed out after 0 of 1 scans" in p.stderr, (lang, p.stderr)
        assert p.stdout == "", (lang, p.stdout)
