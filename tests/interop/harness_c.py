"""Builds the C interop harness: `nerve gen -c` over the corpus, plus a harness.c speaking the harness protocol.

The JSON printers are generated here from ``oracle.type_descriptors()`` (what the real lcm-gen says the members
are), so they check the generated struct layout too: a member with the wrong name, C type or dimensions fails to
compile or prints the wrong value.

Protocol (tests/interop/README.md), one JSON line per ``<type> <hex>`` input line:

    {"ok": true, "reencoded": "<hex>", "value": <json>}
    {"ok": false, "error": "<decoder's error>"}

Each input is copied into a heap buffer of exactly its length, so AddressSanitizer catches any over-read. After a
successful decode the harness also checks that ``_encoded_size`` equals the bytes ``_encode`` writes, that encoding
into one byte less fails, and that ``_copy`` encodes to the same bytes (reported as ``ok: false`` if not).

``harness --mutate N SEED`` instead reads the same lines and, for each input, decodes N random mutations of it in
process (bit flips, byte overwrites, truncations, counts and lengths forced to extreme values), re-encoding every
one that decodes; it prints one summary line. Run under the sanitizers this is a bounded fuzz of the decoders.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import oracle

C_TYPES = {"int8_t": "int8_t", "int16_t": "int16_t", "int32_t": "int32_t", "int64_t": "int64_t", "float": "float",
           "double": "double", "string": "char*", "boolean": "int8_t", "byte": "uint8_t"}

SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
WARN = ["-Wall", "-Wextra", "-Werror"]


def c_name(full_name: str) -> str:
    """`deep.pkg.leaf_t` -> `deep_pkg_leaf_t` (the generator's naming rule, lcm-gen's too)."""
    return full_name.replace(".", "_")


def _c_string(text: str) -> str:
    """A C string literal holding ``text`` (JSON-escaped already, so ASCII)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _printer(desc: oracle.TypeDesc) -> str:
    name = c_name(desc.name)
    lines = [f"static void print_{name}(const {name} *p)", "{"]
    lines.append("    (void) p;")
    lines.append('    fputc(\'{\', out);')
    for i, m in enumerate(desc.members):
        key = json.dumps(m.name, ensure_ascii=True) + ": "
        if i:
            key = ", " + key
        lines.append(f"    fputs({_c_string(key)}, out);")
        lines.extend("    " + line for line in _print_member(m, f"p->{m.name}", 0))
    lines.append('    fputc(\'}\', out);')
    lines.append("}")
    return "\n".join(lines)


def _print_member(m: oracle.MemberDesc, expr: str, level: int) -> list:
    if level == len(m.dims):
        if m.type in C_TYPES:
            return [f"print_{m.type}({expr});"]
        return [f"print_{c_name(m.type)}(&{expr});"]
    d = m.dims[level]
    count = str(d) if isinstance(d, int) else f"(long long) p->{d}"
    i = f"i{level}"
    body = _print_member(m, f"{expr}[{i}]", level + 1)
    return ["{", f"    long long {i};", "    fputc('[', out);",
            f"    for ({i} = 0; {i} < {count}; {i}++) {{", f"        if ({i}) fputs(\", \", out);",
            *("        " + b for b in body), "    }", "    fputc(']', out);", "}"]


