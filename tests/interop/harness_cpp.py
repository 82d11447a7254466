"""Writes the C++ interop harness (tests/interop/README.md, "The harness protocol") for the code `nerve gen -x` wrote.

``harness_source(descs)`` returns one C++ program, generated from ``oracle.type_descriptors()``, that reads
``<type> <hex>`` lines and answers one JSON line each. For every input it also:

- builds the type's View over the same bytes and reads every member through it (all of them, on malformed input
  too, so the sanitizers see every view read);
- when the decode succeeded, checks that every value read through the View equals the decoded one (array sizes,
  each element, iteration, ``copy_to`` of primitive arrays), that re-encoding takes exactly the bytes the decode
  consumed, and that encoding into a buffer one byte short fails. Any mismatch is printed to stderr and the harness
  exits with status 3, which fails ``run_harness``;
- at start, checks ``getHash()`` and ``_computeHash(NULL)`` against the real fingerprint of every type.

At exit it prints ``views checked: N`` to stderr (N = inputs whose every member was compared through the View).
"""

from __future__ import annotations

import json

PRIM_CPP = {
    "int8_t": "int8_t",
    "int16_t": "int16_t",
    "int32_t": "int32_t",
    "int64_t": "int64_t",
    "float": "float",
    "double": "double",
    "string": "std::string",
    "boolean": "int8_t",
    "byte": "uint8_t",
}

VIEW_RESERVED = ("ok", "from")


def cpp_type(name: str) -> str:
    """``pkg.sub.name_t`` -> ``::pkg::sub::name_t``."""
    return "::" + name.replace(".", "::")


def ident(name: str) -> str:
    """A C++-safe fragment of a type name for function names."""
    return name.replace(".", "__")


def accessor(member: str) -> str:
    return member + "_" if member in VIEW_RESERVED else member


def cpp_string(text: str) -> str:
    """A C++ string literal holding ``text`` (ASCII only: anything else is escaped)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= ord(ch) < 0x7F:
            out.append(ch)
        else:
            for b in ch.encode("utf-8"):
                out.append("\\%03o" % b)
    return '"' + "".join(out) + '"'


PRELUDE = r"""
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

static unsigned long long g_views_checked = 0;
static volatile uint64_t g_sink = 0;

static void fail(const std::string &what) {
    std::fprintf(stderr, "harness check failed: %s\n", what.c_str());
    std::exit(3);
}

static void jint(std::string &o, long long v) { o += std::to_string(v); }

static void jfloat(std::string &o, double v, int digits) {
    if (std::isnan(v)) { o += "\"NaN\""; return; }
    if (std::isinf(v)) { o += v > 0 ? "\"Infinity\"" : "\"-Infinity\""; return; }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    o += buf;
}

static void jhex4(std::string &o, unsigned v) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", v);
    o += buf;
}

// A JSON string, pure ASCII: everything else as \u escapes (surrogate pairs above U+FFFF); invalid UTF-8 as U+FFFD.
static void jstr(std::string &o, const char *s, size_t n) {
    const unsigned char *p = reinterpret_cast<const unsigned char *>(s);
    o += '"';
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        if (c < 0x80) {
            if (c == '"') o += "\\\"";
            else if (c == '\\') o += "\\\\";
            else if (c < 0x20 || c == 0x7f) jhex4(o, c);
            else o += static_cast<char>(c);
            ++i;
            continue;
        }
        unsigned need = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
        unsigned cp = need == 3 ? (c & 7) : need == 2 ? (c & 15) : (c & 31);
        bool good = need > 0 && c < 0xf5;
        if (good) {
            for (unsigned k = 1; k <= need; ++k) {
                if (i + k >= n || (p[i + k] & 0xc0) != 0x80) { good = false; break; }
                cp = (cp << 6) | (p[i + k] & 0x3f);
            }
        }
        if (good) {
            static const unsigned min_cp[4] = {0, 0x80, 0x800, 0x10000};
            if (cp < min_cp[need] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) good = false;
        }
        if (!good) { jhex4(o, 0xfffd); ++i; continue; }
        if (cp >= 0x10000) {
            cp -= 0x10000;
            jhex4(o, 0xd800 + (cp >> 10));
            jhex4(o, 0xdc00 + (cp & 0x3ff));
        } else {
            jhex4(o, cp);
        }
        i += need + 1;
    }
    o += '"';
}

template <class T> static bool same(T a, T b) { return a == b; }
static bool same(float a, float b) { uint32_t x, y; std::memcpy(&x, &a, 4); std::memcpy(&y, &b, 4); return x == y; }
static bool same(double a, double b) { uint64_t x, y; std::memcpy(&x, &a, 8); std::memcpy(&y, &b, 8); return x == y; }

