"""The real LCM 1.5.3 as a test oracle: its generated Python, random values encoded by it, and the harness driver.

The API is specified in tests/interop/README.md; other language tests are written against it:

- ``real_python_modules()``: run the real ``lcm-gen -p`` over the corpus and import the classes it wrote.
- ``type_descriptors()``: every corpus struct as a ``TypeDesc`` (name, fingerprint, members with types and dims).
- ``cases(seed, per_type)``: random canonical values of every type, encoded by the real LCM Python binding.
- ``check_value(desc_by_name, type_name, expected, got)``: compare a harness's decoded value with the canonical one.
- ``run_harness(cmd, cases)`` / ``run_harness_bad(cmd, blobs)``: drive a language harness (stdin/stdout JSON lines).
- ``bad_blobs(cases, seed)``: malformed inputs: every truncation, bit flips, huge counts and string lengths.

Canonical values: a struct is a ``dict`` of member name -> value in declaration order; arrays are nested ``list``s;
``byte`` is ``int``; ``boolean`` is ``bool``; strings are ``str``; floats are Python floats (a float32 member holds a
value exactly representable as float32).
"""

from __future__ import annotations

import atexit
import functools
import importlib
import json
import math
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "corpus"
VENV = REPO / ".venv"
LCM_GEN = VENV / "bin" / "lcm-gen"
VENV_PYTHON = VENV / "bin" / "python"


def lcm_program(name: str) -> Path:
    """The wheel's C program `name` (lcm-logger, lcm-logplayer, ...), not the Python wrapper of that name in VENV/bin.

    The wrapper runs the program with `subprocess.call`, so a signal sent to the wrapper never reaches the program:
    SIGINT makes the wrapper return and leaves the program running as an orphan (its stdio buffer unflushed), and in a
    suite started as a background job (SIGINT ignored) the wrapper ignores it altogether. Tests that stop a program
    run the program itself."""
    found = sorted(VENV.glob(f"lib/python*/site-packages/bin/{name}"))
    if not found:
        raise FileNotFoundError(f"{name}: not in {VENV}/lib/python*/site-packages/bin (run scripts/setup)")
    return found[0]


def stop_with_sigint(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """SIGINT (the clean exit of lcm-logger and `nerve log`), then wait; a process still running after `timeout` is
    killed and the test fails, so nothing outlives it."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)
        raise AssertionError(f"{proc.args[0]} did not exit within {timeout} s of SIGINT (killed)")

#: A corpus file containing this text declares types the real Python binding cannot encode (see corpus README).
FINGERPRINT_ONLY_MARKER = "nerve-corpus: fingerprint-only"

PRIMITIVES = ("int8_t", "int16_t", "int32_t", "int64_t", "float", "double", "string", "boolean", "byte")
INT_RANGES = {
    "int8_t": (-(2**7), 2**7 - 1),
    "int16_t": (-(2**15), 2**15 - 1),
    "int32_t": (-(2**31), 2**31 - 1),
    "int64_t": (-(2**63), 2**63 - 1),
    "byte": (0, 255),
}
# struct format characters for big-endian encoding.
_FMT = {"int8_t": "b", "int16_t": "h", "int32_t": "i", "int64_t": "q", "float": "f", "double": "d",
        "boolean": "b", "byte": "B"}

# Bounds that keep every case small: recursion depth, and the largest count of each kind of array.
MAX_DEPTH = 3
MAX_PRIMITIVE_COUNT = 12
MAX_STRUCT_COUNT = 2


@dataclass
class MemberDesc:
    """One member: ``type`` is a primitive's LCM name or a full type name; ``dims`` are ints (fixed) or member names."""

    name: str
    type: str
    dims: list = field(default_factory=list)

    @property
    def is_primitive(self) -> bool:
        return self.type in PRIMITIVES


@dataclass
class TypeDesc:
    """One struct of the corpus as the real lcm-gen sees it."""

    name: str
    fingerprint: int
    members: list
    base_hash: int = 0
    #: True for types the real Python binding cannot encode (no cases are made for them).
    fingerprint_only: bool = False
    #: The corpus file that declares the type.
    file: str = ""

    @property
    def short_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]