RUNTIME_C = r'''
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *out;

static void print_int8_t(int8_t v) { fprintf(out, "%d", (int) v); }
static void print_int16_t(int16_t v) { fprintf(out, "%d", (int) v); }
static void print_int32_t(int32_t v) { fprintf(out, "%" PRId32, v); }
static void print_int64_t(int64_t v) { fprintf(out, "%" PRId64, v); }
static void print_byte(uint8_t v) { fprintf(out, "%u", (unsigned) v); }
static void print_boolean(int8_t v) { fputs(v ? "true" : "false", out); }

static void print_real(double v, int digits)
{
    if (isnan(v)) fputs("\"NaN\"", out);
    else if (isinf(v)) fputs(v > 0 ? "\"Infinity\"" : "\"-Infinity\"", out);
    else fprintf(out, "%.*g", digits, v);
}
static void print_float(float v) { print_real((double) v, 9); }
static void print_double(double v) { print_real(v, 17); }

/* A JSON string, ASCII only; bytes that are not valid UTF-8 (possible after a bit flip: C does not check) print as
 * U+FFFD. */
static void print_string(const char *s)
{
    const unsigned char *u = (const unsigned char *) s;
    fputc('"', out);
    while (*u) {
        unsigned c = *u;
        if (c == '"' || c == '\\') { fputc('\\', out); fputc((int) c, out); u++; }
        else if (c < 0x20) { fprintf(out, "\\u%04x", c); u++; }
        else if (c < 0x80) { fputc((int) c, out); u++; }
        else {
            int n = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
            int k, ok = n > 0;
            uint32_t cp = n == 4 ? c & 7 : n == 3 ? c & 15 : c & 31;
            for (k = 1; ok && k < n; k++) {
                if ((u[k] & 0xc0) != 0x80) ok = 0;
                else cp = (cp << 6) | (u[k] & 0x3f);
            }
            if (ok && ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp < 0xe000))) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff))))
                ok = 0;
            /* as \u escapes: the driver splits lines at U+0085, U+2028 and U+2029 too */
            if (ok && cp >= 0x10000) {
                cp -= 0x10000;
                fprintf(out, "\\u%04x\\u%04x", (unsigned) (0xd800 + (cp >> 10)), (unsigned) (0xdc00 + (cp & 0x3ff)));
                u += n;
            }
            else if (ok) { fprintf(out, "\\u%04x", (unsigned) cp); u += n; }
            else { fputs("\\ufffd", out); u++; }
        }
    }
    fputc('"', out);
}

static void print_hex(const uint8_t *b, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) fprintf(out, "%02x", b[i]);
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Reads one line (without the newline) into a growing buffer; returns 0 at end of input. */
static int read_line(char **line, size_t *cap)
{
    size_t n = 0;
    int c;
    while ((c = getchar()) != EOF && c != '\n') {
        if (n + 2 > *cap) {
            *cap = *cap ? *cap * 2 : 256;
            *line = (char *) realloc(*line, *cap);
            if (!*line) { fputs("out of memory\n", stderr); exit(3); }
        }
        (*line)[n++] = (char) c;
    }
    if (c == EOF && n == 0) return 0;
    if (!*line) { *cap = 1; *line = (char *) malloc(1); }
    (*line)[n] = 0;
    return 1;
}

static uint64_t rng_state;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

typedef int (*handler_t)(const uint8_t *data, int len, int print);
'''

HANDLER = r'''
static int handle_{n}(const uint8_t *data, int len, int print)
{{
    {n} v, *c;
    int got = {n}_decode(data, 0, len, &v);
    int size, wrote, ok = 1;
    uint8_t *enc, *enc2;
    const char *why = "";
    /* the allocation-free decode (_decode_arena) must accept and reject exactly what _decode does */
    size_t asz = (size_t) len * 8 + 65536;
    uint8_t *amem = (uint8_t *) malloc(asz);
    nerve_lcm_arena ar;
    {n} av;
    int ag;
    nerve_lcm_arena_init(&ar, amem, asz);
    ag = {n}_decode_arena(data, 0, len, &av, &ar);
    if (got < 0) {{
        free(amem);
        if (ag != got && ag != NERVE_LCM_ENOMEM) {{
            if (print) fprintf(out, "{{\"ok\": false, \"error\": \"harness: decode_arena gave %d where decode failed with %d\"}}\n", ag, got);
            return -1;
        }}
        if (print) fprintf(out, "{{\"ok\": false, \"error\": \"%s (%d)\"}}\n", nerve_lcm_strerror(got), got);
        return 0;
    }}
    size = {n}_encoded_size(&v);
    enc = (uint8_t *) malloc((size_t) size);
    wrote = {n}_encode(enc, 0, size, &v);
    if (wrote != size) {{ ok = 0; why = "encode wrote a different size than encoded_size"; }}
    else if ({n}_encode(enc, 0, size - 1, &v) >= 0) {{ ok = 0; why = "encode into one byte less succeeded"; }}
    if (ag != NERVE_LCM_ENOMEM) {{
        if (ag != got) {{ ok = 0; why = "decode_arena read another length than decode"; }}
        else {{
            enc2 = (uint8_t *) malloc((size_t) size);
            if ({n}_encode(enc2, 0, size, &av) != size || memcmp(enc, enc2, (size_t) size) != 0) {{
                ok = 0; why = "the decode_arena value encodes differently";
            }}
            free(enc2);
        }}
    }}
    free(amem);
    c = {n}_copy(&v);
    if (!c) {{ ok = 0; why = "copy failed"; }}
    else {{
        enc2 = (uint8_t *) malloc((size_t) size);
        if ({n}_encode(enc2, 0, size, c) != size || memcmp(enc, enc2, (size_t) size) != 0) {{
            ok = 0; why = "the copy encodes differently";
        }}
        free(enc2);
        {n}_destroy(c);
    }}
    if (print) {{
        if (!ok) fprintf(out, "{{\"ok\": false, \"error\": \"harness: %s\"}}\n", why);
        else {{
            fputs("{{\"ok\": true, \"reencoded\": \"", out);
            print_hex(enc, (size_t) wrote);
            fputs("\", \"value\": ", out);
            print_{n}(&v);
            fputs("}}\n", out);
        }}
    }}
    free(enc);
    {n}_decode_cleanup(&v);
    {n}_decode_cleanup(&v); /* a second cleanup must be harmless */
    return ok ? 1 : -1;
}}
'''

