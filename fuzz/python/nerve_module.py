"""Fuzzes what the `nerve` Python package does with bytes it did not make, with atheris (libFuzzer's engine).

Each input is one operation, chosen by its first byte (the low two bits; the others are flags):

- 0 decode: a message of one of the classes `nerve gen -p` writes for tests/corpus (lists or `--python-numpy`
  representation; the second byte picks the class, a flag prepends its fingerprint so that decoding gets past it),
  as bytes or bytearray. The native codec must give what the pure-Python one gives: the same value, or the same
  exception (type, message, offset); re-encoding the two values must agree too.
- 1 native entry point: `_nerve_native.decode_records(buf, off, n)` of a fixed-size struct with an arbitrary count
  and an offset within `buf` or just past it. A list it returns must be what the numpy builder makes of the same records; records
  past the end give None or an exception, never bytes read outside `buf`.
- 2 event log: the rest is a file, read by `nerve.EventLog` (damage skipped and listed), strictly (a prefix of the
  same events, then `LogDamageError` exactly when there was damage), by `nerve.lcm.EventLog` (the same events), and
  after a seek to a fuzzed offset and a fuzzed timestamp.
- 3 publish: a channel name (the second byte is its length; invalid UTF-8 becomes lone surrogates) and the bytes
  that follow, published on an `inproc://` bus with a subscription to every channel: it is received once, intact,
  or the publish raises. The name is also tried as a subscription pattern.

Any Python exception that is an `Exception` is a clear error and passes; a crash, or a Rust panic surfacing as
`pyo3_runtime.PanicException` (a `BaseException`), fails the run. atheris instruments the Python code (nerve's
wrappers, the generated classes and their runtime); the native module is not compiled for coverage, so the
corpus grows with the Python paths only, while a fault in native code is still caught.

    .venv/bin/python fuzz/python/nerve_module.py [LIBFUZZER FLAGS] [CORPUS DIR...]
    .venv/bin/python fuzz/python/nerve_module.py --write-seeds fuzz/corpus/python_nerve

NERVE_BIN=path names the `nerve` binary that generates the classes (default: target/debug/nerve, built as the interop
tests build it).
"""

import importlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import atheris

import numpy as np

with atheris.instrument_imports():
    import nerve
    import nerve.lcm

REPO = Path(__file__).resolve().parents[2]
WORK = Path(tempfile.mkdtemp(prefix="nerve-fuzz-python-"))


def nerve_bin() -> Path:
    if os.environ.get("NERVE_BIN"):
        return Path(os.environ["NERVE_BIN"]).resolve()
    # The workspace build of tests/interop/conftest.py (DEBUG_BUILD), not -p nerve-cli: after scripts/test's cargo test
    # it compiles nothing, where -p would compile zenoh and the nerve crates again with other features.
    subprocess.run(["cargo", "build", "-q", "--workspace", "--lib", "--bins", "--examples"], cwd=REPO, check=True)
    meta = subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=REPO, check=True,
                          capture_output=True, text=True).stdout
    return Path(json.loads(meta)["target_directory"]) / "debug" / "nerve"


def generated_classes(flags: list) -> list:
    """Every message class `nerve gen -p FLAGS` writes for tests/corpus, imported (sorted by module name). Both
    representations use the same module names, so a set's modules leave sys.modules once its classes are held."""
    out = WORK / ("gen" + "".join(flags))
    files = sorted(map(str, (REPO / "tests" / "corpus").rglob("*.lcm")))
    subprocess.run([str(nerve_bin()), "gen", "-p", *flags, "--ppath", str(out), *files], check=True)
    roots = {p.name for p in out.iterdir() if p.is_dir()} | {p.stem for p in out.glob("*.py")}
    sys.path.insert(0, str(out))
    importlib.invalidate_caches()
    classes = []
    try:
        # Only these modules (and nerve's, above) are instrumented: all of numpy would take half a minute.
        with atheris.instrument_imports():
            for py in sorted(out.rglob("*.py")):
                if py.name == "__init__.py" or py.parent == out:
                    continue
                module = importlib.import_module(".".join(py.relative_to(out).with_suffix("").parts))
                cls = getattr(module, py.stem, None)
                if isinstance(cls, type) and hasattr(cls, "_nerve_py_decode"):
                    classes.append(cls)
    finally:
        sys.path.remove(str(out))
        for name in [k for k in sys.modules if k.split(".")[0] in roots]:
            del sys.modules[name]
    return classes


def outcome(fn, *args):
    """("ok", value) or ("err", exception type, message, offset). Only `Exception`s are caught: a panic is not one."""
    try:
        return ("ok", fn(*args))
    except Exception as e:  # noqa: BLE001 - the exception itself is what is compared
        return ("err", type(e), str(e), getattr(e, "offset", None))


def raw(v):
    """A value with its representation (member classes, numpy dtype/shape/bytes, repr of numbers so NaN == NaN);
    the same as tests/interop/test_python.py compares the two codecs with."""
    if hasattr(v, "_get_packed_fingerprint") and hasattr(v, "__slots__"):
        return (type(v).__name__, [(k, raw(getattr(v, k))) for k in v.__slots__])
    if isinstance(v, np.ndarray):
        return ("ndarray", v.dtype.str, v.shape, v.flags.writeable, v.tobytes())
    if isinstance(v, (bytes, str)) or not hasattr(v, "__iter__"):
        return (type(v).__name__, repr(v))
    return (type(v).__name__, [raw(x) for x in v])


