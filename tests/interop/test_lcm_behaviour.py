"""LCM 1.5.3's behaviour where its drop-ins must match it (memq keeps every publication until handle() takes it;
two threads in handle() at once; file:// playback gives event k on call k and fails after the last; the edges of
handle_timeout, unsubscribing inside a handler, queue capacities 0 and negative, the provider URL list). The tests
are written as LCM's own unit tests are - GoogleTest programs over the C API and lcm-cpp.hpp, and a unittest module
over the Python API (tests/interop/lcm_behaviour/) - and each runs twice with the same expectations: against the
real LCM (the PyPI wheel's liblcm and `lcm` module) and against Nerve's (liblcm from scripts/install-c, and
`nerve.lcm`). docs/lcm-differences.md lists what still differs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import oracle

SOURCES = Path(__file__).parent / "lcm_behaviour"
PROGRAMS = ["test_c_behaviour", "test_cpp_behaviour"]


def _real_lcm() -> tuple:
    site = next(oracle.VENV.glob("lib/python*/site-packages"))
    include, lib = site / "include", site / "lib" / "liblcm.so.1"
    if not (include / "lcm" / "lcm.h").exists() or not lib.exists():
        pytest.fail(f"no lcm/lcm.h or liblcm.so.1 under {site}: run scripts/setup")
    return include, lib


def _build(name: str, include: Path, library: Path, out: Path) -> Path:
    if not Path("/usr/include/gtest/gtest.h").exists():
        pytest.fail("GoogleTest is missing: apt-get install libgtest-dev (scripts/setup installs it)")
    build = out / name
    for cmd in (["cmake", "-S", str(SOURCES), "-B", str(build), f"-DLCM_INCLUDE_DIR={include}",
                 f"-DLCM_LIBRARY={library}", "-DCMAKE_BUILD_TYPE=Debug"],
                ["cmake", "--build", str(build), "-j2"]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        assert p.returncode == 0, f"{' '.join(cmd)}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return build


@pytest.fixture(scope="module")
def builds(c_prefix, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("lcm_behaviour")
    include, lib = _real_lcm()
    return {
        "real": _build("real", include, lib, out),
        "nerve": _build("nerve", c_prefix / "include", c_prefix / "lib" / "liblcm.so.1", out),
    }


def _gtest(exe: Path, lib_dir: Path) -> None:
    env = dict(os.environ, LD_LIBRARY_PATH=str(lib_dir), ASAN_OPTIONS="detect_leaks=0")
    p = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, f"{exe}\n{p.stdout[-6000:]}\n{p.stderr[-2000:]}"
    assert "[  PASSED  ]" in p.stdout and "FAILED" not in p.stdout, p.stdout[-3000:]


@pytest.mark.parametrize("program", PROGRAMS)
def test_real_liblcm_passes(builds, program):
    """The expectations are LCM's: the real liblcm meets every one."""
    _gtest(builds["real"] / program, _real_lcm()[1].parent)


@pytest.mark.parametrize("program", PROGRAMS)
def test_nerve_liblcm_passes(builds, c_prefix, program):
    """Nerve's liblcm meets the same expectations, from the same source."""
    _gtest(builds["nerve"] / program, c_prefix / "lib")


@pytest.mark.parametrize("module", ["lcm", "nerve.lcm"])
def test_python_module_passes(venv_python, module):
    """LCM's `lcm` module and `nerve.lcm` pass the same unittest module."""
    env = dict(os.environ, LCM_BEHAVIOUR_MODULE=module)
    p = subprocess.run([str(venv_python), "-m", "unittest", "-v", str(SOURCES / "test_python_behaviour.py")],
                       capture_output=True, text=True, timeout=180, env=env, cwd=str(SOURCES))
    assert p.returncode == 0, f"{module}\n{p.stderr[-6000:]}"
    assert "OK" in p.stderr.splitlines()[-1], p.stderr[-2000:]
