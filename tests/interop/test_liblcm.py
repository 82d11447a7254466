"""Nerve's LCM-compatible liblcm (bindings/c/lcm, issue 21 section 3) against the real liblcm 1.5.3 of the PyPI
wheel (and its CMake package). Programs written for LCM's C API (bindings/c/lcm/tests/lcm_programs.c; and the typed sender, listener and
self-test of test_c_pubsub.py over real lcm-gen C) are built from one source against the real headers and library
and against a scripts/install-c install (ours under AddressSanitizer and UndefinedBehaviorSanitizer), and print the
same; a program built against the real liblcm runs on ours by LD_LIBRARY_PATH alone and talks to real LCM over
udpm; logs are byte-identical; every entry point handed NULL and garbage returns LCM's error value. An LCM-style
CMake project (bindings/c/lcm/tests/cmake_project: C and C++ with lcm-cpp.hpp's typed handlers) builds unedited
against both CMake packages, prints the same, talks to real LCM over udpm and to `nerve` (Rust) over shm."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

import harness_c
import oracle
import test_c_pubsub

SOURCE = oracle.REPO / "bindings" / "c" / "lcm" / "tests" / "lcm_programs.c"


def _url(offset: int) -> str:
    port = 52000 + (os.getpid() % 400) * 16 + offset
    return f"udpm://239.255.76.79:{port}?ttl=0"


def _env(**extra) -> dict:
    # The real liblcm (and glib) leak at exit by design; ours is checked for leaks in the hostile role.
    return dict(os.environ, ASAN_OPTIONS="detect_leaks=0", **extra)


def _gcc(cmd: list) -> None:
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, f"{' '.join(map(str, cmd))}\n{p.stderr[-4000:]}"


def _paths() -> tuple:
    """The real LCM's include and lib directories inside the PyPI wheel."""
    site = next(oracle.VENV.glob("lib/python*/site-packages"))
    include, lib = site / "include", site / "lib"
    if not (include / "lcm" / "lcm.h").exists() or not (lib / "liblcm.so.1").exists():
        pytest.fail(f"no lcm/lcm.h or liblcm.so.1 under {site}: run scripts/setup")
    return include, lib


@pytest.fixture(scope="module")
def progs(c_prefix, tmp_path_factory) -> dict:
    """lcm_programs.c built three ways: `ours` (our headers and liblcm, sanitized), `real` (the wheel's, rpath to
    it), `real_plain` (the wheel's, no rpath: the library comes from LD_LIBRARY_PATH)."""
    include, lib = _paths()
    root = tmp_path_factory.mktemp("liblcm")
    ours_lib = c_prefix / "lib"
    out = {"ours": root / "ours", "real": root / "real", "real_plain": root / "real_plain"}
    _gcc(["gcc", "-std=c99", *harness_c.WARN, "-pedantic", "-O1", "-g", *harness_c.SANITIZE,
          *harness_c.pkg_config(c_prefix, "lcm", "--cflags"), "-o", str(out["ours"]), str(SOURCE),
          *harness_c.pkg_config(c_prefix, "lcm", "--libs"), f"-Wl,-rpath,{ours_lib}"])
    _gcc(["gcc", "-std=c99", "-O1", "-I", str(include), "-o", str(out["real"]), str(SOURCE), "-L", str(lib),
          f"-Wl,-rpath,{lib}", "-llcm"])
    _gcc(["gcc", "-std=c99", "-O1", "-I", str(include), "-o", str(out["real_plain"]), str(SOURCE), "-L", str(lib),
          "-llcm"])
    return out


def _run(exe: Path, *args, env=None, timeout=60) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=env or _env())


def _ours_lib_env(c_prefix) -> dict:
    return _env(LD_LIBRARY_PATH=str(c_prefix / "lib"))


def _real_lib_env() -> dict:
    return _env(LD_LIBRARY_PATH=str(_paths()[1]))


def test_the_library_has_lcms_soname_and_exactly_its_symbols(c_prefix):
    ours = c_prefix / "lib" / "liblcm.so.1"
    real = _paths()[1] / "liblcm.so.1"
    assert "SONAME               liblcm.so.1" in subprocess.run(["objdump", "-p", str(ours)], capture_output=True,
                                                                text=True).stdout
    assert (c_prefix / "lib" / "liblcm.a").exists()

    def lcm_symbols(path: Path) -> set:
        nm = subprocess.run(["nm", "-D", "--defined-only", str(path)], capture_output=True, text=True, check=True)
        return {line.split()[-1] for line in nm.stdout.splitlines() if line.split()[-1].startswith("lcm_")}

    assert lcm_symbols(ours) == lcm_symbols(real)
    assert len(lcm_symbols(ours)) == 16