template <class T> static void touch(const nerve_lcm::maybe<T> &m) { g_sink = g_sink + static_cast<uint64_t>(m.ok()); }
static void touch(const nerve_lcm::string_view &s) { g_sink = g_sink + s.size() + (s.ok() ? static_cast<unsigned char>(s.size() ? s[0] : 0) : 0); }

static const size_t WALK_CAP = 4096;

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static void hexout(std::string &o, const uint8_t *p, size_t n) {
    static const char *d = "0123456789abcdef";
    for (size_t i = 0; i < n; ++i) { o += d[p[i] >> 4]; o += d[p[i] & 15]; }
}

// Decode, check, print. T is the message class, V its view.
template <class T>
static void handle(const std::vector<uint8_t> &bytes, void (*json)(std::string &, const T &),
                   void (*vcheck)(const T &, const typename T::View &, const std::string &),
                   void (*vwalk)(const typename T::View &, unsigned), const char *short_name) {
    const uint8_t *data = bytes.empty() ? 0 : bytes.data();
    typename T::View view(data, bytes.size());
    vwalk(view, 0);
    T msg = T();
    int n = msg.decode(data, 0, static_cast<int>(bytes.size()));
    std::string out;
    if (n < 0) {
        out = "{\"ok\": false, \"error\": \"decode returned ";
        out += std::to_string(n);
        out += "\"}";
        std::cout << out << "\n";
        return;
    }
    int size = msg.getEncodedSize();
    if (size != n) fail(std::string(short_name) + ": getEncodedSize() " + std::to_string(size) + " != bytes decoded " + std::to_string(n));
    std::vector<uint8_t> buf(static_cast<size_t>(size));
    int m = msg.encode(buf.data(), 0, size);
    if (m != size) fail(std::string(short_name) + ": encode returned " + std::to_string(m));
    if (size > 0) {
        std::vector<uint8_t> small(static_cast<size_t>(size - 1));
        if (msg.encode(small.empty() ? buf.data() : small.data(), 0, size - 1) >= 0)
            fail(std::string(short_name) + ": encode into a buffer one byte short succeeded");
    }
    if (!view.ok()) fail(std::string(short_name) + ": view not ok on a message that decodes");
    vcheck(msg, view, short_name);
    ++g_views_checked;
    out = "{\"ok\": true, \"reencoded\": \"";
    hexout(out, buf.data(), buf.size());
    out += "\", \"value\": ";
    json(out, msg);
    out += "}";
    std::cout << out << "\n";
}
"""


def _dims_size_exprs(m, obj: str) -> list:
    """C++ expressions for each dimension's size, from the decoded object ``obj``."""
    return [str(d) if isinstance(d, int) else f"static_cast<size_t>({obj}.{d})" for d in m.dims]


def _elem_json(ty: str, expr: str) -> str:
    if ty in ("int8_t", "int16_t", "int32_t", "int64_t"):
        return f"jint(o, static_cast<long long>({expr}));"
    if ty == "byte":
        return f"jint(o, static_cast<long long>({expr}));"
    if ty == "boolean":
        return f'o += ({expr}) ? "true" : "false";'
    if ty == "float":
        return f"jfloat(o, static_cast<double>({expr}), 9);"
    if ty == "double":
        return f"jfloat(o, {expr}, 17);"
    if ty == "string":
        return f"jstr(o, ({expr}).data(), ({expr}).size());"
    return f"json_{ident(ty)}(o, {expr});"


def _json_fn(d) -> list:
    t = cpp_type(d.name)
    lines = [f"static void json_{ident(d.name)}(std::string &o, const {t} &v) {{", "    (void)v;", "    o += '{';"]
    for i, m in enumerate(d.members):
        key = ("" if i == 0 else ", ") + json.dumps(m.name) + ": "
        lines.append(f"    o += {cpp_string(key)};")
        sizes = _dims_size_exprs(m, "v")
        expr = f"v.{m.name}"
        indent = "    "
        for k, s in enumerate(sizes):
            lines.append(f"{indent}o += '[';")
            lines.append(f"{indent}for (size_t i{k} = 0; i{k} < {s}; ++i{k}) {{")
            indent += "    "
            lines.append(f"{indent}if (i{k}) o += ', ';")
            expr += f"[i{k}]"
        lines.append(indent + _elem_json(m.type, expr))
        for k in reversed(range(len(sizes))):
            indent = indent[:-4]
            lines.append(f"{indent}}}")
            lines.append(f"{indent}o += ']';")
    lines.append("    o += '}';")
    lines.append("}")
    # ', ' is two characters: use a string.
    return [ln.replace("o += ', ';", 'o += ", ";') for ln in lines]