@dataclass
class Case:
    """A canonical value of ``type`` and its encoding by the real LCM Python binding."""

    type: str
    data: bytes
    value: dict


@dataclass
class BadBlob:
    """A malformed input for ``type``. ``must_fail``: a correct decoder has to reject it (a strict truncation, a
    damaged fingerprint); otherwise it may decode to some value, but must not crash."""

    type: str
    data: bytes
    must_fail: bool
    why: str


#: How many more zero-size array items than bytes left every Nerve decoder accepts (nerve_codec::ZERO_SIZE_SLACK,
#: the generated C's NERVE_LCM_SLACK, the generated Python's): one rule, so a message decodes in every language or
#: in none. LCM itself has no limit.
ZERO_SIZE_SLACK = 65536


def slack_blobs() -> list:
    """feat.holds_empty_t (``empty_t e; int32_t n; empty_t es[n];``) with as many empty elements as the slack allows
    after its count (no bytes are left there), and with one more: the first decodes, the second must be refused."""
    fp = desc_by_name()["feat.holds_empty_t"].fingerprint.to_bytes(8, "big")
    return [
        BadBlob("feat.holds_empty_t", fp + ZERO_SIZE_SLACK.to_bytes(4, "big"), False, "empty elements at the slack"),
        BadBlob("feat.holds_empty_t", fp + (ZERO_SIZE_SLACK + 1).to_bytes(4, "big"), True, "one past the slack"),
    ]


# ----------------------------------------------------------------------------------------------------------------
# The corpus and the real lcm-gen


def corpus_files() -> list:
    """Every ``.lcm`` file of the corpus, sorted."""
    return sorted(CORPUS.rglob("*.lcm"))


def _is_fingerprint_only(path: Path) -> bool:
    return FINGERPRINT_ONLY_MARKER in path.read_text(encoding="utf-8")


def parse_c_integer(text: str) -> int:
    """C ``strtol(text, NULL, 0)`` for a whole literal: sign, ``0x`` hex, leading-0 octal, decimal."""
    t = text.strip()
    neg = t.startswith("-")
    if t[:1] in "+-":
        t = t[1:]
    if t[:2].lower() == "0x":
        v = int(t[2:], 16)
    elif len(t) > 1 and t.startswith("0"):
        v = int(t[1:], 8)
    else:
        v = int(t, 10)
    return -v if neg else v


def _const_dim(text: str):
    """A constant dimension's size, or its text when lcm-gen took a word that is no integer (`[1.5]`)."""
    try:
        return parse_c_integer(text)
    except ValueError:
        return text


_D_STRUCT = re.compile(r"^struct (\S+) \[hash=0x\s*([0-9a-fA-F ]+)\]$")
_D_DIM = re.compile(r"\[ \((const|var)\) (\S+) \]")


def lcmgen_debug(files: Sequence) -> dict:
    """Runs the real ``lcm-gen -d`` and returns ``{name: (base_hash, [MemberDesc])}`` in declaration order.

    ``-d`` prints the base hash K (not the fingerprint), each member's resolved type and each dimension's text."""
    out = subprocess.run([str(LCM_GEN), "-d", *map(str, files)], capture_output=True, text=True, check=True).stdout
    types: dict = {}
    current = None
    for line in out.splitlines():
        m = _D_STRUCT.match(line)
        if m:
            current = m.group(1)
            types[current] = (int(m.group(2).replace(" ", ""), 16), [])
            continue
        if current and line.startswith("\t"):
            body = line.strip()
            ty, rest = body.split(None, 1)
            name = rest.split(" [", 1)[0].strip()
            dims = [_const_dim(t) if kind == "const" else t for kind, t in _D_DIM.findall(rest)]
            types[current][1].append(MemberDesc(name, ty, dims))
    return types


