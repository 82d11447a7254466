"""`nerve gen` end to end: exit codes (0 ok, 1 rejected input, 2 no language), the error format, `-I`, and
`--print-fingerprints` sorted by name."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import oracle


def run(nerve_bin: Path, *args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(nerve_bin), "gen", *map(str, args)], capture_output=True, text=True, cwd=cwd)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_print_fingerprints_is_sorted_by_full_name(nerve_bin, tmp_path):
    f = write(tmp_path / "t.lcm", "package zz;\nstruct b_t { int8_t x; }\nstruct a_t { b_t b; }\n"
                                  "struct aa.z_t { int8_t y; }\nstruct zz.a0_t { }\n")
    p = run(nerve_bin, "--print-fingerprints", f)
    assert p.returncode == 0, p.stderr
    names = [l.split()[0] for l in p.stdout.splitlines()]
    assert names == ["aa.z_t", "zz.a0_t", "zz.a_t", "zz.b_t"]
    assert all(re.fullmatch(r"\S+ 0x[0-9a-f]{16}", l) for l in p.stdout.splitlines())


def test_print_fingerprints_over_the_corpus_exits_0(nerve_bin, corpus_files):
    p = run(nerve_bin, "--print-fingerprints", *corpus_files)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    assert len(p.stdout.splitlines()) == len(oracle.type_descriptors())


def test_no_language_is_rejected(nerve_bin, tmp_path):
    f = write(tmp_path / "t.lcm", "package p;\nstruct s_t { int8_t x; }\n")
    p = run(nerve_bin, f)
    assert p.returncode == 1
    assert "no language" in p.stderr
    assert p.stdout == ""


def test_no_files_is_a_usage_error(nerve_bin):
    p = run(nerve_bin, "--print-fingerprints")
    assert p.returncode == 1
    assert p.stdout == ""


def test_rejected_input_exits_1_with_file_line_col_source_and_caret(nerve_bin, tmp_path):
    f = write(tmp_path / "bad.lcm", "package p;\nstruct s_t {\n    int32_t a[n];\n}\n")
    p = run(nerve_bin, "--print-fingerprints", f)
    assert p.returncode == 1
    assert p.stdout == ""
    lines = p.stderr.splitlines()
    m = re.fullmatch(r"(.+):(\d+):(\d+): error: (.+)", lines[0])
    assert m, lines[0]
    assert (m[1], m[2], m[3]) == (str(f), "3", "15")
    assert "n" in m[4]
    assert lines[1] == "    int32_t a[n];"
    assert lines[2] == " " * 14 + "^"


def test_every_error_in_a_file_is_reported(nerve_bin, tmp_path):
    f = write(tmp_path / "bad.lcm", "package p;\nstruct s_t {\n  int32_t a[0];\n  int32_t x, x;\n"
                                    "  const int8_t C = 300;\n}\n")
    p = run(nerve_bin, "--print-fingerprints", f)
    assert p.returncode == 1
    lines = [l for l in p.stderr.splitlines() if ": error: " in l]
    assert [l.split(":")[1] for l in lines] == ["3", "4", "5"]


def test_errors_in_several_files_name_each_file(nerve_bin, tmp_path):
    a = write(tmp_path / "a.lcm", "package p;\nstruct a_t { int8_t v[0]; }\n")
    b = write(tmp_path / "b.lcm", "package p;\nstruct b_t { int8_t x, x; }\n")
    p = run(nerve_bin, "--print-fingerprints", a, b)
    assert p.returncode == 1
    files = {l.split(":")[0] for l in p.stderr.splitlines() if ": error: " in l}
    assert files == {str(a), str(b)}


def test_rejected_input_with_a_language_writes_nothing(nerve_bin, tmp_path):
    f = write(tmp_path / "bad.lcm", "package p;\nstruct s_t { int8_t v[0]; }\n")
    out = tmp_path / "out"
    out.mkdir()
    p = run(nerve_bin, "-p", "--ppath", out, f)
    assert p.returncode == 1
    assert list(out.iterdir()) == []


def test_missing_file_exits_1(nerve_bin, tmp_path):
    p = run(nerve_bin, "--print-fingerprints", tmp_path / "nope.lcm")
    assert p.returncode == 1
    assert "nope.lcm" in p.stderr


def test_warning_for_int_type_keeps_exit_0(nerve_bin, tmp_path):
    f = write(tmp_path / "t.lcm", "package p;\nstruct int { int8_t v; }\nstruct s_t { int x; }\n")
    p = run(nerve_bin, "--print-fingerprints", f)
    assert p.returncode == 0, p.stderr
    assert re.search(r"t\.lcm:3:14: warning: int type should probably be", p.stderr), p.stderr


def test_missing_type_is_rejected(nerve_bin, tmp_path):
    f = write(tmp_path / "t.lcm", "package p;\nstruct s_t { q.other_t o; }\n")
    p = run(nerve_bin, "--print-fingerprints", f)
    assert p.returncode == 1
    assert re.match(rf"{re.escape(str(f))}:2:24: error: .*q\.other_t", p.stderr), p.stderr


def test_include_path_finds_a_type(nerve_bin, tmp_path):
    inc = tmp_path / "inc"
    write(inc / "q" / "other_t.lcm", "package q;\nstruct other_t { int32_t v; }\n")
    write(inc / "q" / "unused_t.lcm", "package q;\nstruct unused_t { int32_t v[0]; }\n")  # broken, never needed
    f = write(tmp_path / "t.lcm", "package p;\nstruct s_t { q.other_t o; }\n")
    p = run(nerve_bin, "--print-fingerprints", "-I", inc, f)
    assert p.returncode == 0, p.stderr
    # Only the input's types are printed; the fingerprint includes the included type's.
    with_both = write(tmp_path / "both.lcm", "package q;\nstruct other_t { int32_t v; }\n")
    q = run(nerve_bin, "--print-fingerprints", f, with_both)
    assert q.returncode == 0, q.stderr
    fp_both = dict(l.split() for l in q.stdout.splitlines())
    assert dict(l.split() for l in p.stdout.splitlines()) == {"p.s_t": fp_both["p.s_t"]}


def test_include_path_transitively(nerve_bin, tmp_path):
    inc = tmp_path / "inc"
    write(inc / "a.lcm", "package q;\nstruct mid_t { r.leaf_t leaf; }\n")
    write(inc / "deeper" / "b.lcm", "package r;\nstruct leaf_t { string s; }\n")
    f = write(tmp_path / "t.lcm", "package p;\nstruct s_t { q.mid_t m; }\n")
    p = run(nerve_bin, "--print-fingerprints", "--include", inc, f)
    assert p.returncode == 0, p.stderr
    assert [l.split()[0] for l in p.stdout.splitlines()] == ["p.s_t"]


def test_include_path_without_the_type_is_rejected(nerve_bin, tmp_path):
    inc = tmp_path / "inc"
    write(inc / "q" / "other_t.lcm", "package q;\nstruct other_t { int32_t v; }\n")
    f = write(tmp_path / "t.lcm", "package p;\nstruct s_t { q.missing_t o; }\n")
    p = run(nerve_bin, "--print-fingerprints", "-I", inc, f)
    assert p.returncode == 1
    assert "q.missing_t" in p.stderr


def test_include_path_error_in_a_needed_file_is_reported(nerve_bin, tmp_path):
    inc = tmp_path / "inc"
    bad = write(inc / "q.lcm", "package q;\nstruct other_t { int32_t v[0]; }\n")
    f = write(tmp_path / "t.lcm", "package p;\nstruct s_t { q.other_t o; }\n")
    p = run(nerve_bin, "--print-fingerprints", "-I", inc, f)
    assert p.returncode == 1
    assert p.stderr.startswith(f"{bad}:2:"), p.stderr


def test_include_path_gives_the_same_fingerprints_as_the_corpus(nerve_bin, tmp_path):
    """deep.pkg.uses_all_t reaches every package: with only its own file given and the corpus as include path,
    its fingerprint equals the real lcm-gen's."""
    f = oracle.CORPUS / "deep" / "leaf_t.lcm"
    p = run(nerve_bin, "--print-fingerprints", "-I", oracle.CORPUS, f)
    assert p.returncode == 0, p.stderr
    got = dict(l.split() for l in p.stdout.splitlines())
    want = oracle.desc_by_name()["deep.pkg.uses_all_t"].fingerprint
    assert got["deep.pkg.uses_all_t"] == f"0x{want:016x}"
