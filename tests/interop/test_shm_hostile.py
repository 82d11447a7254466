"""A buggy neighbour never takes a shm reader down, in C too: readers written over libnerve's channel API
(nerve.h) and over libach (Ach's ach.h), built from a scripts/install-c install through pkg-config
(tests/interop/shm_hostile/), join the hostile scenario of crates/shm/tests/hostile.rs: a writer at 1 kHz on 3
channels of checksummed messages while the files are truncated, shrunk, grown, renamed over, unlinked, scribbled on
and made anew. The scenario is hostile.rs's own (NERVE_SHM_HOSTILE_READERS hands it these programs): every reader
must still be alive at the end (not killed by SIGBUS), every message it delivered must be one the writer put (the
writer's checksum and generated body), and each channel must carry traffic to it again once made anew.
NERVE_HOSTILE_SECONDS (default 60: a minute in CI, as the cargo test's Rust-only run is shorter) bounds the hostility."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

import harness_c
import oracle

SOURCES = Path(__file__).resolve().parent / "shm_hostile"
WARN = ["-std=gnu11", "-Wall", "-Wextra", "-Werror"]
# The scenario's test in crates/shm/tests/hostile.rs.
SCENARIO = "a_hostile_neighbour_never_takes_a_reader_or_writer_down"


def _build(prefix: Path, package: str, source: str, out: Path) -> Path:
    # No sanitizers: AddressSanitizer takes SIGBUS for itself, and the fault this test provokes is the library's to
    # handle.
    exe = out / source.removesuffix(".c")
    cmd = ["gcc", *WARN, "-O1", "-g", f"-I{SOURCES}", *harness_c.pkg_config(prefix, package, "--cflags"), "-o",
           str(exe), str(SOURCES / source), *harness_c.pkg_config(prefix, package, "--libs"),
           f"-Wl,-rpath,{prefix / 'lib'}", "-lpthread"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, f"{' '.join(cmd)}\n{p.stderr[-4000:]}"
    return exe


@pytest.fixture(scope="module")
def readers(c_prefix, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("shm-hostile-bin")
    return {"C reader (libnerve)": _build(c_prefix, "nerve", "nerve_reader.c", out),
            "Ach reader (libach)": _build(c_prefix, "ach", "ach_reader.c", out)}


def test_c_and_ach_readers_survive_a_hostile_neighbour(readers):
    seconds = float(os.environ.get("NERVE_HOSTILE_SECONDS", "60"))
    env = dict(os.environ, NERVE_SHM_HOSTILE_READERS=";".join(f"{k}={v}" for k, v in readers.items()),
               NERVE_HOSTILE_SECONDS=str(seconds))
    # --workspace, not -p nerve-shm: the features cargo test --workspace built with, so nothing is compiled again
    # (conftest.py, DEBUG_BUILD); the other crates' `hostile` tests have no test of this name and run none.
    cmd = ["cargo", "test", "-q", "--workspace", "--test", "hostile", "--", "--exact", SCENARIO, "--nocapture"]
    # Building the test binary, the hostility, and the children's final 1.5 s.
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=oracle.REPO, timeout=900 + seconds)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-8000:]
    assert re.search(r"test \S*" + SCENARIO + r" \.\.\. ok|1 passed", out), out[-4000:]
    for label in readers:
        # hostile.rs prints each reader's RESULT line after it checked it (alive, no bad message, traffic after).
        line = next((l for l in out.splitlines() if l.startswith(f"{label}: RESULT")), None)
        assert line is not None, f"no result from the {label}:\n{out[-4000:]}"
        assert "BAD" not in line, line
        for ch in range(3):
            got = int(re.search(rf"\bgot{ch}=(\d+)", line).group(1))
            final = int(re.search(rf"\bfinal{ch}=(\d+)", line).group(1))
            assert got > 0 and final > 0, f"{label}, channel {ch}: {line}"
    # What the run did (shown with `pytest -s`; the record of a long run is this).
    print("\n".join(l for l in out.splitlines() if "hostile acts" in l or ": RESULT" in l or "reader: " in l))