def test_one_process_gets_the_same_results_on_both_libraries(progs, c_prefix):
    ours = _run(progs["ours"], "raw", _url(0))
    real = _run(progs["real"], "raw", _url(1))
    swapped = _run(progs["real_plain"], "raw", _url(2), env=_ours_lib_env(c_prefix))
    for p in (ours, real, swapped):
        assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    lines = ours.stdout.splitlines()
    assert "RAW1: one (3 bytes, lcm same)" in lines and "handle: 0, count 1" in lines and "queue size: 3" in lines
    assert "after a later publish, count 5, other 0" in lines and "unsubscribe again: -1" in lines
    assert ours.stdout == real.stdout == swapped.stdout


@pytest.mark.parametrize("sender,listener", [("swapped", "real"), ("real", "swapped"), ("ours", "real")])
def test_a_program_built_on_real_liblcm_runs_on_ours_and_talks_to_real_lcm(progs, c_prefix, sender, listener):
    """`swapped` is the program built against the wheel's liblcm, run with LD_LIBRARY_PATH on ours."""
    exe = {"ours": (progs["ours"], _env()), "real": (progs["real_plain"], _real_lib_env()),
           "swapped": (progs["real_plain"], _ours_lib_env(c_prefix))}
    n, url = 6, _url(3 + ["swapped", "real", "ours"].index(sender))
    lexe, lenv = exe[listener]
    proc = subprocess.Popen([str(lexe), "listen", url, str(n)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=lenv)
    try:
        sexe, senv = exe[sender]
        s = _run(sexe, "send", url, n, env=senv)
        assert s.returncode == 0, s.stderr[-4000:]
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out + err[-4000:]
    assert out.splitlines() == [f"RAW: message {i} (9 bytes, lcm same)" for i in range(n)]


def test_a_python_lcm_process_and_a_c_program_on_ours(progs, venv_python):
    url, n = _url(7), 5
    script = ("import sys, time, lcm\n"
              "lc = lcm.LCM(sys.argv[1])\n"
              "time.sleep(0.3)\n"
              "for i in range(int(sys.argv[2])):\n"
              "    lc.publish('RAW', b'python %d' % i)\n"
              "    time.sleep(0.02)\n")
    proc = subprocess.Popen([str(progs["ours"]), "listen", url, str(n)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env())
    try:
        subprocess.run([str(venv_python), "-c", script, url, str(n)], check=True, timeout=30)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out + err[-4000:]
    assert out.splitlines() == [f"RAW: python {i} (8 bytes, lcm same)" for i in range(n)]


def test_lcm_programs_get_nerves_shm_transport(progs, tmp_path):
    env = _env(NERVE_SHM_DIR=str(tmp_path))
    url, n = "shm://?frames=64", 5
    proc = subprocess.Popen([str(progs["ours"]), "listen", url, str(n)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        s = _run(progs["ours"], "send", url, n, env=env)
        assert s.returncode == 0, s.stderr[-4000:]
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out + err[-4000:]
    assert out.splitlines() == [f"RAW: message {i} (9 bytes, lcm same)" for i in range(n)]


def test_event_logs_match_the_real_library_byte_for_byte(progs, tmp_path, venv_python):
    outs = {}
    for kind in ["ours", "real"]:
        log = tmp_path / f"{kind}.log"
        w = _run(progs[kind], "log-write", log)
        assert w.returncode == 0, w.stderr
        outs[kind] = w.stdout
        assert w.stdout.splitlines()[-1] == "wrote event 2, count 3"
    assert outs["ours"] == outs["real"]
    assert (tmp_path / "ours.log").read_bytes() == (tmp_path / "real.log").read_bytes()

    # Damage: junk before the first event is skipped; junk right after an event stops reading there (LCM does not
    # trust an event that the next sync word does not follow); a truncated last event ends the log.
    good = (tmp_path / "ours.log").read_bytes()
    cases = {"junk-first": b"junk" + good, "junk-after-first": good[:35] + b"junk" + good[35:],
             "truncated": good[:40], "tail": good + b"zz"}
    for name, data in cases.items():
        path = tmp_path / f"{name}.log"
        path.write_bytes(data)
        reads = {kind: _run(progs[kind], "log-read", path) for kind in ["ours", "real"]}
        for p in reads.values():
            assert p.returncode == 0, p.stderr
        assert reads["ours"].stdout == reads["real"].stdout, name
    assert _run(progs["ours"], "log-read", tmp_path / "junk-first.log").stdout.splitlines() == [
        "0 1000 POSE 4 010203", "1 2000 EMPTY 5 ", "2 3000 CAMERA/left 11 696d616765"]
    assert _run(progs["ours"], "log-read", tmp_path / "truncated.log").stdout.splitlines() == ["0 1000 POSE 4 010203"]
    # A log written by ours is read by the real LCM's Python EventLog.
    script = ("import sys, lcm\n"
              "for e in lcm.EventLog(sys.argv[1], 'r'):\n"
              "    print(e.eventnum, e.timestamp, e.channel, e.data.hex())\n")
    out = subprocess.run([str(venv_python), "-c", script, str(tmp_path / "ours.log")], capture_output=True,
                         text=True, check=True)
    assert out.stdout.splitlines() == ["0 1000 POSE 010203", "1 2000 EMPTY ", "2 3000 CAMERA/left 696d616765"]
    for ts in ["0", "2000", "2500", "99999"]:
        seeks = {kind: _run(progs[kind], "log-seek", tmp_path / "ours.log", ts).stdout for kind in ["ours", "real"]}
        assert seeks["ours"] == seeks["real"], ts


def test_every_entry_point_refuses_null_and_garbage(progs):
    p = _run(progs["ours"], "hostile", env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1"))
    assert p.returncode == 0, p.stdout + p.stderr[-6000:]
    assert p.stdout.splitlines()[-1] == "hostile: ok"
    assert "lcm_handle inside a handler: -1" in p.stdout


@pytest.fixture(scope="module")
def typed(c_prefix, lcm_gen, tmp_path_factory) -> dict:
    """test_c_pubsub's typed programs over real lcm-gen C (so our lcm_coretypes.h compiles lcm-gen's output), built
    against our install, sanitized."""
    root = tmp_path_factory.mktemp("liblcm_typed")
    subprocess.run([str(lcm_gen), "-c", "--c-cpath", str(root), "--c-hpath", str(root), str(test_c_pubsub.EXAMPLE)],
                   check=True, capture_output=True, text=True)
    out = {}
    for prog, src in [("selftest", test_c_pubsub.SELFTEST), ("sender", test_c_pubsub.SENDER),
                      ("listener", test_c_pubsub.LISTENER)]:
        c = root / f"{prog}.c"
        c.write_text(src)
        exe = root / prog
        _gcc(["gcc", "-std=gnu99", "-O1", *harness_c.SANITIZE, "-I", str(root),
              *harness_c.pkg_config(c_prefix, "lcm", "--cflags"), "-o", str(exe), str(c),
              *map(str, sorted(root.glob("exlcm*.c"))),
              *harness_c.pkg_config(c_prefix, "lcm", "--libs"), f"-Wl,-rpath,{c_prefix / 'lib'}"])
        out[prog] = exe
    return out


def test_typed_programs_on_ours_print_what_they_print_on_real_lcm(typed, lcm_gen, tmp_path):
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    include, lib = _paths()
    subprocess.run([str(lcm_gen), "-c", "--c-cpath", str(real_dir), "--c-hpath", str(real_dir),
                    str(test_c_pubsub.EXAMPLE)], check=True, capture_output=True)
    (real_dir / "selftest.c").write_text(test_c_pubsub.SELFTEST)
    _gcc(["gcc", "-std=gnu99", "-O1", "-I", str(real_dir), "-I", str(include), "-o", str(real_dir / "selftest"),
          str(real_dir / "selftest.c"), *map(str, sorted(real_dir.glob("exlcm*.c"))), "-L", str(lib),
          f"-Wl,-rpath,{lib}", "-llcm"])
    ours = _run(typed["selftest"], _url(8))
    real = _run(real_dir / "selftest", _url(9))
    assert ours.returncode == 0 and real.returncode == 0, ours.stderr[-3000:] + real.stderr[-3000:]
    # The one deliberate difference: of five messages queued with capacity 1, LCM keeps the first, Nerve the last.
    ours_lines, real_lines = ours.stdout.splitlines(), real.stdout.splitlines()
    assert len(ours_lines) == len(real_lines)
    differ = [(o, r) for o, r in zip(ours_lines, real_lines) if o != r]
    assert [(o.split()[1], r.split()[1]) for o, r in differ] == [("ts=1014", "ts=1010")], differ


def test_typed_sender_and_listener_on_ours_with_real_lcm(typed, lcm_gen, tmp_path):
    """Our typed listener hears a real-LCM typed sender (test_c_pubsub's, over lcm-gen C and the wheel's liblcm)."""
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    include, lib = _paths()
    subprocess.run([str(lcm_gen), "-c", "--c-cpath", str(real_dir), "--c-hpath", str(real_dir),
                    str(test_c_pubsub.EXAMPLE)], check=True, capture_output=True)
    (real_dir / "sender.c").write_text(test_c_pubsub.SENDER)
    _gcc(["gcc", "-std=gnu99", "-O1", "-I", str(real_dir), "-I", str(include), "-o", str(real_dir / "sender"),
          str(real_dir / "sender.c"), *map(str, sorted(real_dir.glob("exlcm*.c"))), "-L", str(lib),
          f"-Wl,-rpath,{lib}", "-llcm"])
    n, url = 6, _url(10)
    proc = subprocess.Popen([str(typed["listener"]), url, str(n)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env())
    try:
        s = _run(real_dir / "sender", url, n)
        assert s.returncode == 0, s.stderr[-3000:]
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out + err[-3000:]
    assert out.splitlines()[5] == ("EXAMPLE: ts=1005 pos=(5,5.5,6) ori=(-5,-6,-7,-8) ranges=[] name='example 5' "
                                   "enabled=1")


PROJECT = oracle.REPO / "bindings" / "c" / "lcm" / "tests" / "cmake_project"


def _cmake_build(prefix: Path, root: Path, flags: str = "") -> Path:
    """PROJECT (an LCM-style CMakeLists.txt, unedited) configured with find_package(lcm) from `prefix` and built."""
    src, build = root / "src", root / "build"
    src.mkdir(parents=True)
    for f in PROJECT.iterdir():
        (src / f.name).write_bytes(f.read_bytes())
    (src / "example_t.lcm").write_bytes(test_c_pubsub.EXAMPLE.read_bytes())
    for cmd in (["cmake", "-S", str(src), "-B", str(build), f"-DCMAKE_PREFIX_PATH={prefix}",
                 f"-DCMAKE_C_FLAGS={flags}", f"-DCMAKE_CXX_FLAGS={flags}"],
                ["cmake", "--build", str(build)]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        assert p.returncode == 0, f"{' '.join(cmd)}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return build


@pytest.fixture(scope="module")
def cmake_builds(c_prefix, tmp_path_factory) -> dict:
    """The LCM-style CMake project built against Nerve's install (sanitized) and against the wheel's LCM package."""
    root = tmp_path_factory.mktemp("liblcm_cmake")
    site = _paths()[1].parent
    return {"ours": _cmake_build(c_prefix, root / "ours", " ".join(harness_c.SANITIZE)),
            "real": _cmake_build(site, root / "real")}


def test_cmake_find_package_lcm_gives_lcms_targets_and_functions(c_prefix, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.10)\nproject(probe C)\nfind_package(lcm 1.5 REQUIRED)\n"
        "include(${LCM_USE_FILE})\n"
        "foreach(t lcm lcm-static lcm-coretypes lcm-gen)\n  if(NOT TARGET ${t})\n"
        "    message(FATAL_ERROR \"no target ${t}\")\n  endif()\nendforeach()\n"
        "foreach(f lcm_wrap_types lcm_add_library lcm_target_link_libraries)\n  if(NOT COMMAND ${f})\n"
        "    message(FATAL_ERROR \"no function ${f}\")\n  endif()\nendforeach()\n"
        "find_package(nerve REQUIRED)\nif(NOT TARGET nerve::nerve)\n  message(FATAL_ERROR \"no nerve::nerve\")\n"
        "endif()\nmessage(STATUS \"lcm ${LCM_VERSION}\")\n")
    p = subprocess.run(["cmake", "-S", str(src), "-B", str(tmp_path / "b"), f"-DCMAKE_PREFIX_PATH={c_prefix}"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "lcm 1.5.3" in p.stdout


def test_cpp_programs_built_with_cmake_print_the_same_on_both(cmake_builds, tmp_path):
    outs = {}
    for i, kind in enumerate(["ours", "real"]):
        p = _run(cmake_builds[kind] / "cpp_programs", "selftest", _url(11 + i))
        assert p.returncode == 0, p.stdout + p.stderr[-4000:]
        outs[kind] = p.stdout.splitlines()
    # The order in which one message's handlers run is not LCM's contract (LCM's changes after an unsubscribe);
    # the set of lines is.
    assert sorted(outs["ours"]) == sorted(outs["real"])
    assert outs["ours"][-1] == "typed 3 raw 5 lambda 4 function 4"
    assert outs["ours"][:4] == ["member EXAMPLE: ts=1000 pos=(0,0.5,1) ranges=[] name='cpp' enabled=0",
                                "raw EXAMPLE: 85 bytes",
                                "lambda EXAMPLE: ts=1000 pos=(0,0.5,1) ranges=[] name='cpp' enabled=0",
                                "function EXAMPLE: ts=1000 pos=(0,0.5,1) ranges=[] name='cpp' enabled=0"]
    logs = {}
    for kind in ["ours", "real"]:
        log = tmp_path / f"{kind}.log"
        assert _run(cmake_builds[kind] / "cpp_programs", "log-write", log).returncode == 0
        r = _run(cmake_builds[kind] / "cpp_programs", "log-read", log)
        assert r.returncode == 0, r.stderr
        logs[kind] = r.stdout
    assert logs["ours"] == logs["real"] and logs["ours"].splitlines()[-2:] == ["seek: 0", "after seek: 5001"]
    assert (tmp_path / "ours.log").read_bytes() == (tmp_path / "real.log").read_bytes()


@pytest.mark.parametrize("sender,listener", [("cpp-ours", "c-real"), ("cpp-real", "c-ours"), ("c-ours", "cpp-real"),
                                             ("c-real", "cpp-ours")])
def test_cmake_built_programs_talk_to_real_lcm_over_udpm(cmake_builds, sender, listener):
    def exe(who):
        lang, kind = who.split("-")
        return cmake_builds[kind] / ("cpp_programs" if lang == "cpp" else "c_programs")

    n = 5
    url = _url(13 + ["cpp-ours", "cpp-real", "c-ours", "c-real"].index(sender))
    proc = subprocess.Popen([str(exe(listener)), "listen", url, str(n)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env())
    try:
        s = _run(exe(sender), "send", url, n)
        assert s.returncode == 0, s.stderr[-3000:]
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out + err[-3000:]
    lines = out.splitlines()
    assert len(lines) == n
    name = "from C++" if sender.startswith("cpp") else "from C"
    assert all(f"name='{name}'" in line for line in lines), lines


@pytest.mark.parametrize("lang", ["cpp", "c"])
def test_cmake_built_programs_exchange_messages_with_a_rust_process_over_shm(cmake_builds, nerve_bin, tmp_path,
                                                                           lang):
    """`nerve sub` / `nerve pub` (Rust, the bus) on shm:// with LCM-API programs on Nerve's liblcm."""
    exe = cmake_builds["ours"] / f"{lang}_programs"
    types = test_c_pubsub.EXAMPLE.parent
    env = _env(NERVE_SHM_DIR=str(tmp_path))
    n = 4
    sub = subprocess.Popen([str(nerve_bin), "sub", "EXAMPLE", "--url", "shm://", "--types", str(types), "--json",
                            "--count", str(n), "--timeout-ms", "20000"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=env)
    try:
        s = _run(exe, "send", "shm://", n, env=env)
        assert s.returncode == 0, s.stderr[-3000:]
        out, err = sub.communicate(timeout=30)
    finally:
        if sub.poll() is None:
            sub.kill()
            sub.wait()
    assert sub.returncode == 0, out + err[-3000:]
    assert out.count('"name"') == n and ("from C++" if lang == "cpp" else "from C") in out

    listener = subprocess.Popen([str(exe), "listen", "shm://", str(n)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
    try:
        value = ('{"timestamp": 42, "position": [1, 2, 3], "orientation": [0, 0, 0, 1], "num_ranges": 2, '
                 '"ranges": [7, 8], "name": "from Rust", "enabled": true}')
        # The listener subscribes first; a shm:// subscriber sees messages published after it joined.
        time.sleep(0.5)
        subprocess.run([str(nerve_bin), "pub", "EXAMPLE", "--url", "shm://", "--types", str(types), "--type",
                        "exlcm.example_t", "--json", value, "--count", str(n), "--rate", "20"], check=True,
                       capture_output=True, env=env, timeout=30)
        out, err = listener.communicate(timeout=30)
    finally:
        if listener.poll() is None:
            listener.kill()
            listener.wait()
    assert listener.returncode == 0, out + err[-3000:]
    lines = out.splitlines()
    assert len(lines) == n and all("ts=42" in line and "name='from Rust'" in line and "ranges=[7,8]" in line
                                   for line in lines), lines
