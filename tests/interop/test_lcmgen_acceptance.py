"""A differential test of the parser: many small `.lcm` inputs, each given to the real lcm-gen 1.5.3 (`-d`) and to
`nerve gen --print-fingerprints`. Both must accept or both reject; when both accept, every fingerprint must be equal.

The deliberate deviations are listed with each input (`deviation=`) and the reason, in DEVIATIONS. When nerve
rejects, it must exit 1 and print `file:line:col: error: message`, then the source line and a caret under the column.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import oracle

DEVIATIONS = {
    "braces": "lcm-gen needs whitespace around `{` and `}` (`a_t{` is one word to it): a quirk that only rejects "
              "sensible input, so nerve accepts it (issue 2).",
    "exponent_plus": "lcm-gen splits `1e+3` at the operator `+` and rejects it: nerve reads one number (issue 2).",
    "slashes": "`//` and `/*` always start a comment in nerve; lcm-gen glues them to a preceding word (`a//`), which "
               "only makes it reject the line or accept a member named `a//` that no generator can compile.",
    "missing_type": "lcm-gen never checks that a referenced type exists; nerve rejects a type found neither in the "
                    "inputs nor on the include path (issue 2).",
    "nonpositive_const_dim": "lcm-gen takes a const dimension without checking its value; a size <= 0 could never "
                             "be encoded, so nerve rejects it.",
    "bad_type_name": "lcm-gen checks the first character of member names only; a struct or package name starting "
                     "with a digit (`struct 9s_t`, `package 1p`) is accepted, and every generator then writes code "
                     "that does not compile (`class 9s_t`). nerve rejects it.",
    "bad_dim_literal": "lcm-gen takes any word starting with a digit as a constant dimension (`[1.5]`, `[1e3]`, "
                       "`[3x]`: strtol reads a prefix) and copies the text into code no compiler accepts. nerve "
                       "rejects a dimension that is not a whole C integer literal.",
    "self_dim": "lcm-gen accepts `int32_t a[a]` (the member is in its own scope); an array cannot be its own "
                "count, so nothing could be encoded. nerve rejects it as an unknown array size.",
    "double_range": "lcm-gen range-checks float consts but not double ones, so `1e309` (infinity) is accepted and "
                    "copied into code that C compilers warn about and Rust rejects. nerve rejects it.",
    "package_reset": "lcm-gen carries `package` from one input file to the next (the result depends on file order); "
                     "nerve starts every file without a package.",
}


@dataclass
class Snippet:
    name: str
    # One file's text, or several files {name: text} given in this order.
    text: str | dict
    # None: nerve and lcm-gen must agree. Otherwise a key of DEVIATIONS.
    deviation: str | None = None
    # For documentation and a sanity check: whether lcm-gen accepts it.
    lcmgen_accepts: bool | None = None
    # Fingerprints to use instead of those computed from `lcm-gen -d` (which cannot show enum hashes).
    expect: dict | None = None
    files: dict = field(init=False)

    def __post_init__(self):
        self.files = self.text if isinstance(self.text, dict) else {"t.lcm": self.text}


def S(name, text, lcmgen_accepts=None, deviation=None, expect=None):
    return Snippet(name, text, deviation, lcmgen_accepts, expect)


def st(body: str, pkg: str = "package p;\n") -> str:
    return f"{pkg}struct s_t {{\n{body}\n}}\n"


SNIPPETS = [
    # --- structure: packages, several structs, empty structs --------------------------------------------------
    S("empty_file", "", True),
    S("only_comments", "// nothing\n/* here */\n", True),
    S("package_only", "package p;\n", True),
    S("empty_struct", "package p;\nstruct e_t { }\n", True),
    S("no_package", "struct s_t { int32_t x; }\n", True),
    S("two_structs", "package p;\nstruct a_t { int32_t x; }\nstruct b_t { a_t a; }\n", True),
    S("dotted_package", "package a.b.c;\nstruct s_t { int8_t x; }\n", True),
    S("dotted_struct_name", "package p;\nstruct q.s_t { r_t r; }\nstruct p.r_t { int8_t x; }\n", True),
    S("package_twice", "package a;\nstruct s_t { int8_t x; }\npackage b;\nstruct s_t { int8_t y; }\n", True),
    S("package_missing_semicolon", "package p\nstruct s_t { int8_t x; }\n", False),
    S("package_bad_name", "package 1p;\nstruct s_t { int8_t x; }\n", True, "bad_type_name"),
    S("package_no_name", "package ;\n"),
    S("top_level_garbage", "package p;\nfoo s_t { }\n", False),
    S("top_level_semicolon", "package p;\n;\nstruct s_t { }\n", False),
    S("struct_missing_brace", "package p;\nstruct s_t int32_t x; }\n", False),
    S("struct_missing_name", "package p;\nstruct { int32_t x; }\n", False),
    S("struct_bad_name", "package p;\nstruct 9s_t { int32_t x; }\n", True, "bad_type_name"),
    S("struct_eof", "package p;\nstruct s_t { int32_t x;\n", False),
    S("struct_eof_after_name", "package p;\nstruct s_t\n", False),
    S("struct_eof_in_member", "package p;\nstruct s_t { int32_t\n", False),
    S("struct_eof_in_dim", "package p;\nstruct s_t { int32_t n; int32_t a[n\n", False),
    S("missing_semicolon", st("int32_t x\nint32_t y;"), False),
    S("missing_semicolon_before_brace", st("int32_t x"), False),
    S("duplicate_type", "package p;\nstruct s_t { int8_t x; }\nstruct s_t { int8_t y; }\n", False),
    S("duplicate_type_two_files", {"a.lcm": "package p;\nstruct s_t { int8_t x; }\n",
                                   "b.lcm": "package p;\nstruct s_t { int8_t x; }\n"}, False),
    S("same_name_other_package", {"a.lcm": "package p;\nstruct s_t { int8_t x; }\n",
                                  "b.lcm": "package q;\nstruct s_t { int8_t x; }\n"}, True),
    S("nested_struct", st("struct in_t { int8_t x; }"), False),
    S("nested_enum", st("enum e_t { A }"), False),
    # --- members and types ---------------------------------------------------------------------------------
    S("every_primitive", st("int8_t a; int16_t b; int32_t c; int64_t d; float e; double f; string g; boolean h;"
                            " byte i;"), True),
    S("several_names_per_line", st("int32_t a, b, c;\ndouble d[a], e[b][2];"), True),
    S("member_named_like_keywords", st("int32_t package; int32_t struct_; int32_t const_; int64_t int64_t;"
                                       " double class;"), True),
    S("member_named_struct", st("int32_t struct;"), None),
    S("member_named_const", st("int32_t const;"), None),
    S("member_bad_name_digit", st("int32_t 1x;"), False),
    S("member_bad_name_unicode_first", st("int32_t ängle;"), False),
    S("member_unicode_later", st("int32_t aé; double bé[2];"), True),
    S("member_long_name", st("int8_t " + "n" * 200 + ";"), True),
    S("member_name_255", st("int8_t " + "m" * 255 + ";"), True),
    S("member_name_256", st("int8_t " + "m" * 256 + ";"), True),
    S("duplicate_member", st("int32_t x; double x;"), False),
    S("duplicate_member_same_line", st("int32_t x, x;"), False),
    S("duplicate_member_and_const", st("const int32_t x = 1; int32_t x;"), False),
    S("duplicate_const", st("const int32_t X = 1, X = 2;"), False),
    S("int_type_warning", "package p;\nstruct int { int8_t v; }\nstruct s_t { int x; }\n", True),
    S("type_named_int_missing", st("int x;"), True, "missing_type"),
    S("missing_type", st("nonexistent_t x;"), True, "missing_type"),
    S("missing_type_dotted", st("q.nonexistent_t x;"), True, "missing_type"),
    S("bad_type_name", st("9x_t x;"), False),
    S("type_with_operator", st("int32_t+ x;"), False),
    S("comma_without_name", st("int32_t a, ;"), False),
    S("self_scalar", "package p;\nstruct s_t { s_t me; }\n", True),
    S("self_array", "package p;\nstruct n_t { int32_t n; n_t kids[n]; }\n", True),
    S("same_type_twice", "package p;\nstruct a_t { int8_t x; }\nstruct b_t { a_t one; a_t two[2]; }\n", True),
    S("mutual_recursion", "package p;\nstruct a_t { b_t b[0x1]; c_t c[1]; }\n"
                          "struct b_t { int8_t n; a_t a[n]; }\nstruct c_t { int8_t n; b_t b[n]; }\n", True),
    S("cross_package", {"a.lcm": "package a;\nstruct x_t { int8_t v; }\n",
                        "b.lcm": "package b;\nstruct y_t { a.x_t x; int8_t n; a.x_t xs[n]; }\n"}, True),
    # `lcm-gen -d` does not print enum hashes: the expected value is real lcm-gen -p's _get_packed_fingerprint().
    S("enum_member", "package p;\nenum color_t { RED=1, GREEN, BLUE=5 }\nstruct s_t { color_t c; }\n", True,
      expect={"p.s_t": 0x0EEB4787F552916C}),
    # --- arrays ------------------------------------------------------------------------------------------
    S("fixed_dims", st("int32_t a[1]; int32_t b[2][3]; string c[4]; byte d[2147483647];"), True),
    S("hex_dim", st("int32_t a[0x2];"), True),
    S("hex_dim_caps", st("int32_t a[0X1F];"), True),
    S("octal_dim", st("int32_t a[010];"), True),
    S("zero_dim", st("int32_t a[0];"), False),
    S("negative_dim", st("int32_t a[-1];"), False),
    S("empty_dim", st("int32_t a[];"), False),
    S("float_dim", st("int32_t a[1.5];"), True, "bad_dim_literal"),
    S("float_exponent_dim", st("int32_t a[1e3];"), True, "bad_dim_literal"),
    S("dim_trailing_junk", st("int32_t a[3x];"), True, "bad_dim_literal"),
    S("dim_unclosed", st("int32_t a[3;"), False),
    S("dim_operator", st("int32_t a[+];"), False),
    S("var_dims_every_int_type", st("int8_t a; int16_t b; int32_t c; int64_t d;\n"
                                    "double w[a]; double x[b]; double y[c]; double z[d];"), True),
    S("unknown_dim", st("int32_t a[n]; int32_t n;"), False),
    S("dim_declared_later", st("int32_t a[n];\nint32_t n;"), False),
    S("dim_float_member", st("float n; int32_t a[n];"), False),
    S("dim_double_member", st("double n; int32_t a[n];"), False),
    S("dim_byte_member", st("byte n; int32_t a[n];"), False),
    S("dim_boolean_member", st("boolean n; int32_t a[n];"), False),
    S("dim_string_member", st("string n; int32_t a[n];"), False),
    S("dim_struct_member", "package p;\nstruct x_t { int8_t v; }\nstruct s_t { x_t n; int32_t a[n]; }\n", False),
    S("dim_array_member", st("int32_t n[2]; int32_t a[n];"), False),
    S("dim_self", st("int32_t a[a];"), True, "self_dim"),
    S("dim_same_line_earlier", st("int32_t n, a[n];"), True),
    S("mixed_dims", st("int32_t n; double p[n][2]; float q[2][n]; int8_t r[2][n][3];"), True),
    S("const_dim", st("const int32_t N = 3; int32_t a[N];"), True),
    S("const_dim_hex", st("const int32_t N = 0x3; int32_t a[N];"), True),
    S("const_dim_every_int_type", st("const int8_t A = 1; const int16_t B = 2; const int32_t C = 3;"
                                     " const int64_t D = 4;\nint8_t a[A][B][C][D];"), True),
    S("const_dim_declared_later", st("int32_t a[N]; const int32_t N = 3;"), False),
    S("const_dim_float", st("const double N = 3; int32_t a[N];"), False),
    S("const_dim_zero", st("const int32_t N = 0; int32_t a[N];"), True, "nonpositive_const_dim"),
    S("const_dim_negative", st("const int32_t N = -5; int32_t a[N];"), True, "nonpositive_const_dim"),
    S("many_dims", st("int8_t n; int8_t a[2][n][1][n][3][n][1][2];"), True),
    # --- constants ---------------------------------------------------------------------------------------
    S("consts_every_form", st("const int8_t A = -128, B = 127, C = 0x7f, D = 017;\n"
                              "const int16_t E = -32768, F = 32767;\n"
                              "const int32_t G = -2147483648, H = 2147483647, I = -0x10;\n"
                              "const int64_t J = -9223372036854775808, K = 0xffffffffffffffff;\n"
                              "const float L = .5, M = 1.5e-3, N = -2, O = 3.4e38, P = 1.;\n"
                              "const double Q = 1.7976931348623157e308, R = 2.5E-3;"), True),
    S("const_only_struct", st("const int32_t A = 1;"), True),
    S("const_string", st('const string S = "x";'), False),
    S("const_boolean", st("const boolean B = 1;"), False),
    S("const_byte", st("const byte B = 1;"), False),
    S("const_struct_type", st("const s_t X = 1;"), False),
    S("const_int_from_float", st("const int32_t A = 1.5;"), False),
    S("const_int_garbage", st("const int32_t A = abc;"), False),
    S("const_int_trailing_junk", st("const int32_t A = 12abc;"), False),
    S("const_int8_too_big", st("const int8_t A = 128;"), False),
    S("const_int8_too_small", st("const int8_t A = -129;"), False),
    S("const_int16_too_big", st("const int16_t A = 32768;"), False),
    S("const_int32_too_big", st("const int32_t A = 2147483648;"), False),
    S("const_int32_hex_too_big", st("const int32_t A = 0x80000000;"), False),
    S("const_int64_wraps", st("const int64_t A = 0xffffffffffffffff;"), True),
    S("const_float_too_big", st("const float F = 3.5e38;"), False),
    S("const_double_too_big", st("const double D = 1e309;"), True, "double_range"),
    S("const_float_garbage", st("const double D = x;"), False),
    S("const_float_exponent_plus", st("const double D = 1e+3;"), False, "exponent_plus"),
    S("const_missing_value", st("const int32_t A = ;"), False),
    S("const_missing_equals", st("const int32_t A 1;"), False),
    S("const_missing_semicolon", st("const int32_t A = 1\nint32_t x;"), False),
    S("const_without_type", st("const A = 1;"), False),
    S("const_char_literal", st("const int8_t A = 'a';"), False),
    # --- lexical -----------------------------------------------------------------------------------------
    S("braces_without_spaces", "package p;\nstruct a_t{int32_t x;}\n", False, "braces"),
    S("close_brace_glued", "package p;\nstruct a_t { int32_t x;}\nstruct b_t { }struct c_t { }\n", False, "braces"),
    S("semicolon_then_brace", "package p;\nstruct a_t { int32_t x;}\n", True),
    S("spaces_everywhere", "package p ;\nstruct a_t {\n\tint32_t  x [ 2 ] ;\n}\n", True),
    S("no_trailing_newline", "package p;\nstruct a_t { int32_t x; }", True),
    S("crlf_line_ends", "package p;\r\nstruct a_t {\r\n int32_t x;\r\n}\r\n", True),
    S("tabs", "package\tp;\nstruct\ta_t\t{\tint32_t\tx;\t}\n", True),
    S("comments_everywhere", "// file\n/* block */ package /* a */ p /* b */ ; // c\n/** doc */ struct /* d */ a_t"
                             " /* e */ { // f\n int32_t /* g */ n /* h */ ; int32_t a [ /* i */ n /* j */ ] /* k */"
                             " ; const /* l */ int32_t /* m */ K /* n */ = /* o */ 1 /* p */ ; /**/ //\n} // q\n",
      True),
    S("comment_after_semicolon", st("int32_t x;// note\nint32_t y;"), True),
    S("comment_glued_to_word", st("int32_t x// note\n;"), False, "slashes"),
    S("block_comment_glued", st("int32_t x/* note */;"), False, "slashes"),
    S("block_comment_with_slashes", st("/* // inside */ int32_t x;"), True),
    S("unterminated_block_comment", st("int32_t x; /* never closed"), None),
    S("doc_comments", "/// file doc\npackage p;\n/// struct doc\n/// more\nstruct a_t {\n  /// member doc\n"
                      "  int32_t x; ///< trailing\n}\n", True),
    S("string_literal_token", st('"x" int32_t x;'), False),
    S("operator_run_as_type", st("== x;"), False),
    S("parentheses", st("int32_t x();"), False),
    S("colon", st("int32_t x:3;"), False),
    # --- several files -----------------------------------------------------------------------------------
    S("two_files_two_packages", {"a.lcm": "package a;\nstruct x_t { int8_t v; }\n",
                                 "b.lcm": "package b;\nstruct x_t { int16_t v; }\n"}, True),
    S("package_carried_across_files", {"a.lcm": "package a;\nstruct x_t { int8_t v; }\n",
                                       "b.lcm": "struct y_t { int8_t w; }\n"}, True, "package_reset"),
    S("second_file_has_error", {"a.lcm": "package a;\nstruct x_t { int8_t v; }\n",
                                "b.lcm": "package b;\nstruct y_t { int8_t v[0]; }\n"}, False),
]


def _write(tmp: Path, files: dict) -> list:
    paths = []
    for name, text in files.items():
        p = tmp / name
        p.write_bytes(text.encode("utf-8"))
        paths.append(p)
    return paths


def real_lcmgen(paths: list) -> tuple:
    """(accepted, {name: fingerprint}) from the real `lcm-gen -d`; F is computed from its base hashes (spec 2.2).
    A type that reaches an undeclared type has no fingerprint (None): lcm-gen does not check, nerve rejects it."""
    proc = subprocess.run([str(oracle.LCM_GEN), "-d", *map(str, paths)], capture_output=True, text=True)
    if proc.returncode != 0:
        return False, proc.stdout + proc.stderr
    bases = oracle.lcmgen_debug(paths)
    return True, {n: oracle.fingerprint_from_base(n, bases) if _closed(n, bases) else None for n in bases}


def _closed(name: str, bases: dict, seen=None) -> bool:
    """Whether every type `name` reaches is declared (else F is not defined; nerve rejects such input)."""
    seen = set() if seen is None else seen
    if name in seen:
        return True
    if name not in bases:
        return False
    seen.add(name)
    return all(m.type in oracle.PRIMITIVES or _closed(m.type, bases, seen) for m in bases[name][1])


def nerve(nerve_bin: Path, paths: list) -> tuple:
    proc = subprocess.run([str(nerve_bin), "gen", "--print-fingerprints", *map(str, paths)], capture_output=True,
                          text=True)
    return proc.returncode, proc.stdout, proc.stderr


_DIAG = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.+)$")


def check_error_format(stderr: str, paths: list) -> None:
    """Every error is `file:line:col: error: message`, followed by the source line and a caret under the column."""
    lines = stderr.splitlines()
    texts = {str(p): p.read_text(encoding="utf-8").splitlines() for p in paths}
    errors = [i for i, l in enumerate(lines) if _DIAG.match(l)]
    assert errors, f"no `file:line:col: error: message` line in:\n{stderr}"
    for i in errors:
        m = _DIAG.match(lines[i])
        assert m["file"] in texts, f"unknown file in {lines[i]!r}"
        line, col = int(m["line"]), int(m["col"])
        src = texts[m["file"]]
        assert 1 <= line <= max(len(src), 1), lines[i]
        expected_src = src[line - 1] if src else ""
        assert lines[i + 1] == expected_src.rstrip("\r"), f"source line after {lines[i]!r}"
        caret = lines[i + 2]
        assert caret.rstrip().endswith("^") and caret.count("^") == 1, f"caret line {caret!r}"
        assert len(caret.rstrip()) == col, f"caret at {len(caret.rstrip())}, column {col}: {lines[i]!r}"


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[s.name for s in SNIPPETS])
def test_nerve_accepts_what_lcmgen_accepts(snippet: Snippet, nerve_bin, tmp_path):
    paths = _write(tmp_path, snippet.files)
    real_ok, real = real_lcmgen(paths)
    if snippet.lcmgen_accepts is not None:
        assert real_ok == snippet.lcmgen_accepts, f"lcm-gen's behaviour changed: {real}"
    code, out, err = nerve(nerve_bin, paths)
    assert code in (0, 1), f"exit {code}: {err}"
    nerve_ok = code == 0
    dev = snippet.deviation
    if dev is not None:
        assert dev in DEVIATIONS
    if dev in ("braces", "exponent_plus", "slashes") and not real_ok:
        assert nerve_ok, f"nerve should accept what only lcm-gen's quirk rejects:\n{err}"
        return
    if dev in ("missing_type", "nonpositive_const_dim", "bad_type_name", "bad_dim_literal", "self_dim",
               "double_range"):
        assert real_ok and not nerve_ok, (real, out)
        check_error_format(err, paths)
        return
    assert nerve_ok == real_ok, (f"lcm-gen {'accepts' if real_ok else 'rejects'}, nerve "
                                 f"{'accepts' if nerve_ok else 'rejects'}:\nlcm-gen: {real}\nnerve: {out}{err}")
    if not nerve_ok:
        check_error_format(err, paths)
        return
    got = dict(line.split() for line in out.splitlines())
    if snippet.expect:
        real = snippet.expect
    if dev == "package_reset":
        # lcm-gen names the second file's types after the first file's package; nerve gives them none. The
        # fingerprints still agree once the names are matched up.
        real = {n.rsplit(".", 1)[-1]: f for n, f in real.items()}
        got = {n.rsplit(".", 1)[-1]: f for n, f in got.items()}
        assert sorted(got) == sorted(real)
    assert sorted(got) == sorted(real), (got, real)
    for name, fp in real.items():
        assert got[name] == f"0x{fp:016x}", name


def test_every_deviation_is_exercised():
    assert {s.deviation for s in SNIPPETS if s.deviation} == set(DEVIATIONS)


def test_package_reset_per_file(nerve_bin, tmp_path):
    """The deviation itself: with nerve, file b's undeclared-package type has no package, whatever the file order."""
    a = tmp_path / "a.lcm"
    b = tmp_path / "b.lcm"
    a.write_text("package a;\nstruct x_t { int8_t v; }\n")
    b.write_text("struct y_t { a.x_t x; }\n")
    for order in ([a, b], [b, a]):
        code, out, err = nerve(nerve_bin, order)
        assert code == 0, err
        assert [l.split()[0] for l in out.splitlines()] == ["a.x_t", "y_t"]
