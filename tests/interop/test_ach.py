"""Ach programs on Nerve's libach (issue 25): Ach-style C programs (bindings/c/ach/tests/ach_programs.c) built
against an install made by scripts/install-c (include/ach.h, libach.so.1, libach.a, ach.pc through pkg-config),
under AddressSanitizer and UndefinedBehaviorSanitizer: every ach_get flag combination and status, a waiting reader
woken by a put, ach_cancel from a signal handler and from a thread, every entry point handed NULL and garbage, many
writers and readers in separate processes, a writer SIGKILLed mid-put while the others go on, and an Ach program
talking with `nerve sub` / `nerve pub --url shm://` and seen by `nerve chan`."""

from __future__ import annotations

import os
import random
import subprocess
import time
from pathlib import Path

import pytest

import harness_c
import oracle

SOURCE = oracle.REPO / "bindings" / "c" / "ach" / "tests" / "ach_programs.c"
WARN = ["-std=gnu11", "-Wall", "-Wextra", "-Werror"]


@pytest.fixture(scope="module")
def prefix(c_prefix) -> Path:
    """The install of scripts/install-c (conftest's c_prefix), with libach's soname checked."""
    lib = c_prefix / "lib"
    assert (lib / "libach.so.1").resolve() == (lib / "libach.so.1.0.0").resolve()
    soname = subprocess.run(["objdump", "-p", str(lib / "libach.so.1.0.0")], capture_output=True, text=True).stdout
    assert "SONAME               libach.so.1" in soname
    return c_prefix


def _pkg_config(prefix: Path, *args: str) -> list:
    return harness_c.pkg_config(prefix, "ach", *args)