def fingerprint_from_base(name: str, bases: dict, parents: tuple = ()) -> int:
    """F(T) of spec 2.2 from real base hashes: ``bases`` maps name -> (base_hash, members)."""
    if name in parents:
        return 0
    base, members = bases[name]
    h = base
    for m in members:
        if m.type not in PRIMITIVES:
            h = (h + fingerprint_from_base(m.type, bases, parents + (name,))) & 0xFFFFFFFFFFFFFFFF
    return ((h << 1) & 0xFFFFFFFFFFFFFFFF) | (h >> 63)


_tmp_dirs: list = []


@atexit.register
def _cleanup() -> None:
    for d in _tmp_dirs:
        shutil.rmtree(d, ignore_errors=True)


def real_lcmgen(flags: Sequence, files: Sequence | None = None) -> Path:
    """Runs the real lcm-gen with ``flags`` (e.g. ``["-p", "--ppath", "{out}"]``; ``{out}`` is replaced by a fresh
    temporary directory) over ``files`` (the corpus by default) and returns that directory."""
    out = Path(tempfile.mkdtemp(prefix="nerve-real-lcmgen-"))
    _tmp_dirs.append(out)
    files = corpus_files() if files is None else files
    args = [a.replace("{out}", str(out)) for a in flags]
    subprocess.run([str(LCM_GEN), *args, *map(str, files)], check=True, capture_output=True, text=True)
    return out


@functools.lru_cache(maxsize=None)
def real_python_modules() -> dict:
    """The real lcm-gen's Python classes for every corpus type it can import: ``{full name: class}``.

    The modules are imported with the corpus packages (``seed``, ``lcmtest``, ...) removed from ``sys.modules`` and
    put back afterwards, so they never collide with Nerve's generated Python of the same names in one process; the
    classes keep working because their modules hold the real packages in their own globals."""
    out = real_lcmgen(["-p", "--ppath", str(Path("{out}"))])
    importable = [n for n, d in _debug_info().items() if not d[2]]
    roots = {n.split(".")[0] for n in _debug_info()}
    saved = {k: v for k, v in sys.modules.items() if k.split(".")[0] in roots}
    for k in saved:
        del sys.modules[k]
    sys.path.insert(0, str(out))
    importlib.invalidate_caches()
    classes = {}
    try:
        for name in importable:
            pkg, short = name.rsplit(".", 1)
            module = importlib.import_module(f"{pkg}.{short}")
            classes[name] = getattr(module, short)
    finally:
        sys.path.remove(str(out))
        for k in [k for k in sys.modules if k.split(".")[0] in roots]:
            del sys.modules[k]
        sys.modules.update(saved)
    return classes


@functools.lru_cache(maxsize=None)
def _debug_info() -> dict:
    """``{name: (base_hash, members, fingerprint_only, file)}`` for the corpus, from ``lcm-gen -d`` per file."""
    info = {}
    for f in corpus_files():
        fp_only = _is_fingerprint_only(f)
        for name, (base, members) in lcmgen_debug([f]).items():
            info[name] = (base, members, fp_only, str(f.relative_to(REPO)))
    # Cross-file member types are resolved by the per-file run only when dotted; re-run over the whole corpus for
    # the members (lcm-gen carries the package across files, but every corpus file declares one).
    whole = lcmgen_debug(corpus_files())
    return {n: (whole[n][0], whole[n][1], info[n][2], info[n][3]) for n in whole}