def _elem_check(ty: str, got: str, want: str, path: str) -> list:
    """Statements checking a view element ``got`` against the decoded ``want``."""
    if ty in PRIM_CPP and ty != "string":
        return [f"{{ nerve_lcm::maybe<{PRIM_CPP[ty]}> r = {got};",
                f"  if (!r.ok() || !same(r.value(), static_cast<{PRIM_CPP[ty]}>({want}))) fail({path}); }}"]
    if ty == "string":
        return [f"{{ nerve_lcm::string_view r = {got};",
                f"  if (!r.ok() || !(r == {want}) || r.str() != {want}) fail({path}); }}"]
    return [f"vcheck_{ident(ty)}({want}, {got}, {path});"]


def _vcheck_fn(d) -> list:
    t = cpp_type(d.name)
    lines = [f"static void vcheck_{ident(d.name)}(const {t} &v, const {t}::View &w, const std::string &path) {{",
             "    (void)v;",
             "    if (!w.ok()) fail(path + \": view not ok\");"]
    for m in d.members:
        acc = f"w.{accessor(m.name)}()"
        mpath = f'path + {cpp_string("." + m.name)}'
        if not m.dims:
            lines += ["    " + s for s in _elem_check(m.type, acc, f"v.{m.name}", mpath)]
            continue
        sizes = _dims_size_exprs(m, "v")
        lines.append("    {")
        lines.append(f"        auto a = {acc};")
        lines.append(f"        if (!a.ok()) fail({mpath} + \": array view not ok\");")
        for k, s in enumerate(sizes):
            if k == 0:
                lines.append(f"        if (a.dim({k}) != {s} || a.size() != {s}) fail({mpath} + \": dimension {k}\");")
            else:
                lines.append(f"        if (a.dim({k}) != {s}) fail({mpath} + \": dimension {k}\");")
        # Indexing, every element.
        indent = "        "
        got, want = "a", f"v.{m.name}"
        for k, s in enumerate(sizes):
            lines.append(f"{indent}for (size_t i{k} = 0; i{k} < {s}; ++i{k}) {{")
            indent += "    "
            got += f"[i{k}]"
            want += f"[i{k}]"
        epath = mpath + ' + "[...]"'
        lines += [indent + s for s in _elem_check(m.type, got, want, epath)]
        for _ in sizes:
            indent = indent[:-4]
            lines.append(f"{indent}}}")
        # Iteration over the first dimension (one level), compared with indexing.
        if len(sizes) == 1:
            lines.append("        { size_t i0 = 0;")
            lines.append("          for (auto it = a.begin(); it != a.end(); ++it, ++i0) {")
            if m.type in PRIM_CPP:
                lines += ["              " + s for s in _elem_check(m.type, "*it", f"v.{m.name}[i0]", mpath + ' + "(iter)"')]
            else:
                # A struct element: the iterator must land on the same bytes as indexing (descending again would
                # make the check exponential in the nesting depth).
                lines.append(f"              if (!(*it).ok() || (*it)._nerve_p != a[i0]._nerve_p) fail({mpath} + \"(iter)\");")
            lines.append("          }")
            lines.append(f"          if (i0 != {sizes[0]}) fail({mpath} + \": iteration count\"); }}")
        # Bulk copy of primitive arrays, compared element by element.
        if m.type in PRIM_CPP and m.type != "string":
            ct = PRIM_CPP[m.type]
            lines.append(f"        {{ std::vector<{ct}> flat(static_cast<size_t>(a.total()) + 1);")
            lines.append(f"          if (!a.copy_to(flat.data())) fail({mpath} + \": copy_to\");")
            lines.append("          size_t f = 0;")
            indent = "          "
            want = f"v.{m.name}"
            for k, s in enumerate(sizes):
                lines.append(f"{indent}for (size_t i{k} = 0; i{k} < {s}; ++i{k}) {{")
                indent += "    "
                want += f"[i{k}]"
            lines.append(f"{indent}if (!same(flat[f++], static_cast<{ct}>({want}))) fail({mpath} + \": copy_to element\");")
            for _ in sizes:
                indent = indent[:-4]
                lines.append(f"{indent}}}")
            lines.append("        }")
        lines.append("    }")
    lines.append("}")
    return lines


def _walk_elem(ty: str, expr: str) -> str:
    if ty in PRIM_CPP:
        return f"touch({expr});"
    return f"if (depth < 64) vwalk_{ident(ty)}({expr}, depth + 1);"