@pytest.fixture(scope="module")
def ach_bin(prefix, tmp_path_factory) -> Path:
    """The programs against the shared libach, under ASan + UBSan, flags from `pkg-config ach`."""
    exe = tmp_path_factory.mktemp("ach-bin") / "ach_programs"
    cmd = ["gcc", *WARN, "-O1", "-g", *harness_c.SANITIZE, *_pkg_config(prefix, "--cflags"), "-o", str(exe),
           str(SOURCE), *_pkg_config(prefix, "--libs"), f"-Wl,-rpath,{prefix / 'lib'}", "-lpthread"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, f"{' '.join(cmd)}\n{p.stderr[-4000:]}"
    return exe


@pytest.fixture
def shm_dir(tmp_path) -> Path:
    d = tmp_path / "shm"
    d.mkdir()
    return d


def _env(shm_dir: Path) -> dict:
    return dict(os.environ, NERVE_SHM_DIR=str(shm_dir))


def _run(exe: Path, shm_dir: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout, env=_env(shm_dir))


@pytest.mark.parametrize("role", ["flags", "wake", "cancel", "hostile"])
def test_single_process_roles(ach_bin, shm_dir, role):
    p = _run(ach_bin, shm_dir, role, f"t-{role}")
    assert p.returncode == 0, p.stdout + p.stderr[-6000:]


def test_static_library_links_and_runs(prefix, shm_dir, tmp_path):
    exe = tmp_path / "ach_static"
    libs = [a for a in _pkg_config(prefix, "--static", "--libs") if a != "-lach"]
    cmd = ["gcc", *WARN, "-O1", *_pkg_config(prefix, "--cflags"), "-o", str(exe), str(SOURCE),
           str(prefix / "lib" / "libach.a"), *libs]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, f"{' '.join(cmd)}\n{p.stderr[-4000:]}"
    assert "libach" not in subprocess.run(["ldd", str(exe)], capture_output=True, text=True).stdout
    p = _run(exe, shm_dir, "flags", "t-static")
    assert p.returncode == 0, p.stderr[-6000:]


def _start(exe: Path, shm_dir: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([str(exe), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(shm_dir))


def _wait_line(proc: subprocess.Popen, want: str) -> None:
    line = proc.stdout.readline().strip()
    assert line == want, f"expected {want!r}, got {line!r}: {proc.stderr.read()[-4000:] if proc.poll() else ''}"


def _finish(procs: list, timeout: float = 120) -> list:
    out = []
    try:
        for p in procs:
            o, e = p.communicate(timeout=timeout)
            out.append((p.returncode, o, e))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return out


def test_many_writers_and_readers_at_once(ach_bin, shm_dir):
    writers, readers, n = 3, 3, 300
    assert _run(ach_bin, shm_dir, "create", "many", "64", "512").returncode == 0
    rs = [_start(ach_bin, shm_dir, "reader", "many", str(writers), str(n)) for _ in range(readers)]
    for r in rs:
        _wait_line(r, "ready")
    ws = [_start(ach_bin, shm_dir, "writer", "many", str(i), str(n)) for i in range(writers)]
    results = _finish(ws + rs)
    for code, out, err in results:
        assert code == 0, out + err[-4000:]
    for code, out, err in results[writers:]:
        _, received, _missed = out.split()[-3:]
        assert int(received) > 0


def _chan_ls(nerve_bin: Path, shm_dir: Path) -> dict:
    """`nerve chan ls` as {name: {column: value}}."""
    p = subprocess.run([str(nerve_bin), "chan", "ls"], capture_output=True, text=True, env=_env(shm_dir), check=True)
    lines = p.stdout.splitlines()
    head = lines[0].replace("FRAME SIZE", "FRAME_SIZE").split()
    return {row.split()[0]: dict(zip(head, row.split())) for row in lines[1:] if row.strip()}


def test_a_writer_killed_mid_put_leaves_the_channel_working(ach_bin, shm_dir, nerve_bin):
    assert _run(ach_bin, shm_dir, "create", "crash", "8", str(256 * 1024)).returncode == 0
    reader = _start(ach_bin, shm_dir, "reader", "crash", "1", "200")
    _wait_line(reader, "ready")
    rng = random.Random(25)
    for _ in range(8):
        w = _start(ach_bin, shm_dir, "crash-writer", "crash")
        try:
            _wait_line(w, "writing")
            time.sleep(rng.uniform(0.005, 0.05))
        finally:
            w.kill()
            w.wait()
    writer = _start(ach_bin, shm_dir, "writer", "crash", "0", "200")
    (wc, wo, we), (rc, ro, re) = _finish([writer, reader])
    assert wc == 0, we[-4000:]
    assert rc == 0, ro + re[-4000:]
    # Some kill landed while a put held the writer lock; the next writer recovered the channel (REC), where Ach would
    # have answered ACH_CORRUPT from then on.
    assert int(_chan_ls(nerve_bin, shm_dir)["crash"]["RECOVERIES"]) >= 1


def _wait_for_reader(nerve_bin: Path, shm_dir: Path, chan: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while int(_chan_ls(nerve_bin, shm_dir)[chan]["READERS"]) < 1:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the subscriber never opened the channel"
        time.sleep(0.05)


def test_an_ach_writer_and_nerve_sub_over_shm(ach_bin, shm_dir, nerve_bin):
    assert _run(ach_bin, shm_dir, "create", "ACHPOSE", "16", "512").returncode == 0
    sub = subprocess.Popen([str(nerve_bin), "sub", "--url", "shm://", "ACHPOSE", "--count", "3", "--timeout-ms",
                            "30000", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=_env(shm_dir))
    frames = ["0102030405060708090a", "ff", "00" * 300]
    try:
        _wait_for_reader(nerve_bin, shm_dir, "ACHPOSE", sub)
        p = _run(ach_bin, shm_dir, "put", "ACHPOSE", *frames)
        assert p.returncode == 0, p.stderr[-4000:]
        out, err = sub.communicate(timeout=60)
    finally:
        if sub.poll() is None:
            sub.kill()
            sub.wait()
    assert sub.returncode == 0, err
    import json

    got = [json.loads(line) for line in out.splitlines()]
    assert [g["data_hex"] for g in got] == frames
    assert {g["channel"] for g in got} == {"ACHPOSE"}
    ls = _chan_ls(nerve_bin, shm_dir)["ACHPOSE"]
    assert (ls["FRAMES"], ls["FRAME_SIZE"], ls["MESSAGES"]) == ("16", "512", "3")


def test_nerve_pub_to_an_ach_reader_and_nerve_chan_dump(ach_bin, shm_dir, nerve_bin):
    assert _run(ach_bin, shm_dir, "create", "ACHCMD", "16", "512").returncode == 0
    getter = _start(ach_bin, shm_dir, "get", "ACHCMD", "3")
    frames = ["cafe", "0011223344556677", "ab" * 100]
    try:
        for f in frames:
            subprocess.run([str(nerve_bin), "pub", "--url", "shm://", "ACHCMD", "--hex", f], check=True,
                           capture_output=True, env=_env(shm_dir), timeout=60)
        out, err = getter.communicate(timeout=60)
    finally:
        if getter.poll() is None:
            getter.kill()
            getter.wait()
    assert getter.returncode == 0, err[-4000:]
    assert out.split() == frames
    dump = subprocess.run([str(nerve_bin), "chan", "dump", "ACHCMD", "--from-oldest", "--count", "3", "--json",
                           "--timeout-ms", "10000"], capture_output=True, text=True, env=_env(shm_dir), timeout=60)
    assert dump.returncode == 0, dump.stderr
    assert len(dump.stdout.splitlines()) == 3