def check_decode(cls, blob: bytes, as_bytearray: bool):
    native = outcome(cls.decode, bytearray(blob) if as_bytearray else blob)
    pure = outcome(cls._nerve_py_decode, blob)
    if native[0] == "ok" and pure[0] == "ok":
        assert raw(native[1]) == raw(pure[1]), cls
        assert outcome(native[1].encode) == outcome(cls._nerve_py_encode, pure[1]), cls
    else:
        assert native == pure, (cls, native, pure)


def check_records(cls, buf: bytes, off: int, n: int):
    native = outcome(cls._nerve_native.decode_records, buf, off, n)
    if native[0] != "ok" or native[1] is None:
        return
    pure = outcome(lambda: cls._nerve_from_records(np.frombuffer(buf, cls._nerve_dtype, n, off)))
    assert pure[0] == "ok", (cls, off, n, len(buf), pure)
    assert raw(native[1]) == raw(pure[1]), (cls, off, n)


def events_of(log) -> list:
    return [(e.number, e.utime, e.channel, e.data) for e in log]


def check_log(blob: bytes, flags: int):
    path = WORK / "fuzz.log"
    path.write_bytes(blob)
    opened = outcome(nerve.EventLog, path)
    if opened[0] != "ok":
        return
    with opened[1] as log:
        events = events_of(log)
        damage = log.damage
    strict, failure = [], None
    with nerve.EventLog(path, strict=True) as log:
        try:
            for e in log:
                strict.append((e.number, e.utime, e.channel, e.data))
        except Exception as e:  # noqa: BLE001 - which exception it is is asserted
            failure = e
    assert strict == events[: len(strict)], "strict reading gives other events"
    assert (failure is None) == (not damage), (damage, failure)
    assert failure is None or isinstance(failure, nerve.LogDamageError), repr(failure)
    lcm_log = nerve.lcm.EventLog(str(path))
    assert [(e.eventnum, e.timestamp, e.channel, e.data) for e in lcm_log] == events
    with nerve.EventLog(path) as log:
        outcome(log.seek, flags * len(blob) // 63)
        outcome(log.read_next_event)
        utime = events[flags % len(events)][1] if events else flags << 40
        outcome(log.seek_to_timestamp, utime)
        outcome(log.read_next_event)


BUS = nerve.Bus("inproc://")
RECEIVED = []
BUS.subscribe("(?s).*", lambda channel, data: RECEIVED.append((channel, data)), capacity=4)


def check_publish(channel: str, data: bytes, flags: int):
    RECEIVED.clear()
    buffer = [data, bytearray(data), memoryview(data)][flags % 3]
    published = outcome(BUS.publish, channel, buffer)
    if published[0] == "ok":
        deadline = time.monotonic() + 5
        while not RECEIVED and time.monotonic() < deadline:
            BUS.handle_timeout(50)
        while BUS.handle_timeout(0):
            pass
        assert RECEIVED == [(channel, data)], (channel, data, RECEIVED)
    if flags & 8:
        sub = outcome(BUS.subscribe, channel, lambda c, d: None)
        if sub[0] == "ok":
            BUS.unsubscribe(sub[1])


CLASSES = generated_classes([]) + generated_classes(["--python-numpy"])
RECORDS = [c for c in CLASSES if getattr(c, "_nerve_dtype", None) is not None and "_nerve_native" in c.__dict__]


def TestOneInput(data: bytes):
    if len(data) < 2:
        return
    op, flags, pick, rest = data[0] & 3, data[0] >> 2, data[1], data[2:]
    if op == 0:
        cls = CLASSES[pick % len(CLASSES)]
        blob = cls._get_packed_fingerprint() + rest if flags & 1 else rest
        check_decode(cls, blob, bool(flags & 2))
    elif op == 1 and RECORDS and len(rest) >= 2:
        # Offsets up to 8 past the end too: the native code must refuse them (None) even when n == 0.
        buf = rest[2:]
        check_records(RECORDS[pick % len(RECORDS)], buf, rest[0] % (len(buf) + 9), rest[1] % 64)
    elif op == 2:
        check_log(rest, flags)
    elif op == 3:
        name = rest[:pick].decode("utf-8", "surrogateescape")
        check_publish(name, rest[pick:], flags)


def write_seeds(out: Path):
    """Seed inputs: real encodings of default messages, an event log, publications."""
    out.mkdir(parents=True, exist_ok=True)
    for i, cls in enumerate(CLASSES):
        encoded = outcome(lambda: cls().encode())
        if encoded[0] == "ok" and i % 4 == 0:
            (out / f"seed_decode_{cls.__module__}_{i}").write_bytes(bytes([0, i]) + encoded[1])
    for i, cls in enumerate(RECORDS[:4]):
        rec = cls().encode()[8:] * 3
        (out / f"seed_records_{cls.__module__}").write_bytes(bytes([1, i, 0, 3]) + rec)
    path = WORK / "seed.log"
    with nerve.EventLog(path, "w", overwrite=True) as log:
        for k in range(3):
            log.write_event(1_000_000 * k, f"CH{k}", struct.pack(">q", k) * (k + 1))
    (out / "seed_log").write_bytes(bytes([2 | 4 * 5, 0]) + path.read_bytes())
    (out / "seed_publish").write_bytes(bytes([3, 10]) + b"robot/pose" + b"\x01\x02\x03")
    (out / "seed_publish_odd_name").write_bytes(bytes([3 | 4 * 8, 5]) + b"a\nb\xff(" + b"data")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write-seeds"]:
        write_seeds(Path(sys.argv[2]))
    else:
        atheris.Setup(sys.argv, TestOneInput)
        atheris.Fuzz()
