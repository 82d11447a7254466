"""Nerve's generated Python with numpy arrays (`nerve gen -p --python-numpy`) against the real LCM 1.5.3 binding.

(The default mode, lcm-gen's lists, is compared side by side with lcm-gen's own classes in test_python_lcmgen.py.)

`nerve gen -p --python-numpy` runs over the whole corpus into a temporary directory, and its modules are imported next to the real
lcm-gen's (oracle.real_python_modules keeps the two sets of same-named packages apart). Per random case of every
type: the real LCM's bytes decode to the canonical value and re-encode to the same bytes; objects built from the
canonical value with plain lists, or from the real LCM object's attribute values, encode to the real LCM's bytes;
and malformed input raises nerve_lcm.DecodeError and nothing else.

Representation (nerve_lcm's docstring): a numeric or boolean array with one constant dimension of at most
TUPLE_MAX = 16 elements is a tuple of Python numbers, as LCM's Python gives it; other primitive arrays are numpy
arrays, 1-D byte arrays bytes.
"""

from __future__ import annotations

import importlib
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import oracle


@pytest.fixture(scope="module")
def generated(nerve_bin, corpus_files, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("nerve_python")
    proc = subprocess.run([str(nerve_bin), "gen", "-p", "--python-numpy", "--ppath", str(out), *map(str, corpus_files)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def nerve_classes(generated, type_descs) -> dict:
    """{full name: Nerve's class} for every corpus type, imported from the generated code (fingerprint-only types
    included: Nerve's Python must handle what lcm-gen's cannot)."""
    oracle.real_python_modules()  # import the real ones first; they keep their own packages in their globals
    roots = {d.name.split(".")[0] for d in type_descs} | {"nerve_lcm"}
    saved = {k: v for k, v in sys.modules.items() if k.split(".")[0] in roots}
    for k in saved:
        del sys.modules[k]
    sys.path.insert(0, str(generated))
    importlib.invalidate_caches()
    classes = {}
    try:
        for d in type_descs:
            pkg, short = d.name.rsplit(".", 1)
            classes[d.name] = getattr(importlib.import_module(f"{pkg}.{short}"), short)
        yield classes
    finally:
        sys.path.remove(str(generated))
        for k in [k for k in sys.modules if k.split(".")[0] in roots]:
            del sys.modules[k]
        sys.modules.update(saved)


@pytest.fixture(scope="module")
def rt(nerve_classes):
    """The nerve_lcm runtime module the generated classes use."""
    any_cls = next(iter(nerve_classes.values()))
    return sys.modules[any_cls.__module__].__dict__["_rt"]


@pytest.fixture(scope="module")
def descs() -> dict:
    return oracle.desc_by_name()


# ---------------------------------------------------------------------------------------------------------------
# Converting between Nerve objects and canonical values

TUPLE_MAX = 16  # nerve_lcm.TUPLE_MAX (checked in test_small_fixed_arrays_are_tuples_like_lcm)
PY_TYPE = {"float": float, "double": float, "boolean": bool}


def is_tuple_member(m) -> bool:
    """Whether a member is a tuple: a number or boolean array with one constant dimension of <= TUPLE_MAX."""
    return (m.is_primitive and m.type not in ("string", "byte") and len(m.dims) == 1
            and isinstance(m.dims[0], int) and m.dims[0] <= TUPLE_MAX)


def canonical(descs: dict, type_name: str, obj) -> dict:
    """A Nerve object as the oracle's canonical value (arrays as lists via .tolist(), bytes as lists of ints)."""
    out = {}
    for m in descs[type_name].members:
        out[m.name] = _canon_member(descs, m, getattr(obj, m.name), len(m.dims))
    return out


def _canon_member(descs, m, v, ndims):
    if ndims == 0:
        if m.is_primitive:
            return v
        return canonical(descs, m.type, v)
    if is_tuple_member(m):
        assert type(v) is tuple, f"{m.name}: expected a tuple, got {type(v).__name__}"
        assert len(v) == m.dims[0], f"{m.name}: {len(v)} elements, declared {m.dims[0]}"
        want = PY_TYPE.get(m.type, int)
        assert all(type(x) is want for x in v), f"{m.name}: elements {[type(x).__name__ for x in v]}, not {want}"
        return list(v)
    if m.is_primitive and m.type != "string":
        if isinstance(v, bytes):
            assert m.type == "byte" and ndims == 1, f"{m.name}: bytes for a {m.type} array of {ndims} dims"
            return list(v)
        assert isinstance(v, np.ndarray), f"{m.name}: expected a numpy array, got {type(v).__name__}"
        assert v.ndim == ndims, f"{m.name}: expected {ndims} dimensions, got shape {v.shape}"
        return v.tolist()
    return [_canon_member(descs, m, x, ndims - 1) for x in v]


def build(descs: dict, classes: dict, type_name: str, value: dict):
    """A Nerve object from a canonical value, with plain (nested) lists for every array."""
    obj = classes[type_name]()
    for m in descs[type_name].members:
        setattr(obj, m.name, _build_member(descs, classes, m, value[m.name], len(m.dims)))
    return obj


def _build_member(descs, classes, m, v, ndims):
    if ndims == 0:
        return v if m.is_primitive else build(descs, classes, m.type, v)
    return [_build_member(descs, classes, m, x, ndims - 1) for x in v]


# ---------------------------------------------------------------------------------------------------------------
# Against the real LCM's bytes


def test_decode_real_bytes_gives_canonical_values_and_reencodes_identically(nerve_classes, descs, real_cases):
    assert len({c.type for c in real_cases}) >= 30
    for c in real_cases:
        obj = nerve_classes[c.type].decode(c.data)
        oracle.check_value(descs, c.type, c.value, canonical(descs, c.type, obj))
        assert obj.encode() == c.data, f"{c.type}: re-encoding differs"


def test_objects_built_from_plain_lists_encode_like_real_lcm(nerve_classes, descs, real_cases):
    for c in real_cases:
        obj = build(descs, nerve_classes, c.type, c.value)
        assert obj.encode() == c.data, f"{c.type}: {obj.encode().hex()} != {c.data.hex()}"


def test_objects_built_from_real_lcm_attribute_values_encode_like_real_lcm(nerve_classes, descs, real_cases):
    real = oracle.real_python_modules()
    for c in real_cases:
        real_obj = real[c.type].decode(c.data)  # tuples, bytes and real nested objects, as LCM users have them
        obj = nerve_classes[c.type]()
        for name in real_obj.__slots__:
            setattr(obj, name, getattr(real_obj, name))
        assert obj.encode() == c.data, f"{c.type}: encoding from the real object's attributes differs"


def test_real_lcm_decodes_what_nerve_encodes_from_numpy_arrays(nerve_classes, descs, real_cases):
    """Arrays given as numpy arrays of another dtype (native float64, int64) encode the same."""
    real = oracle.real_python_modules()
    for c in real_cases:
        obj = build(descs, nerve_classes, c.type, c.value)
        for m in descs[c.type].members:
            if m.is_primitive and m.dims and m.type not in ("string", "boolean"):
                v = getattr(obj, m.name)
                dtype = np.float64 if m.type in ("float", "double") else np.int64
                if np.asarray(v).size:
                    setattr(obj, m.name, np.asarray(v, dtype=dtype))
        data = obj.encode()
        assert data == c.data, c.type
        oracle.check_value(descs, c.type, c.value, oracle.from_real(c.type, real[c.type].decode(data)))


def test_fingerprints_and_introspection_equal_the_real_modules(nerve_classes, type_descs):
    real = oracle.real_python_modules()
    for d in type_descs:
        ours = nerve_classes[d.name]
        assert ours._get_packed_fingerprint() == d.fingerprint.to_bytes(8, "big"), d.name
        assert ours._get_hash_recursive([]) == d.fingerprint, d.name
        assert ours().get_hash() == d.fingerprint, d.name
        if d.name in real:
            r = real[d.name]
            assert ours._get_packed_fingerprint() == r._get_packed_fingerprint(), d.name
            assert list(ours.__slots__) == list(r.__slots__), d.name
            assert ours.__typenames__ == r.__typenames__, d.name
            assert ours.__dimensions__ == r.__dimensions__, d.name


def test_constants_are_class_attributes_with_lcms_values(nerve_classes):
    real = oracle.real_python_modules()
    consts = nerve_classes["feat.consts_t"]
    r = real["feat.consts_t"]
    names = [k for k in vars(r) if k.isupper()]
    assert len(names) > 20
    for k in names:
        assert getattr(consts, k) == getattr(r, k), k
        assert type(getattr(consts, k)) is type(getattr(r, k)), k
    # lcm-gen's Python cannot even import these (octal literals): ours can, with the C values.
    octal = nerve_classes["fponly.octal_consts_t"]
    assert (octal.I8_OCT, octal.I8_NEG_OCT, octal.I32_OCT, octal.ZERO_OCT) == (15, -15, 0o777, 0)
    assert octal.I64_OCT == 0o777777777777777777777
    assert octal.I64_ALL_ONES == 0xFFFFFFFFFFFFFFFF  # as lcm-gen writes it (copied text)


def test_hex_and_octal_dimensions_work(nerve_classes):
    """lcm-gen's Python writes `'>0x3i'` into struct formats for these; ours encodes and decodes them."""
    cls = nerve_classes["fponly.hex_dims_t"]
    assert cls.__dimensions__ == [None, [2], [2], [2], [16], [8], ["n", 3], [3], ["n", 4], [2]]
    obj = cls()
    obj.n = 2
    obj.hex = [1, 2]
    obj.octal8 = list(range(8))
    obj.mixed = [[1, 2, 3], [4, 5, 6]]
    obj.by_oct_const = [b"abcd", b"efgh"]
    obj.strs = ["x", "yz"]
    data = obj.encode()
    assert data[:8] == cls._get_packed_fingerprint()
    back = cls.decode(data)
    assert back.hex == (1, 2)
    assert back.octal8 == tuple(float(i) for i in range(8))
    assert back.mixed.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert back.by_oct_const.tolist() == [list(b"abcd"), list(b"efgh")]
    assert back.strs == ["x", "yz"]
    assert back.encode() == data


# ---------------------------------------------------------------------------------------------------------------
# Malformed input


def test_malformed_input_raises_decode_error_and_nothing_else(nerve_classes, real_cases, rt):
    blobs = oracle.bad_blobs(real_cases, seed=1)
    assert len(blobs) > 1000
    failures = []
    for b in blobs:
        cls = nerve_classes[b.type]
        try:
            obj = cls.decode(b.data)
        except rt.DecodeError as e:
            assert isinstance(e, ValueError)
            assert 0 <= e.offset <= max(len(b.data), 8), (b.type, b.why, e.offset)
            continue
        except Exception as e:  # noqa: BLE001 - any other exception type is the failure we look for
            failures.append(f"{b.type} ({b.why}): {type(e).__name__}: {e}")
            continue
        if b.must_fail:
            failures.append(f"{b.type} ({b.why}): decoded without an error")
            continue
        obj.encode()  # whatever decoded must encode again
    assert not failures, "\n".join(failures[:20])


def test_truncated_message_error_names_type_and_offset(nerve_classes, rt):
    cls = nerve_classes["seed.path_t"]
    wp = nerve_classes["seed.waypoint_t"](id="héllo", position=[1.0, 2.0])
    data = cls(timestamp=5, num_waypoints=1, waypoints=[wp]).encode()
    with pytest.raises(rt.DecodeError) as e:
        cls.decode(data[:-3])
    assert e.value.offset == 8 + 12 + 4 + 7 - 1 + 1  # the float[2] after the string
    assert "truncated" in str(e.value)
    with pytest.raises(ValueError):
        cls.decode(b"\0" * 8 + data[8:])
    # a huge count is refused before anything is allocated
    huge = data[:16] + (2**31 - 1).to_bytes(4, "big") + data[20:]
    with pytest.raises(rt.DecodeError, match="count 2147483647"):
        cls.decode(huge)


def test_deep_nesting_is_a_decode_error_not_a_recursion_error(nerve_classes, rt):
    cls = nerve_classes["feat.list_t"]
    node = b"\0\0\0\x01\x01"  # value 1, has_next 1
    data = cls._get_packed_fingerprint() + node * 100000 + b"\0\0\0\x01\x00"
    with pytest.raises(rt.DecodeError, match="nests too deeply"):
        cls.decode(data)
    ok = cls._get_packed_fingerprint() + node * 50 + b"\0\0\0\x02\x00"
    assert cls.decode(ok).encode() == ok


def test_nesting_limit_is_the_rust_decoders_whatever_the_callers_stack(nerve_classes, rt):
    # 256 levels of a recursive struct decode (nerve-codec's MAX_DEPTH), 257 do not, natively and in pure Python
    # alike, and the answer does not depend on how deep the caller's stack is. The fuzzer (python_nerve) once found a
    # message whose error differed between the two codecs: the native one hands deep messages to the pure one a
    # frame deeper, and Python's recursion limit, then the only bound, was hit there first.
    cls = nerve_classes["feat.list_t"]
    node, last = b"\0\0\0\x01\x01", b"\0\0\0\x02\x00"
    fits = cls._get_packed_fingerprint() + node * 255 + last
    too_deep = cls._get_packed_fingerprint() + node * 256 + last

    def outcomes(depth):
        if depth:
            return outcomes(depth - 1)
        got = []
        for decode in (cls.decode, cls._nerve_py_decode):
            try:
                got.append(("ok", decode(fits).encode() == fits))
            except rt.DecodeError as e:
                got.append(("err", str(e)))
            try:
                decode(too_deep)
                got.append(("ok", None))
            except rt.DecodeError as e:
                got.append(("err", str(e), e.offset))
        return got

    shallow = outcomes(0)
    assert shallow[0] == shallow[2] == ("ok", True)
    assert shallow[1] == shallow[3] and "nests too deeply" in shallow[1][1]
    assert outcomes(400) == shallow


def test_invalid_utf8_is_a_decode_error(nerve_classes, rt):
    cls = nerve_classes["seed.waypoint_t"]
    data = cls(id="ab").encode()
    bad = data[:12] + b"\xff" + data[13:]
    with pytest.raises(rt.DecodeError, match="UTF-8"):
        cls.decode(bad)
    nonul = data[:14] + b"x" + data[15:]
    with pytest.raises(rt.DecodeError, match="NUL"):
        cls.decode(nonul)


# ---------------------------------------------------------------------------------------------------------------
# LCM's API around the codec


def test_decode_accepts_bytes_buffers_and_file_like_objects(nerve_classes):
    cls = nerve_classes["seed.laser_t"]
    data = cls(utime=3, nranges=2, ranges=[1.5, 2.5], rad0=1.0, radstep=0.5).encode()
    for src in (data, bytearray(data), memoryview(data), io.BytesIO(data)):
        assert cls.decode(src).encode() == data
    # _encode_one / _decode_one with file-like buffers, as LCM's generated code calls them
    buf = io.BytesIO()
    cls.decode(data)._encode_one(buf)
    assert buf.getvalue() == data[8:]
    stream = io.BytesIO(data[8:] + b"tail")
    assert cls._decode_one(stream).encode() == data
    assert stream.read() == b"tail"


def test_small_fixed_arrays_are_tuples_like_lcm(nerve_classes, descs, real_cases, rt):
    """Every member under the tuple rule decodes to a tuple equal, element by element and in element type, to what
    the real LCM's Python decodes (a tuple from struct.unpack; a list of bools for boolean arrays)."""
    assert rt.TUPLE_MAX == TUPLE_MAX
    real = oracle.real_python_modules()
    checked = []

    def walk(type_name, ours, theirs, path):
        for m in descs[type_name].members:
            a, b = getattr(ours, m.name), getattr(theirs, m.name)
            where = f"{path}.{m.name}"
            if is_tuple_member(m):
                assert type(a) is tuple, (where, type(a))
                assert [type(x) for x in a] == [type(x) for x in b], where
                assert repr(a) == repr(tuple(b)), (where, a, b)  # repr: NaN equals NaN
                checked.append(where)
            elif not m.is_primitive:
                pairs = [(a, b)]
                for _ in m.dims:
                    pairs = [(x, y) for p, q in pairs for x, y in zip(p, q, strict=True)]
                for i, (x, y) in enumerate(pairs):
                    walk(m.type, x, y, f"{where}[{i}]")

    for c in real_cases:
        if c.type in real:
            walk(c.type, nerve_classes[c.type].decode(c.data), real[c.type].decode(c.data), c.type)
    names = {w.split("[")[0] for w in checked}
    for want in ("seed.path_t.waypoints", "lcmtest.primitives_t.orientation", "lcmtest.bools_t.fixed_array",
                 "exlcm.example_t.position", "lidar.lidar_t.points"):
        assert any(n.startswith(want) for n in names), (want, sorted(names)[:20])


def test_tuple_rule_boundaries(nerve_bin, tmp_path):
    """<= 16 elements and one constant dimension: a tuple; 17, two dimensions, a variable size, bytes: as before.
    The same with and without the native accelerator, decoded and as defaults, also inside a StructArray."""
    src = tmp_path / "b.lcm"
    src.write_text("package b; struct e_t { float a[16]; int8_t b[17]; boolean c[2]; double d[2][2]; int32_t n; "
                   "int16_t v[n]; byte y[2]; float one[1]; }\n"
                   "struct r_t { int32_t n; e2_t recs[n]; }\nstruct e2_t { boolean f[2]; double g[1]; int8_t h; }\n")
    out = tmp_path / "py"
    subprocess.run([str(nerve_bin), "gen", "-p", "--python-numpy", "--ppath", str(out), str(src)], check=True)
    code = """if 1:
        import sys; sys.path.insert(0, sys.argv[1])
        import numpy as np, nerve_lcm
        from b.e_t import e_t; from b.r_t import r_t; from b.e2_t import e2_t
        def kinds(o):
            return {k: type(getattr(o, k)).__name__ for k in o.__slots__}
        want = dict(a="tuple", b="ndarray", c="tuple", d="ndarray", n="int", v="ndarray", y="bytes",
                    one="tuple")
        new = e_t()
        assert kinds(new) == want, kinds(new)
        assert new.a == (0.0,) * 16 and new.c == (False, False) and new.one == (0.0,)
        m = e_t(a=np.arange(16, dtype="<f8"), b=list(range(17)), c=[1, 0], d=[[1, 2], [3, 4]], n=2, v=(5, 6),
                one=[2.5])
        back = e_t.decode(m.encode())
        assert kinds(back) == want, kinds(back)
        assert back.a == tuple(float(i) for i in range(16)) and back.c == (True, False) and back.one == (2.5,)
        assert all(type(x) is float for x in back.a) and all(type(x) is bool for x in back.c)
        assert back.encode() == m.encode()
        r = r_t(n=2, recs=[e2_t(f=(True, False), g=(1.5,), h=-1), e2_t()])
        got = r_t.decode(r.encode()).recs
        assert isinstance(got, nerve_lcm.StructArray)
        assert [(x.f, x.g, x.h) for x in got] == [((True, False), (1.5,), -1), ((False, False), (0.0,), 0)]
        assert all(type(v) is bool for x in got for v in x.f)
        print(nerve_lcm.NATIVE)
    """
    import os

    seen = set()
    for pure in ("1", ""):
        env = dict(os.environ, NERVE_LCM_PURE=pure)
        r = subprocess.run([sys.executable, "-c", code, str(out)], env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        seen.add(r.stdout.strip())
    assert "False" in seen


def test_decoded_arrays_are_numpy_views_and_bytes(nerve_classes):
    laser = nerve_classes["seed.laser_t"]
    msg = laser.decode(laser(nranges=3, ranges=[1, 2, 3]).encode())
    assert isinstance(msg.ranges, np.ndarray) and msg.ranges.dtype == np.dtype(">f4")
    assert not msg.ranges.flags.writeable  # like LCM's tuples; .astype(np.float32) gives a writable copy
    image = nerve_classes["seed.image_t"]
    img = image.decode(image(size=3, data=b"\x01\x02\x03").encode())
    assert img.data == b"\x01\x02\x03" and type(img.data) is bytes
    multi = nerve_classes["lcmtest.multidim_array_t"]
    m = multi()
    assert isinstance(m, multi)


def test_defaults_like_lcm(nerve_classes, type_descs):
    """A new object holds zeros, empty strings and arrays of their fixed size, as LCM's (and encodes as the oracle's
    all-zero value; lcm-gen's own default for a fixed byte array is b"", which does not even encode correctly)."""
    real = oracle.real_python_modules()
    for d in type_descs:
        ours = nerve_classes[d.name]()
        if not d.fingerprint_only:
            zero = oracle.make_value(d.name, 0, "zero")
            assert ours.encode() == oracle.encode(d.name, zero), d.name
        if d.name not in real:
            continue
        theirs = real[d.name]()
        for m in d.members:
            a, b = getattr(ours, m.name), getattr(theirs, m.name)
            if m.is_primitive and m.dims and m.type != "string":
                if m.type == "byte":
                    continue
                if is_tuple_member(m):
                    assert type(a) is tuple, (d.name, m.name, a)  # LCM's __init__ makes a list; its decode a tuple
                a = np.asarray(a).tolist()
            elif not m.is_primitive:
                continue
            assert a == b, (d.name, m.name, a, b)


def test_struct_array_keeps_lcms_list_api(nerve_classes, rt):
    lidar, point = nerve_classes["lidar.lidar_t"], nerve_classes["lidar.lidar_point_t"]
    pts = [point(position=[i, i + 0.5, -i], intensity=i % 256) for i in range(1000)]
    data = lidar(npoints=len(pts), points=pts).encode()
    msg = lidar.decode(data)
    assert isinstance(msg.points, rt.StructArray)
    assert len(msg.points) == 1000
    assert msg.encode() == data  # untouched: re-encoded straight from the bytes
    rec = msg.points.to_numpy()
    assert rec["intensity"].tolist() == [i % 256 for i in range(1000)]
    p = msg.points[7]
    assert isinstance(p, point)
    assert p.position == (7.0, 7.5, -7.0) and p.intensity == 7
    assert [q.intensity for q in msg.points][:3] == [0, 1, 2]
    assert msg.points[-1].intensity == 999 % 256
    assert [q.intensity for q in msg.points[10:12]] == [10, 11]
    msg.points[3].intensity = 200  # mutation of an element sticks
    msg.points[4] = point(position=[9, 9, 9], intensity=9)
    again = lidar.decode(msg.encode())
    assert again.points[3].intensity == 200
    assert again.points[4].position == (9.0, 9.0, 9.0)
    msg.points.append(point())
    msg.npoints += 1
    assert len(lidar.decode(msg.encode()).points) == 1001
    msg.points = msg.points[:2]  # assigning a plain list works
    msg.npoints = 2
    assert len(lidar.decode(msg.encode()).points) == 2
    # a numpy structured array, or a StructArray made from one, encodes without building objects
    arr = np.zeros(5, dtype=[("position", "<f4", (3,)), ("intensity", "u1")])
    arr["intensity"] = [1, 2, 3, 4, 5]
    a = lidar(npoints=5, points=arr).encode()
    b = lidar(npoints=5, points=rt.StructArray.from_numpy(point, arr)).encode()
    assert a == b
    assert [q.intensity for q in lidar.decode(a).points] == [1, 2, 3, 4, 5]


def test_encode_errors_are_value_and_struct_errors(nerve_classes, rt):
    import struct

    laser = nerve_classes["seed.laser_t"]
    with pytest.raises(rt.EncodeError):
        laser(nranges=5, ranges=[1, 2]).encode()  # fewer elements than the count
    with pytest.raises(struct.error):
        laser(utime=2**63).encode()
    with pytest.raises(ValueError):
        laser(nranges=1, ranges=["x"]).encode()
    # longer than the count: the first n are encoded, as LCM does
    assert laser.decode(laser(nranges=1, ranges=[1, 2, 3]).encode()).ranges.tolist() == [1.0]


def test_package_init_imports_classes_like_lcmgen(generated, nerve_classes):
    init = (generated / "seed" / "__init__.py").read_text()
    for name in ("waypoint_t", "path_t", "image_t", "laser_t"):
        assert f"from .{name} import {name} as {name}" in init
    assert (generated / "nerve_lcm.py").exists()
    assert (generated / "deep" / "__init__.py").exists() and (generated / "deep" / "pkg" / "__init__.py").exists()


def test_python_no_init_writes_no_init_files(nerve_bin, corpus_files, tmp_path):
    proc = subprocess.run([str(nerve_bin), "gen", "-p", "--python-numpy", "--python-no-init", "--ppath", str(tmp_path),
                           *map(str, corpus_files)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert not list(tmp_path.rglob("__init__.py"))
    assert (tmp_path / "seed" / "path_t.py").exists()
    # the modules still import (namespace packages), in a fresh interpreter
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from seed.path_t import path_t; "
            "from feat.struct_arrays_t import struct_arrays_t; "
            "assert struct_arrays_t.decode(struct_arrays_t().encode()).encode() == struct_arrays_t().encode()")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)


def test_package_less_nested_types_work(nerve_bin, tmp_path):
    """lcm-gen's Python writes broken imports for nested types without a package."""
    src = tmp_path / "np.lcm"
    src.write_text("struct sub_t { int32_t x; string s; }\nstruct top_t { sub_t a; int8_t n; sub_t b[n]; }\n")
    out = tmp_path / "py"
    proc = subprocess.run([str(nerve_bin), "gen", "-p", "--python-numpy", "--ppath", str(out), str(src)], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from top_t import top_t; from sub_t import sub_t; "
            "t = top_t(n=2, b=[sub_t(x=1, s='a'), sub_t(x=2)]); t.a.x = 7; d = t.encode(); "
            "u = top_t.decode(d); assert (u.a.x, u.b[1].x, u.b[0].s) == (7, 2, 'a'); assert u.encode() == d")
    subprocess.run([sys.executable, "-c", code, str(out)], check=True)


# ---------------------------------------------------------------------------------------------------------------
# The native accelerator (bindings/python) and the pure-Python fallback


def _outcome(fn, *args):
    """What a call gives: ("ok", value) or ("err", exception type, message, offset)."""
    try:
        return ("ok", fn(*args))
    except Exception as e:  # noqa: BLE001 - the exception itself is what is compared
        return ("err", type(e), str(e), getattr(e, "offset", None))


def _raw(v):
    """A value with its representation: the class of every member, numpy dtype, shape and writability, tuple or
    list, element types (repr of the numbers, so NaN equals NaN; the bytes of numpy arrays)."""
    if hasattr(v, "_get_packed_fingerprint") and hasattr(v, "__slots__"):
        return (type(v).__name__, [(k, _raw(getattr(v, k))) for k in v.__slots__])
    if isinstance(v, np.ndarray):
        return ("ndarray", v.dtype.str, v.shape, v.flags.writeable, v.tobytes())
    if isinstance(v, (bytes, str)) or not hasattr(v, "__iter__"):
        return (type(v).__name__, repr(v))
    return (type(v).__name__, [_raw(x) for x in v])


def test_native_accelerator_is_in_use_when_installed(nerve_classes, rt):
    """scripts/setup installs the nerve package (nerve._native) into the project's venv, so there it must be found and used."""
    import importlib.util
    import os

    venv = Path(__file__).resolve().parents[2] / ".venv"
    installed = importlib.util.find_spec("nerve._native") is not None
    if Path(sys.prefix).resolve() == venv.resolve() and not os.environ.get("NERVE_LCM_PURE"):
        assert installed, "nerve._native is not installed in .venv: run scripts/setup"
    if not installed:
        pytest.skip("nerve._native is not installed in this Python")
    assert rt.NATIVE
    path = nerve_classes["seed.path_t"]
    assert path.__dict__["_nerve_native"].is_native()
    assert path.decode is path.__dict__["_nerve_native"].decode or "Codec" in repr(path._nerve_native)
    # every corpus type without enums compiles natively
    for name, cls in nerve_classes.items():
        native = cls.__dict__.get("_nerve_native")
        assert native is not None, name
    assert nerve_classes["lidar.lidar_t"]._nerve_native.is_native()


def test_native_and_pure_codecs_agree_on_every_case_and_every_error(nerve_classes, descs, real_cases, rt):
    """The same bytes, values and errors (type, message, offset) from the native codec and the pure-Python one."""
    if not rt.NATIVE:
        pytest.skip("nerve._native is not installed in this Python")
    for c in real_cases:
        cls = nerve_classes[c.type]
        a, b = cls.decode(c.data), cls._nerve_py_decode(c.data)
        assert _raw(a) == _raw(b), c.type
        assert a.encode() == cls._nerve_py_encode(a) == c.data, c.type
        built = build(descs, nerve_classes, c.type, c.value)  # plain lists
        assert built.encode() == cls._nerve_py_encode(built) == c.data, c.type
    for b in oracle.bad_blobs(real_cases, seed=2):
        cls = nerve_classes[b.type]
        n, p = _outcome(cls.decode, b.data), _outcome(cls._nerve_py_decode, b.data)
        if n[0] == "ok" and p[0] == "ok":
            assert _raw(n[1]) == _raw(p[1]), (b.type, b.why)
            # (a signaling NaN in a small float array is a Python float either way, so it re-encodes the same)
            assert _outcome(n[1].encode) == _outcome(cls._nerve_py_encode, p[1]), (b.type, b.why)
        else:
            assert n == p, (b.type, b.why)


def test_struct_array_elements_are_built_the_same_natively_and_in_python(nerve_classes, real_cases, rt):
    """A packed StructArray's elements from the native builder equal those of the generated numpy builder
    (_nerve_from_records), tuples included; both paths are normally reached only one way, so call them directly."""
    if not rt.NATIVE:
        pytest.skip("nerve._native is not installed in this Python")
    n_arrays = 0
    for c in real_cases:
        obj = nerve_classes[c.type].decode(c.data)
        for k in obj.__slots__:
            sa = getattr(obj, k)
            if type(sa) is not rt.StructArray or sa._items is not None or not sa._n:
                continue
            elem = sa._cls
            native = elem._nerve_native.decode_records(sa._buf, sa._off, sa._n)
            pure = elem._nerve_from_records(np.frombuffer(sa._buf, elem._nerve_dtype, sa._n, sa._off))
            assert _raw(native) == _raw(pure), (c.type, k)
            n_arrays += 1
    assert n_arrays >= 5


def test_native_encode_errors_equal_the_pure_ones(nerve_classes, rt):
    laser = nerve_classes["seed.laser_t"]
    point = nerve_classes["lidar.lidar_point_t"]
    path = nerve_classes["seed.path_t"]
    wp = nerve_classes["seed.waypoint_t"]
    cases = [
        laser(nranges=5, ranges=[1, 2]),
        laser(utime=2**63),
        laser(utime=True, nranges=1, ranges=[True]),
        laser(nranges=1, ranges=["x"]),
        laser(nranges=1, ranges=[1e300]),
        laser(nranges=2, ranges=np.array([1.5, 2.5, 3.5])),
        laser(nranges=2, ranges=np.array([1.5, 2.5], dtype="<f4")),
        laser(nranges=2, ranges=np.array([[1.5, 2.5]], dtype=">f4")),
        laser(nranges=-1),
        laser(rad0=np.float32(1.5)),
        point(position=(1, 2.5, float("nan")), intensity=256),
        point(position=np.zeros(3, np.int64), intensity=np.uint8(7)),
        path(num_waypoints=2, waypoints=(wp(id="a"), wp(id="\udc80"))),
        path(num_waypoints=1, waypoints=[wp(id=b"bytes")]),
        path(num_waypoints=1, waypoints=[point()]),
        path(num_waypoints=1, waypoints=[wp(position=[1.0])]),
        wp(position=(1.0, 2.0)),
        wp(position=(1, 2.5, 3)),  # longer than the array: the first two, as LCM's [:n]
        wp(position=(1.0,)),
        wp(position=("a", 1.0)),
        wp(position=(1e300, 0.0)),
        wp(position=np.array([1.5, 2.5], dtype="<f4")),
        wp(position=np.array([1, 2], dtype=np.int64)),
        point(position=(True, 2, 3.5), intensity=1),
        nerve_classes["lcmtest.bools_t"](fixed_array=(True, 0, 2)),
        nerve_classes["lcmtest.bools_t"](fixed_array=[True, False]),
        nerve_classes["lcmtest.primitives_t"](orientation=(1.0, 0.0, 0.0, 0.0), position=np.zeros(3)),
    ]
    for obj in cases:
        cls = type(obj)
        assert _outcome(obj.encode) == _outcome(cls._nerve_py_encode, obj), repr(obj.__class__)


def test_pure_fallback_runs_without_the_accelerator(generated):
    """NERVE_LCM_PURE=1 turns the accelerator off: the pure-Python codec alone gives the same bytes."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import nerve_lcm; assert not nerve_lcm.NATIVE\n"
        "from seed.path_t import path_t; from seed.waypoint_t import waypoint_t\n"
        "from lidar.lidar_t import lidar_t; from lidar.lidar_point_t import lidar_point_t\n"
        "p = path_t(timestamp=1, num_waypoints=2, waypoints=[waypoint_t(id='x', position=[1, 2]), waypoint_t()])\n"
        "l = lidar_t(npoints=3, points=[lidar_point_t(position=[i, 2, 3], intensity=i) for i in range(3)])\n"
        "print(p.encode().hex(), l.encode().hex(), path_t.decode(p.encode()).waypoints[0].position,\n"
        "      [q.intensity for q in lidar_t.decode(l.encode()).points])\n"
    )
    import os

    outs = []
    for pure in ("1", ""):
        env = dict(os.environ, NERVE_LCM_PURE=pure)
        outs.append(subprocess.run([sys.executable, "-c", code.replace("assert not", "assert not" if pure else "0 and"),
                                    str(generated)], env=env, capture_output=True, text=True, check=True).stdout)
    assert outs[0] == outs[1]


def test_freeing_decoded_objects_native_dealloc(generated):
    """The accelerator frees instances of the plain slotted classes itself (lib.rs, plain_dealloc): references to
    slot values and to the class are all given back, Python subclasses (own slots, __dict__, weak references) still
    free correctly, a long chain of instances does not overflow the C stack, cycles are collected, and a __del__
    given to a class later runs. In a child process: the test changes classes."""
    code = r'''
import gc, sys, weakref
sys.path.insert(0, sys.argv[1])
import nerve_lcm
from seed.path_t import path_t
from seed.waypoint_t import waypoint_t
p = path_t(timestamp=1, num_waypoints=3,
           waypoints=[waypoint_t(id="w%d" % i, position=(i + 0.5, -i)) for i in range(3)])
data = p.encode()
path_t.decode(data)  # compiles the plans
rc = sys.getrefcount(waypoint_t), sys.getrefcount(path_t)
for _ in range(1000):
    m = path_t.decode(data)
    assert m.waypoints[2].id == "w2" and m.waypoints[1].position == (1.5, -1.0)
    del m
assert (sys.getrefcount(waypoint_t), sys.getrefcount(path_t)) == rc, "class references"

# freed instances' blocks are reused (lib.rs, SPARE): what is made from a kept block is a complete, tracked
# instance, references stay balanced, and a message larger than what is kept decodes and frees the same way
if nerve_lcm.NATIVE and nerve_lcm._native.REUSES_INSTANCES:
    class Filler:  # an object of a waypoint's size: pymalloc would hand it a block freed back to it
        __slots__ = ("a", "b")
    kept = [path_t.decode(data) for _ in range(2)]
    ids = {id(w) for m in kept for w in m.waypoints}
    del kept
    fillers = [Filler() for _ in range(64)]
    again = path_t.decode(data)
    assert {id(w) for w in again.waypoints} <= ids, "blocks reused (kept aside, not taken by other objects)"
    del fillers
    assert all(gc.is_tracked(w) and type(w) is waypoint_t for w in again.waypoints)
    assert [(w.id, w.position) for w in again.waypoints] == [("w%d" % i, (i + 0.5, float(-i))) for i in range(3)]
    del again
big = path_t(timestamp=2, num_waypoints=3000,
             waypoints=[waypoint_t(id="b%d" % i, position=(i, i)) for i in range(3000)]).encode()
for _ in range(3):
    m = path_t.decode(big)
    assert m.waypoints[2999].id == "b2999" and m.encode() == big
    del m
assert (sys.getrefcount(waypoint_t), sys.getrefcount(path_t)) == rc, "class references after reuse"

# slot values are released
s, t = object(), object()
base = sys.getrefcount(s), sys.getrefcount(t)
w = path_t.decode(data).waypoints[0]
w.id, w.position = s, t
del w
assert (sys.getrefcount(s), sys.getrefcount(t)) == base, "slot references"

# Python subclasses: own slots, or a __dict__ and weak references
class W1(waypoint_t):
    __slots__ = ("extra",)
class W2(waypoint_t):
    pass
for W in (W1, W2):
    rcw = sys.getrefcount(W)
    for _ in range(3):
        x = W(id=s)
        x.extra = t
        x.position = s
        dead = []
        r = weakref.ref(x, dead.append) if W is W2 else None
        del x
        assert W is W1 or dead, "weak reference callback"
        del r, dead
    assert (sys.getrefcount(s), sys.getrefcount(t)) == base, W.__name__
    assert sys.getrefcount(W) == rcw, W.__name__
    # the encoder and decoder keep to the exact class; a subclass instance encodes through the pure path
    assert path_t(num_waypoints=1, waypoints=[W(id="a", position=(1.0, 2.0))]).encode() == \
        path_t(num_waypoints=1, waypoints=[waypoint_t(id="a", position=(1.0, 2.0))]).encode()

# a long chain through the slots themselves (no list or tuple between): freed without recursion
rc_chain = sys.getrefcount(waypoint_t)
head = waypoint_t()
for _ in range(300000):
    n = waypoint_t()
    n.id, n.position = head, s
    head = n
del head, n
assert sys.getrefcount(s) == base[0], "chain"
assert sys.getrefcount(waypoint_t) == rc_chain, "chain class references"

# cycles are found by the collector
gc.collect()
c = path_t.decode(data).waypoints[0]
c.id, c.position = c, t
del c
gc.collect()
assert sys.getrefcount(t) == base[1], "cycle"

# a finalizer given to the class later runs
log = []
waypoint_t.__del__ = lambda self: log.append(self.id)
m = path_t.decode(data)
del m
assert sorted(log) == ["w0", "w1", "w2"], log
x = W1(id="sub")
del x
assert log[-1] == "sub", log
print("ok", nerve_lcm.NATIVE)
'''
    out = subprocess.run([sys.executable, "-c", code, str(generated)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok")