MAIN_C = r'''
struct entry { const char *name; handler_t handle; };
static const struct entry types[] = {
@ENTRIES@
};

static handler_t find(const char *name)
{
    size_t i;
    for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strcmp(types[i].name, name) == 0) return types[i].handle;
    return NULL;
}

/* One random mutation of data[0..len) into m; returns the new length. */
static int mutate(const uint8_t *data, int len, uint8_t *m)
{
    int n = len, k, i;
    memcpy(m, data, (size_t) len);
    switch (rng() % 6) {
    case 0: /* bit flips past the fingerprint */
        for (k = 1 + (int) (rng() % 3); k > 0 && len > 8; k--) {
            i = 8 + (int) (rng() % (uint64_t) (len - 8));
            m[i] ^= (uint8_t) (1u << (rng() % 8));
        }
        break;
    case 1: /* truncation */
        n = (int) (rng() % (uint64_t) (len + 1));
        break;
    case 2: case 3: { /* a 4-byte field forced to an extreme value (counts and string lengths are int32 or less) */
        static const uint32_t extremes[] = { 0x7fffffffu, 0x80000000u, 0xffffffffu, 0u, 0x01000000u, 0x00010000u,
                                             0x000000ffu, 0x0000ffffu };
        uint32_t v = extremes[rng() % 8];
        if (len >= 12) {
            i = 8 + (int) (rng() % (uint64_t) (len - 11));
            m[i] = (uint8_t) (v >> 24); m[i + 1] = (uint8_t) (v >> 16); m[i + 2] = (uint8_t) (v >> 8); m[i + 3] = (uint8_t) v;
        }
        break;
    }
    case 4: /* one byte overwritten with 0x00, 0x7f, 0x80 or 0xff */
        if (len > 8) m[8 + (int) (rng() % (uint64_t) (len - 8))] = (uint8_t) ((const int[]) {0, 0x7f, 0x80, 0xff})[rng() % 4];
        break;
    default: /* a truncation of a bit-flipped message */
        if (len > 8) m[8 + (int) (rng() % (uint64_t) (len - 8))] ^= (uint8_t) (1u << (rng() % 8));
        n = (int) (rng() % (uint64_t) (len + 1));
        break;
    }
    return n;
}

int main(int argc, char **argv)
{
    char *line = NULL;
    size_t cap = 0;
    long mutations = 0, decoded = 0, rejected = 0, failed = 0;
    int mutate_n = 0;
    out = stdout;
    if (argc == 4 && strcmp(argv[1], "--mutate") == 0) {
        mutate_n = atoi(argv[2]);
        rng_state = (uint64_t) strtoull(argv[3], NULL, 10) * 2654435761u + 88172645463325252ull;
        out = fopen("/dev/null", "w");
    }
    while (read_line(&line, &cap)) {
        char *sp = strchr(line, ' ');
        const char *hex = sp ? sp + 1 : "";
        size_t hl = strlen(hex), i;
        uint8_t *data;
        handler_t h;
        int len, bad = 0;
        if (sp) *sp = 0;
        h = find(line);
        if (!h) { fprintf(stdout, "{\"ok\": false, \"error\": \"unknown type\"}\n"); continue; }
        if (hl % 2) bad = 1;
        len = (int) (hl / 2);
        /* exactly len bytes (malloc(0) may return NULL: keep one byte allocated but pass len 0) */
        data = (uint8_t *) malloc(len ? (size_t) len : 1);
        for (i = 0; !bad && i < (size_t) len; i++) {
            int a = hexval(hex[2 * i]), b = hexval(hex[2 * i + 1]);
            if (a < 0 || b < 0) bad = 1;
            else data[i] = (uint8_t) (a * 16 + b);
        }
        if (bad) { fprintf(stdout, "{\"ok\": false, \"error\": \"bad hex\"}\n"); free(data); continue; }
        if (!mutate_n) {
            h(data, len, 1);
        } else {
            int k;
            for (k = 0; k < mutate_n; k++) {
                uint8_t *m = (uint8_t *) malloc(len ? (size_t) len : 1);
                int n = mutate(data, len, m);
                uint8_t *exact = (uint8_t *) malloc(n ? (size_t) n : 1);
                int r;
                memcpy(exact, m, (size_t) n);
                free(m);
                r = h(exact, n, 0);
                free(exact);
                mutations++;
                if (r > 0) decoded++;
                else if (r == 0) rejected++;
                else failed++;
            }
        }
        free(data);
        fflush(stdout);
    }
    free(line);
    if (mutate_n) {
        fclose(out);
        printf("{\"mutations\": %ld, \"decoded\": %ld, \"rejected\": %ld, \"inconsistent\": %ld}\n", mutations,
               decoded, rejected, failed);
    }
    return 0;
}
'''


