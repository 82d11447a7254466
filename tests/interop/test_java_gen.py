"""The Java generator (`nerve gen -j`) against the real LCM 1.5.3: its lcm-gen, its lcm.jar and its Python binding.

- the classes land where real `lcm-gen -j` puts them, and everything (Nerve's classes, lcm-gen's under a package
  prefix, the harness) compiles in one `javac --release 8` call against the wheel's lcm.jar, into Java 8 bytecode;
- every public field, constant, constructor and method of lcm-gen's classes exists in Nerve's with the same types
  and modifiers, the constants have equal values, and the fingerprints agree (harness_java/Harness.java --api);
- the harness decodes random values encoded by the real LCM Python binding, through byte[], LCM's
  LCMDataInputStream and a plain DataInputStream, re-encodes them byte-identically, prints equal values, and
  lcm-gen's own classes decode the same bytes and re-encode them to the same bytes;
- malformed input (truncations, bit flips, huge counts and string lengths, hostile nesting) gives an IOException,
  never another throwable (the JVM runs with a small heap, so an unbounded allocation fails the test);
- `--jmkdir=false` writes into existing directories only, as lcm-gen's does.

One JVM runs each check; the classes are compiled once for the module.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import oracle

JAVAC = shutil.which("javac")
JAVA = shutil.which("java")
HARNESS = Path(__file__).resolve().parent / "harness_java" / "Harness.java"
# Small enough that a decoder allocating what a hostile count says runs out of memory, which fails the harness.
JVM = ["-Xmx256m", "-Xss1m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
LCMGEN_PREFIX = "lcmgen"


@pytest.fixture(autouse=True, scope="module")
def _java_is_installed():
    """A missing JDK fails every test here: a skipped test would pass unchecked."""
    assert JAVAC is not None and JAVA is not None, "no javac/java: install a JDK (scripts/setup)"


def lcm_jar() -> Path:
    """LCM's own jar, from the lcm wheel in the venv."""
    found = sorted(oracle.VENV.glob("lib/python*/site-packages/share/java/lcm.jar"))
    assert found, "no lcm.jar in the venv's lcm wheel: run scripts/setup"
    return found[0]