@functools.lru_cache(maxsize=None)
def _type_descriptors() -> tuple:
    info = _debug_info()
    bases = {n: (d[0], d[1]) for n, d in info.items()}
    classes = real_python_modules()
    descs = []
    for name, (base, dbg_members, fp_only, file) in info.items():
        if name in classes:
            cls = classes[name]
            members = []
            for mname, ty, dims in zip(cls.__slots__, cls.__typenames__, cls.__dimensions__):
                members.append(MemberDesc(mname, ty, list(dims) if dims else []))
            fingerprint = struct.unpack(">Q", cls._get_packed_fingerprint())[0]
            if [(m.name, m.type, m.dims) for m in members] != [(m.name, m.type, m.dims) for m in dbg_members]:
                raise AssertionError(f"lcm-gen -d and the real Python disagree on {name}'s members")
        else:
            members = dbg_members
            fingerprint = fingerprint_from_base(name, bases)
        descs.append(TypeDesc(name, fingerprint, members, base, fp_only, file))
    return tuple(descs)


def type_descriptors() -> list:
    """Every corpus struct, in corpus order, as the real lcm-gen 1.5.3 describes it.

    Types the real Python imports are described from it (``__slots__``, ``__typenames__``, ``__dimensions__``,
    ``_get_packed_fingerprint()``); fingerprint-only types from ``lcm-gen -d`` (with F computed from its base hashes
    by spec 2.2, a computation the importable types cross-check)."""
    return list(_type_descriptors())


def desc_by_name() -> dict:
    """``{full name: TypeDesc}``."""
    return {d.name: d for d in _type_descriptors()}


# ----------------------------------------------------------------------------------------------------------------
# Random values


_STRINGS = ["", "a", "hello world", "héllo", "日本語テキスト", "🦀 crab", "quote \" backslash \\ slash /",
            "tab\tnewline\nreturn\r", "\x01\x1f control", "\u2028\u2029 separators", "é" * 40, "x" * 100,
            "mixed ascii and ünïcödé and 𝄞"]


def _f32(x: float) -> float:
    return struct.unpack(">f", struct.pack(">f", x))[0]


_FLOAT_SPECIALS = [0.0, -0.0, 1.0, -1.0, math.nan, math.inf, -math.inf]
_F32_EXTREMES = [_f32(3.4028234663852886e38), -_f32(3.4028234663852886e38), _f32(1.1754943508222875e-38),
                 _f32(1.401298464324817e-45), -_f32(1.401298464324817e-45), _f32(1e-40), _f32(0.1)]
_F64_EXTREMES = [1.7976931348623157e308, -1.7976931348623157e308, 2.2250738585072014e-308, 5e-324, -5e-324,
                 1e-310, 0.1, math.pi]