def harness_source(descs: list) -> str:
    """The whole harness.c for these types (those the real Python can encode and fingerprint-only ones alike)."""
    parts = ["/* Interop harness for Nerve's generated C (generated by tests/interop/harness_c.py). */"]
    parts.append(RUNTIME_C)
    for d in descs:
        parts.append(f'#include "{c_name(d.name)}.h"')
    # Prototypes first: printers of recursive types call each other.
    for d in descs:
        n = c_name(d.name)
        parts.append(f"static void print_{n}(const {n} *p);")
    for d in descs:
        parts.append(_printer(d))
        parts.append(HANDLER.format(n=c_name(d.name)))
    entries = ",\n".join(f'    {{ "{d.name}", handle_{c_name(d.name)} }}' for d in descs)
    parts.append(MAIN_C.replace("@ENTRIES@", entries))
    return "\n".join(parts)


def generate(nerve_bin: Path, out_dir: Path, files: list) -> Path:
    """Runs ``nerve gen -c`` on ``files`` into ``out_dir`` (headers and sources together); returns out_dir.

    Without publish/subscribe (``--c-no-pubsub``), so the harness needs no LCM header or library; test_c_pubsub.py
    covers that part of the API."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    subprocess.run([str(nerve_bin), "gen", "-c", "--c-no-pubsub", "--c-cpath", str(out_dir), "--c-hpath", str(out_dir),
                    *map(str, files)], check=True, capture_output=True, text=True)
    return out_dir


def build(gen_dir: Path, descs: list, exe: Path, extra_flags: list, cc: str = "gcc") -> Path:
    """Writes harness.c next to the generated code and compiles it with every generated .c file."""
    src = gen_dir / "harness.c"
    src.write_text(harness_source(descs))
    sources = sorted(str(p) for p in gen_dir.glob("*.c") if p.name != "harness.c")
    cmd = [cc, "-std=c99", *WARN, *extra_flags, "-I", str(gen_dir), "-o", str(exe), str(src), *sources, "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"compiling the C harness failed:\n{' '.join(cmd)}\n{proc.stderr[-8000:]}")
    return exe


def pkg_config(prefix: Path, package: str, *args: str) -> list:
    """`pkg-config ARGS PACKAGE` against an install prefix's lib/pkgconfig (scripts/install-c), split into arguments."""
    if shutil.which("pkg-config") is None:
        raise AssertionError("pkg-config is not installed (scripts/setup)")
    env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    p = subprocess.run(["pkg-config", *args, package], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    return p.stdout.split()