@pytest.fixture(scope="module")
def java_out(tmp_path_factory, nerve_bin, corpus_files) -> Path:
    """`nerve gen -j` over the whole corpus."""
    out = tmp_path_factory.mktemp("nerve-java") / "out"
    proc = subprocess.run([str(nerve_bin), "gen", "-j", "--jpath", str(out), *map(str, corpus_files)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def lcmgen_out() -> Path:
    """The real `lcm-gen -j` over the corpus, under a package prefix so both sets of classes share one JVM."""
    return oracle.real_lcmgen(["-j", "--jpath", "{out}", "--package-prefix", LCMGEN_PREFIX])


@pytest.fixture(scope="module")
def classes(java_out, lcmgen_out, tmp_path_factory) -> Path:
    """Nerve's classes, lcm-gen's and the harness, compiled in one javac call."""
    out = tmp_path_factory.mktemp("java-classes")
    sources = [*java_out.rglob("*.java"), *lcmgen_out.rglob("*.java"), HARNESS]
    proc = subprocess.run([JAVAC, "--release", "8", "-Xlint:all,-options,-cast,-rawtypes", "-encoding", "UTF-8",
                           "-nowarn", "-cp", str(lcm_jar()), "-d", str(out), *map(str, sources)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-6000:]
    return out


@pytest.fixture(scope="module")
def types_file(type_descs, tmp_path_factory) -> Path:
    """The corpus types for the harness: name, fingerprint, member:type:ndims (tab-separated)."""
    f = tmp_path_factory.mktemp("java-types") / "types.txt"
    lines = []
    for d in type_descs:
        members = [f"{m.name}:{m.type}:{len(m.dims)}" for m in d.members]
        lines.append("\t".join([d.name, f"{d.fingerprint:016x}", *members]))
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f


def harness(classes, types_file, *flags) -> list:
    return [JAVA, *JVM, "-cp", f"{classes}:{lcm_jar()}", "Harness", str(types_file), *flags]


def _java_files(root: Path) -> set:
    return {p.relative_to(root).as_posix() for p in root.rglob("*.java")}


def test_file_layout_matches_lcmgen(java_out, corpus_files):
    real = oracle.real_lcmgen(["-j", "--jpath", "{out}"])
    ours = _java_files(java_out)
    assert ours - _java_files(real) == {"nerve_lcm/Codec.java"}
    assert _java_files(real) <= ours


def test_bytecode_is_java_8(classes):
    for p in [classes / "seed" / "laser_t.class", classes / "nerve_lcm" / "Codec.class"]:
        major = int.from_bytes(p.read_bytes()[6:8], "big")
        assert major == 52, f"{p}: class file version {major}, not Java 8's 52"


def test_api_constants_and_fingerprints_match_lcmgen(classes, types_file, type_descs):
    proc = subprocess.run(harness(classes, types_file, "--api", LCMGEN_PREFIX), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:] + proc.stdout
    assert f"api checked: {len(type_descs)} types, 0 problems" in proc.stdout, proc.stdout


def test_roundtrip_byte_identical_to_real_lcm_and_to_lcmgen(classes, types_file):
    cases = oracle.cases(seed=7, per_type=60)
    oracle.run_harness(harness(classes, types_file, "--compare", LCMGEN_PREFIX), cases)


def test_malformed_inputs_give_ioexceptions(classes, types_file, real_cases):
    blobs = oracle.bad_blobs(real_cases, seed=3, flips=16, max_per_type=4)
    oracle.run_harness_bad(harness(classes, types_file), blobs)


def _node(depth: int) -> bytes:
    """lcmtest.node_t nested `depth` levels deep (one child per level)."""
    fp = oracle.desc_by_name()["lcmtest.node_t"].fingerprint
    return fp.to_bytes(8, "big") + b"\x00\x00\x00\x01" * depth + b"\x00\x00\x00\x00"


def test_hostile_nesting_and_counts_are_rejected(classes, types_file):
    descs = oracle.desc_by_name()
    holds = descs["feat.holds_empty_t"].fingerprint.to_bytes(8, "big")
    laser = descs["seed.laser_t"].fingerprint.to_bytes(8, "big")
    image = descs["seed.image_t"].fingerprint.to_bytes(8, "big")
    blobs = [
        oracle.BadBlob("lcmtest.node_t", _node(200_000), False, "200,000 levels of nesting"),
        oracle.BadBlob("lcmtest.node_t", _node(100), False, "100 levels"),
        oracle.BadBlob("feat.holds_empty_t", holds + b"\x7f\xff\xff\xff", False, "2^31-1 empty elements"),
        oracle.BadBlob("feat.holds_empty_t", holds + b"\xff\xff\xff\xff", True, "negative count"),
        oracle.BadBlob("seed.laser_t", laser + bytes(8) + b"\x7f\xff\xff\xff" + bytes(64), True, "2^31-1 floats"),
        oracle.BadBlob("seed.image_t", image + bytes(20) + b"\x40\x00\x00\x00" + bytes(64), True, "1 GiB of bytes"),
    ]
    replies = oracle.run_harness_bad(harness(classes, types_file), blobs)
    assert [r["ok"] for r in replies] == [False, True, False, False, False, False], replies


def test_empty_elements_stop_at_the_slack_every_language_uses(classes, types_file):
    replies = oracle.run_harness_bad(harness(classes, types_file), oracle.slack_blobs())
    assert [r["ok"] for r in replies] == [True, False], replies[1]


def test_jmkdir_false_needs_existing_directories(nerve_bin, tmp_path):
    lcm = oracle.CORPUS / "seed" / "laser_t.lcm"
    out = tmp_path / "j"
    out.mkdir()
    proc = subprocess.run([str(nerve_bin), "gen", "-j", "--jpath", str(out), "--jmkdir=false", str(lcm)],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and not (out / "seed").exists(), proc.stderr
    (out / "seed").mkdir()
    (out / "nerve_lcm").mkdir()
    proc = subprocess.run([str(nerve_bin), "gen", "-j", "--jpath", str(out), "--jmkdir=false", str(lcm)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (out / "seed" / "laser_t.java").exists()