class _Gen:
    def __init__(self, descs: dict, rng: random.Random, mode: str):
        self.descs = descs
        self.rng = rng
        self.mode = mode  # "zero" (all zero / empty), "extreme" (boundary values), "random"

    def primitive(self, ty: str) -> Any:
        r, mode = self.rng, self.mode
        if ty in INT_RANGES:
            lo, hi = INT_RANGES[ty]
            if mode == "zero":
                return 0
            if mode == "extreme" or r.random() < 0.3:
                return r.choice([lo, hi, 0, -1 if lo < 0 else 1, lo + 1, hi - 1])
            return r.randint(lo, hi)
        if ty == "boolean":
            return False if mode == "zero" else r.random() < 0.5
        if ty == "string":
            if mode == "zero":
                return ""
            return r.choice(_STRINGS) if r.random() < 0.7 else "".join(
                chr(r.choice([r.randint(0x20, 0x7E), r.randint(0xA0, 0xD7FF), r.randint(0x10000, 0x10FFFF)]))
                for _ in range(r.randint(0, 8)))
        if ty in ("float", "double"):
            if mode == "zero":
                return 0.0
            extremes = _F32_EXTREMES if ty == "float" else _F64_EXTREMES
            p = r.random()
            if mode == "extreme" or p < 0.35:
                v = r.choice(_FLOAT_SPECIALS + extremes)
            elif p < 0.5:
                v = r.choice([-1, 1]) * r.uniform(0, 1e-30) * r.choice([1e-10, 1, 1e10])
            else:
                v = r.uniform(-1e6, 1e6) * 10.0 ** r.randint(-20, 20)
            if ty == "float":
                if math.isfinite(v) and abs(v) > 3.4028234663852886e38:
                    v = math.copysign(3.4028234663852886e38, v)
                v = _f32(v)
            return v
        raise ValueError(ty)

    def value(self, name: str, depth: int = 0) -> dict:
        desc = self.descs[name]
        # Counts first: each member that sizes an array gets a length that every array it sizes can take.
        count_limit: dict = {}
        for m in desc.members:
            for d in m.dims:
                if isinstance(d, str):
                    if m.is_primitive:
                        limit = MAX_PRIMITIVE_COUNT
                    else:
                        limit = 0 if depth >= MAX_DEPTH else (MAX_STRUCT_COUNT if depth == 0 else 1)
                    if len(m.dims) > 1:
                        limit = min(limit, 3)
                    count_limit[d] = min(count_limit.get(d, limit), limit)
        counts: dict = {}
        out: dict = {}
        for m in desc.members:
            if m.name in count_limit:
                hi = min(count_limit[m.name], INT_RANGES[m.type][1])
                n = 0 if self.mode == "zero" else self.rng.choice([0, hi, self.rng.randint(0, hi)])
                counts[m.name] = n
                out[m.name] = n
                continue
            sizes = [d if isinstance(d, int) else counts[d] for d in m.dims]
            out[m.name] = self._array(m, sizes, depth)
        return out

    def _array(self, m: MemberDesc, sizes: list, depth: int) -> Any:
        if not sizes:
            return self.primitive(m.type) if m.is_primitive else self.value(m.type, depth + 1)
        return [self._array(m, sizes[1:], depth) for _ in range(sizes[0])]


def make_value(type_name: str, seed: int, mode: str = "random") -> dict:
    """One canonical value of ``type_name`` (``mode``: "zero", "extreme" or "random")."""
    return _Gen(desc_by_name(), random.Random(seed), mode).value(type_name)


# ----------------------------------------------------------------------------------------------------------------
# Canonical values <-> the real Python binding, and an independent encoder


def to_real(type_name: str, value: dict) -> Any:
    """The canonical value as an instance of the real lcm-gen class."""
    descs, classes = desc_by_name(), real_python_modules()
    obj = classes[type_name]()
    for m in descs[type_name].members:
        setattr(obj, m.name, _to_real_member(m, value[m.name], len(m.dims)))
    return obj


def _to_real_member(m: MemberDesc, v: Any, ndims: int) -> Any:
    if ndims == 0:
        return v if m.is_primitive else to_real(m.type, v)
    return [_to_real_member(m, x, ndims - 1) for x in v]


def from_real(type_name: str, obj: Any) -> dict:
    """A real lcm-gen instance (e.g. from ``T.decode``) as a canonical value."""
    desc = desc_by_name()[type_name]
    return {m.name: _from_real_member(m, getattr(obj, m.name), len(m.dims)) for m in desc.members}


def _from_real_member(m: MemberDesc, v: Any, ndims: int) -> Any:
    if ndims == 0:
        if not m.is_primitive:
            return from_real(m.type, v)
        if m.type == "boolean":
            return bool(v)
        if m.type in ("float", "double"):
            return float(v)
        return v
    return [_from_real_member(m, x, ndims - 1) for x in v]


def encode(type_name: str, value: dict, length_fields: list | None = None) -> bytes:
    """Encodes a canonical value per spec 3, independently of the real binding. If ``length_fields`` is a list,
    ``(offset, size, kind)`` is appended for every count member (kind "count") and string length (kind "string")."""
    desc = desc_by_name()[type_name]
    buf = bytearray(struct.pack(">Q", desc.fingerprint))
    _encode_struct(desc_by_name(), type_name, value, buf, length_fields)
    return bytes(buf)


