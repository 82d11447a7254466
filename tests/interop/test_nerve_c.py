"""libnerve (nerve.h) from C: shared-memory channels and LCM event logs (issue 21 section 2, without the bus). C
programs (bindings/c/nerve/tests/nerve_programs.c) built from a scripts/install-c install through `pkg-config
nerve`, under AddressSanitizer and UndefinedBehaviorSanitizer: channels (create, open, put, get next and newest,
missed counts, buffer too small, waits, loans, stats), every entry point handed NULL and garbage, logs written by
libnerve read by the real LCM's EventLog and the other way, damage reported; and a channel shared with an Ach
program (libach) and `nerve chan`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import harness_c
import oracle

SOURCE = oracle.REPO / "bindings" / "c" / "nerve" / "tests" / "nerve_programs.c"


@pytest.fixture(scope="module")
def nerve_c_bin(c_prefix, tmp_path_factory) -> Path:
    lib = c_prefix / "lib"
    soname = subprocess.run(["objdump", "-p", str(lib / "libnerve.so.0")], capture_output=True, text=True).stdout
    assert "SONAME               libnerve.so.0" in soname
    exe = tmp_path_factory.mktemp("nerve-c-bin") / "nerve_programs"
    cmd = ["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1", "-g", *harness_c.SANITIZE,
           *harness_c.pkg_config(c_prefix, "nerve", "--cflags"), "-o", str(exe), str(SOURCE),
           *harness_c.pkg_config(c_prefix, "nerve", "--libs"), f"-Wl,-rpath,{lib}"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, f"{' '.join(cmd)}\n{p.stderr[-4000:]}"
    return exe


def _run(exe: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("role", ["channels", "hostile"])
def test_channel_roles(nerve_c_bin, tmp_path, role):
    p = _run(nerve_c_bin, role, tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr[-6000:]


def test_a_log_written_by_libnerve_is_read_by_real_lcm(nerve_c_bin, tmp_path, venv_python):
    log = tmp_path / "c.log"
    p = _run(nerve_c_bin, "log-write", log)
    assert p.returncode == 0, p.stderr
    script = ("import sys, lcm\n"
              "for e in lcm.EventLog(sys.argv[1], 'r'):\n"
              "    print(e.eventnum, e.timestamp, e.channel, e.data.hex())\n")
    out = subprocess.run([str(venv_python), "-c", script, str(log)], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["0 1000 POSE 010203", "1 2000 EMPTY ", "2 3000 CAMERA/left 696d616765"]


def test_a_log_written_by_real_lcm_is_read_by_libnerve_with_damage_reported(nerve_c_bin, tmp_path, venv_python):
    log = tmp_path / "lcm.log"
    script = ("import sys, lcm\n"
              "w = lcm.EventLog(sys.argv[1], 'w', overwrite=True)\n"
              "w.write_event(111, 'A', b'\\x00\\x01')\n"
              "w.write_event(222, 'B/c', b'hello')\n"
              "w.close()\n")
    subprocess.run([str(venv_python), "-c", script, str(log)], check=True)
    with open(log, "ab") as f:
        f.write(b"junk that is not an event")
    p = _run(nerve_c_bin, "log-read", log)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["0 111 A 0001", "1 222 B/c 68656c6c6f", "damage 1 25"]


def test_a_channel_shared_by_libnerve_libach_and_nerve_sub(c_prefix, nerve_c_bin, nerve_bin, tmp_path):
    """An Ach program's channel, read from C through nerve.h, is the channel `nerve chan ls` lists."""
    ach_src = oracle.REPO / "bindings" / "c" / "ach" / "tests" / "ach_programs.c"
    ach_exe = tmp_path / "ach_programs"
    cmd = ["gcc", "-std=gnu11", "-O1", *harness_c.pkg_config(c_prefix, "ach", "--cflags"), "-o", str(ach_exe),
           str(ach_src), *harness_c.pkg_config(c_prefix, "ach", "--libs"), f"-Wl,-rpath,{c_prefix / 'lib'}",
           "-lpthread"]
    subprocess.run(cmd, check=True, capture_output=True)
    env = dict(os.environ, NERVE_SHM_DIR=str(tmp_path))
    subprocess.run([str(ach_exe), "create", "shared", "8", "64"], check=True, env=env)
    subprocess.run([str(ach_exe), "put", "shared", "aa", "bbcc"], check=True, env=env)
    p = _run(nerve_c_bin, "dump", tmp_path, "shared")
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["aa", "bbcc"]
    ls = subprocess.run([str(nerve_bin), "chan", "ls"], capture_output=True, text=True, env=env, check=True).stdout
    assert any(line.split()[:1] == ["shared"] for line in ls.splitlines())