def _vwalk_fn(d) -> list:
    t = cpp_type(d.name)
    lines = [f"static void vwalk_{ident(d.name)}(const {t}::View &w, unsigned depth) {{",
             "    (void)depth;",
             "    g_sink = g_sink + static_cast<uint64_t>(w.ok());"]
    for m in d.members:
        acc = f"w.{accessor(m.name)}()"
        if not m.dims:
            lines.append("    " + _walk_elem(m.type, acc))
            continue
        lines.append("    {")
        lines.append(f"        auto a = {acc};")
        lines.append("        g_sink = g_sink + a.size() + static_cast<uint64_t>(a.ok());")
        indent = "        "
        got = "a"
        for k in range(len(m.dims)):
            lines.append(f"{indent}for (size_t i{k} = 0; i{k} < {got}.size() && i{k} < WALK_CAP; ++i{k}) {{")
            indent += "    "
            lines.append(f"{indent}auto a{k} = {got}[i{k}];")
            got = f"a{k}"
        lines.append(indent + _walk_elem(m.type, got))
        for _ in m.dims:
            indent = indent[:-4]
            lines.append(f"{indent}}}")
        if len(m.dims) == 1:
            lines.append("        size_t n = 0;")
            # Iteration touches each element without descending (descending is done once, above).
            lines.append("        for (auto it = a.begin(); it != a.end() && n < WALK_CAP; ++it, ++n) "
                         + ("touch(*it);" if m.type in PRIM_CPP else "g_sink = g_sink + static_cast<uint64_t>((*it).ok());"))
        lines.append("    }")
    lines.append("}")
    return lines


def harness_source(descs: list) -> str:
    """The whole harness program for the types in ``descs`` (oracle.TypeDesc), headers from ``nerve gen -x``."""
    out = ["// Generated by tests/interop/harness_cpp.py: the C++ interop harness (tests/interop/README.md)."]
    for d in descs:
        out.append(f'#include "{d.name.replace(".", "/")}.hpp"')
    out.append(PRELUDE)
    for d in descs:
        t = cpp_type(d.name)
        out.append(f"static void json_{ident(d.name)}(std::string &o, const {t} &v);")
        out.append(f"static void vcheck_{ident(d.name)}(const {t} &v, const {t}::View &w, const std::string &path);")
        out.append(f"static void vwalk_{ident(d.name)}(const {t}::View &w, unsigned depth);")
    for d in descs:
        out += _json_fn(d)
        out += _vcheck_fn(d)
        out += _vwalk_fn(d)
    out.append("int main() {")
    out.append("    std::ios::sync_with_stdio(false);")
    for d in descs:
        t = cpp_type(d.name)
        fp = f"0x{d.fingerprint:016x}ULL"
        out.append(f"    if ({t}::getHash() != static_cast<int64_t>({fp}) || {t}::_computeHash(0) != {fp})")
        out.append(f"        fail({cpp_string(d.name + ': fingerprint differs from the real one')});")
    out.append("    std::string line;")
    out.append("    while (std::getline(std::cin, line)) {")
    out.append("        size_t sp = line.find(' ');")
    out.append("        std::string name = line.substr(0, sp);")
    out.append("        std::string hex = sp == std::string::npos ? std::string() : line.substr(sp + 1);")
    out.append("        std::vector<uint8_t> bytes;")
    out.append("        bool hex_ok = hex.size() % 2 == 0;")
    out.append("        for (size_t i = 0; hex_ok && i < hex.size(); i += 2) {")
    out.append("            int hi = hexval(hex[i]), lo = hexval(hex[i + 1]);")
    out.append("            if (hi < 0 || lo < 0) hex_ok = false; else bytes.push_back(static_cast<uint8_t>(hi * 16 + lo));")
    out.append("        }")
    out.append("        if (!hex_ok) { std::cout << \"{\\\"ok\\\": false, \\\"error\\\": \\\"bad hex\\\"}\\n\"; continue; }")
    out.append("        bytes = std::vector<uint8_t>(bytes.begin(), bytes.end());  // exactly sized, for ASan")
    first = True
    for d in descs:
        t = cpp_type(d.name)
        kw = "if" if first else "else if"
        first = False
        out.append(f"        {kw} (name == {cpp_string(d.name)}) handle<{t}>(bytes, json_{ident(d.name)}, "
                   f"vcheck_{ident(d.name)}, vwalk_{ident(d.name)}, {cpp_string(d.short_name)});")
    out.append("        else std::cout << \"{\\\"ok\\\": false, \\\"error\\\": \\\"unknown type\\\"}\\n\";")
    out.append("    }")
    out.append("    std::cout.flush();")
    out.append("    std::fprintf(stderr, \"views checked: %llu\\n\", g_views_checked);")
    out.append("    return 0;")
    out.append("}")
    return "\n".join(out) + "\n"