def _encode_struct(descs: dict, name: str, value: dict, buf: bytearray, fields: list | None) -> None:
    desc = descs[name]
    counts = {d for m in desc.members for d in m.dims if isinstance(d, str)}
    for m in desc.members:
        if fields is not None and m.name in counts:
            fields.append((len(buf), struct.calcsize(">" + _FMT[m.type]), "count"))
        _encode_member(descs, m, value[m.name], len(m.dims), buf, fields)


def _encode_member(descs: dict, m: MemberDesc, v: Any, ndims: int, buf: bytearray, fields: list | None) -> None:
    if ndims:
        for x in v:
            _encode_member(descs, m, x, ndims - 1, buf, fields)
    elif m.type == "string":
        b = v.encode("utf-8")
        if fields is not None:
            fields.append((len(buf), 4, "string"))
        buf += struct.pack(">i", len(b) + 1) + b + b"\0"
    elif m.is_primitive:
        buf += struct.pack(">" + _FMT[m.type], int(v) if m.type == "boolean" else v)
    else:
        _encode_struct(descs, m.type, v, buf, fields)


def cases(seed: int = 0, per_type: int = 20) -> list:
    """``per_type`` random values of every corpus type (fingerprint-only types excepted), each encoded by the real
    LCM Python binding. The first three of each type are the all-zero value, an extreme value and a random one;
    the rest random. Each case is checked on the way: the real binding's bytes equal :func:`encode`'s, and the real
    binding decodes them back to the same value."""
    descs = desc_by_name()
    classes = real_python_modules()
    out = []
    for desc in _type_descriptors():
        if desc.fingerprint_only:
            continue
        cls = classes[desc.name]
        for i in range(per_type):
            mode = ("zero", "extreme")[i] if i < 2 else "random"
            value = _Gen(descs, random.Random(f"{seed}/{desc.name}/{i}"), mode).value(desc.name)
            data = to_real(desc.name, value).encode()
            mine = encode(desc.name, value)
            if data != mine:
                raise AssertionError(f"oracle self-check: {desc.name} case {i}: real LCM encodes {data.hex()}, "
                                     f"spec 3 says {mine.hex()}")
            check_value(descs, desc.name, value, from_real(desc.name, cls.decode(data)))
            out.append(Case(desc.name, data, value))
    return out


# ----------------------------------------------------------------------------------------------------------------
# Comparing values


def _json_float(got: Any, path: str) -> float:
    if isinstance(got, bool):
        raise AssertionError(f"{path}: expected a number, got {got!r}")
    if isinstance(got, (int, float)):
        return float(got)
    if got == "NaN":
        return math.nan
    if got == "Infinity":
        return math.inf
    if got == "-Infinity":
        return -math.inf
    raise AssertionError(f"{path}: expected a number or NaN/Infinity/-Infinity, got {got!r}")


def _check(descs: dict, ty: str, dims: list, expected: Any, got: Any, path: str) -> None:
    if dims:
        if not isinstance(got, list):
            raise AssertionError(f"{path}: expected an array of {len(expected)}, got {got!r:.80}")
        if len(got) != len(expected):
            raise AssertionError(f"{path}: expected {len(expected)} elements, got {len(got)}")
        for i, (e, g) in enumerate(zip(expected, got)):
            _check(descs, ty, dims[1:], e, g, f"{path}[{i}]")
        return
    if ty in INT_RANGES:
        ok = (isinstance(got, int) and not isinstance(got, bool)) or (isinstance(got, float) and got.is_integer())
        if not ok or got != expected:
            raise AssertionError(f"{path}: expected {expected!r}, got {got!r}")
    elif ty == "boolean":
        if not isinstance(got, bool) or got != expected:
            raise AssertionError(f"{path}: expected {expected!r}, got {got!r}")
    elif ty == "string":
        if got != expected:
            raise AssertionError(f"{path}: expected {expected!r}, got {got!r}")
    elif ty in ("float", "double"):
        g = _json_float(got, path)
        if math.isnan(expected) and math.isnan(g):
            return
        fmt = ">f" if ty == "float" else ">d"
        try:
            same = struct.pack(fmt, g) == struct.pack(fmt, expected)
        except OverflowError:
            same = False
        if not same:
            raise AssertionError(f"{path}: expected {expected!r} ({ty}), got {got!r}")
    else:
        desc = descs[ty]
        if not isinstance(got, dict):
            raise AssertionError(f"{path}: expected a {ty} object, got {got!r:.80}")
        names = [m.name for m in desc.members]
        if list(got) != names:
            raise AssertionError(f"{path}: expected members {names} in this order, got {list(got)}")
        for m in desc.members:
            _check(descs, m.type, m.dims, expected[m.name], got[m.name], f"{path}.{m.name}")


def check_value(desc_by_name: dict, type_name: str, expected: Any, got: Any) -> None:
    """Raises ``AssertionError`` naming the path of the first difference (``path_t.waypoints[3].id``).

    float32 members compare as float32 bit patterns (``struct.pack('>f')``), doubles as doubles; NaN equals NaN;
    JSON's ``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` are read as those values."""
    _check(desc_by_name, type_name, [], expected, got, type_name.rsplit(".", 1)[-1])


# ----------------------------------------------------------------------------------------------------------------
# Malformed inputs


def bad_blobs(cases_: Iterable, seed: int = 0, flips: int = 8, max_per_type: int = 3) -> list:
    """Malformed inputs made from up to ``max_per_type`` cases of each type: every strict truncation (must fail),
    ``flips`` random single-bit flips (a flip in the fingerprint must fail), every count member and string length
    set to huge and negative values, and the empty input (must fail)."""
    rng = random.Random(seed)
    per_type: dict = {}
    out = []
    for c in cases_:
        if per_type.get(c.type, 0) >= max_per_type:
            continue
        per_type[c.type] = per_type.get(c.type, 0) + 1
        for n in range(len(c.data)):
            out.append(BadBlob(c.type, c.data[:n], True, f"truncated to {n} of {len(c.data)} bytes"))
        for _ in range(flips):
            bit = rng.randrange(len(c.data) * 8)
            b = bytearray(c.data)
            b[bit // 8] ^= 1 << (bit % 8)
            out.append(BadBlob(c.type, bytes(b), bit < 64, f"bit {bit} flipped"))
        fields: list = []
        if encode(c.type, c.value, fields) != c.data:
            raise AssertionError(f"oracle self-check: {c.type}: encode() differs from the real binding")
        for offset, size, kind in fields:
            hi = (1 << (8 * size - 1)) - 1
            for v in sorted({hi, -1, 0, -(1 << (8 * size - 1)), 0x7FFFFFFF if size >= 4 else hi, (1 << 24) if size >= 4 else hi}):
                b = bytearray(c.data)
                b[offset:offset + size] = v.to_bytes(size, "big", signed=True)
                if bytes(b) != c.data:
                    out.append(BadBlob(c.type, bytes(b), False, f"{kind} at byte {offset} set to {v}"))
        out.append(BadBlob(c.type, c.data + b"\xff" * 7, False, "7 trailing bytes"))
    return out


# ----------------------------------------------------------------------------------------------------------------
# Driving a harness


#: A guard against a harness that hangs; not a performance bound.
HANG_GUARD_SECONDS = 1800


def _run_lines(cmd: Sequence, lines: list, env: dict | None, cwd: str | None) -> tuple:
    stdin = "".join(lines)
    proc = subprocess.run(list(map(str, cmd)), input=stdin, capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=HANG_GUARD_SECONDS)
    return proc.returncode, proc.stdout.splitlines(), proc.stderr


def _parse_json_line(line: str) -> Any:
    # "-0" must stay a negative zero for float members.
    return json.loads(line, parse_int=lambda s: -0.0 if s == "-0" else int(s))


def run_harness(cmd: Sequence, cases_: Sequence, env: dict | None = None, cwd: str | None = None,
                max_reports: int = 10) -> list:
    """Feeds ``cases_`` to a harness (``<type> <hex>`` per line) and checks each reply: ``ok``, ``reencoded``
    byte-identical to the real LCM's encoding, and the decoded value (:func:`check_value`). Raises one
    ``AssertionError`` listing the first ``max_reports`` failures; returns the parsed replies."""
    cases_ = list(cases_)
    code, out, err = _run_lines(cmd, [f"{c.type} {c.data.hex()}\n" for c in cases_], env, cwd)
    if code != 0:
        raise AssertionError(f"harness exited with {code}; stderr:\n{err[-4000:]}")
    if len(out) != len(cases_):
        raise AssertionError(f"harness wrote {len(out)} lines for {len(cases_)} inputs; stderr:\n{err[-4000:]}")
    descs = desc_by_name()
    failures, replies = [], []
    for c, line in zip(cases_, out):
        try:
            reply = _parse_json_line(line)
            replies.append(reply)
            if reply.get("ok") is not True:
                raise AssertionError(f"not ok: {reply.get('error')!r}")
            if reply.get("reencoded") != c.data.hex():
                raise AssertionError(f"re-encoded bytes differ from real LCM's:\n  real {c.data.hex()}\n  "
                                     f"got  {reply.get('reencoded')}")
            check_value(descs, c.type, c.value, reply.get("value"))
        except (AssertionError, ValueError) as e:
            failures.append(f"{c.type} {c.data.hex()[:200]}: {e}")
    if failures:
        shown = "\n".join(failures[:max_reports])
        raise AssertionError(f"{len(failures)} of {len(cases_)} cases failed:\n{shown}")
    return replies


def run_harness_bad(cmd: Sequence, blobs: Sequence, env: dict | None = None, cwd: str | None = None,
                    max_reports: int = 10) -> list:
    """Feeds malformed inputs (:func:`bad_blobs`) and checks the harness survives all of them: it exits 0 (a
    sanitizer report or crash fails), answers every line with JSON, gives ``ok: false`` with an ``error`` for every
    input a correct decoder must reject, and a ``value`` whenever it says ``ok: true``."""
    blobs = list(blobs)
    code, out, err = _run_lines(cmd, [f"{b.type} {b.data.hex()}\n" for b in blobs], env, cwd)
    if code != 0:
        raise AssertionError(f"harness exited with {code} on malformed input; stderr:\n{err[-4000:]}")
    if len(out) != len(blobs):
        raise AssertionError(f"harness wrote {len(out)} lines for {len(blobs)} inputs; stderr:\n{err[-4000:]}")
    failures, replies = [], []
    for b, line in zip(blobs, out):
        try:
            reply = _parse_json_line(line)
            replies.append(reply)
            if reply.get("ok") is True:
                if b.must_fail:
                    raise AssertionError("accepted, but a correct decoder must reject it")
                if "value" not in reply:
                    raise AssertionError("ok without a value")
            elif reply.get("ok") is False:
                if not isinstance(reply.get("error"), str) or not reply["error"]:
                    raise AssertionError("ok: false without an error message")
            else:
                raise AssertionError(f"no ok field: {line[:200]}")
        except (AssertionError, ValueError) as e:
            failures.append(f"{b.type} ({b.why}) {b.data.hex()[:200]}: {e}")
    if failures:
        shown = "\n".join(failures[:max_reports])
        raise AssertionError(f"{len(failures)} of {len(blobs)} malformed inputs mishandled:\n{shown}")
    return replies


if __name__ == "__main__":
    # A quick look: how many types and cases, and the first case of each type.
    descs = type_descriptors()
    cs = cases(0, int(os.environ.get("PER_TYPE", "3")))
    print(f"{len(descs)} types, {sum(d.fingerprint_only for d in descs)} fingerprint-only, {len(cs)} cases, "
          f"{len(bad_blobs(cs))} malformed inputs")
