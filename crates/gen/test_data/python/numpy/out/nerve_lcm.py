"""Runtime for the Python code that ``nerve gen -p`` writes: errors, checked reads, array helpers and StructArray.

Generated modules import only this module and ``struct`` (and ``numpy`` with ``--python-numpy``). The generated
code is straight-line per type; what lives here is what every type shares. This module imports numpy only when a
numpy-mode helper first runs.

Representation of values, by default (a drop-in for lcm-gen's ``-p`` classes): exactly what lcm-gen's generated
Python gives. A new object holds lists (fixed arrays filled with zeros, nested as lcm-gen nests them; variable
arrays empty; a byte array ``bytes`` - zero bytes of the fixed size, where lcm-gen leaves ``b""``, so that a new
message encodes), nested objects, ``0``/``0.0``/``False``/``""``. A decoded message holds, for an array, lists for
the outer dimensions and in the innermost one a tuple of numbers, a list of bools or ``bytes``; arrays of strings,
structs and enums are (nested) lists. Encoding takes lists, tuples, bytes and numpy arrays alike.

Representation with ``nerve gen --python-numpy`` (the choices, and why):

- Scalars are Python ``int``/``float``/``bool``/``str``, exactly as LCM's generated Python gives them.
- A **small fixed-size one-dimensional** numeric or boolean array (one constant dimension of at most
  :data:`TUPLE_MAX` = 16 elements: ``float position[2]``, ``double orientation[4]``) is a ``tuple`` of Python
  numbers (bools for ``boolean``), and a new object holds a tuple of zeros. LCM's Python gives a tuple for these
  (``struct.unpack``), so code written for LCM (``x, y = msg.position``, ``msg.orientation == (1.0, 0, 0, 0)``,
  hashing) keeps working; and making a numpy array costs several times as much as unpacking a few numbers into a
  tuple (~0.45 us against ~0.1 us for two floats), which dominated decoding of messages holding many small vectors
  (``path_t``'s 50 waypoints). The tuple is read with the
  scalars around it in one ``unpack_from``. (LCM's own decoder gives a *list* for boolean arrays and its
  ``__init__`` lists of zeros; a tuple is used for every such member here, so the type does not depend on where the
  value came from.)
- Any other numeric or boolean array (variable size, more than 16 elements, or several dimensions) is a numpy
  array of the declared shape. Numeric arrays are
  **big-endian read-only views** of the message bytes (dtype ``>f4``, ``>i4``, ...): decoding is one
  ``np.frombuffer`` with no copy and no byte swap, and re-encoding an unchanged array is one ``tobytes``. LCM's own
  decoder gives immutable tuples, so read-only is no loss; call ``.astype(np.float32)`` (or ``np.array(a)``) for a
  writable native-endian copy, e.g. for libraries that insist on native byte order. Boolean arrays are ``np.bool_``.
- A one-dimensional ``byte`` array is ``bytes`` (one copy), as in LCM, so ``.decode()``, ``==``, hashing and
  ``np.frombuffer(msg.data, np.uint8)`` keep working; a multi-dimensional ``byte`` array is a ``uint8`` array.
- String arrays and arrays of enums are (nested) lists; arrays of structs too, except one case:
- A one-dimensional array of a struct whose encoded size is fixed (no strings, no variable arrays inside) is a
  :class:`StructArray`: decoding only checks that the bytes are there and keeps a reference to them (every byte
  pattern of such a struct is a valid value, so nothing can fail later). The first access to an element builds every
  element at once with numpy (one ``frombuffer`` with a structured dtype, one conversion per field), after which it
  is an ordinary mutable list of objects. Re-encoding an array that was never touched is one memcpy.
  ``len()`` never materializes; ``to_numpy()`` gives a structured array without building objects.

Native accelerator: when the ``nerve`` package's extension ``nerve._native`` (``bindings/python``, installed with
``pip install ./bindings/python``; ``scripts/setup`` does it) imports, :func:`accelerate` gives every generated
class its native ``decode`` / ``encode`` (and StructArray its native element builder). That code is a fast path
only: on any input it does not handle exactly, and on every malformed message, it runs this module's pure-Python
codec on the same input, so results and errors are the same with or without it. ``NATIVE`` says whether it is in
use; set ``NERVE_LCM_PURE=1`` to turn it off. The pure codec of a class stays reachable as
``cls._nerve_py_decode(data)`` / ``cls._nerve_py_encode(msg)``.

Encoding accepts what LCM's encoder accepts (lists, tuples) and also numpy arrays of any dtype that converts (for
tuple members as well as numpy ones), bytes
for byte arrays, numpy structured arrays for struct arrays, and objects of another class with the same fingerprint
(e.g. from LCM's own generated code).
"""

import os as _os
import struct as _struct
import sys as _sys
from collections.abc import MutableSequence as _MutableSequence
from io import BytesIO as _BytesIO

__all__ = ["DecodeError", "EncodeError", "StructArray", "NATIVE", "TUPLE_MAX"]

#: A fixed one-dimensional numeric or boolean array of at most this many elements is a tuple (see above). The
#: generator (``SMALL_ARRAY`` in ``crates/gen/src/python.rs``) writes code for this value, and :func:`accelerate`
#: hands it to the native accelerator, so both give the same representation.
TUPLE_MAX = 16

#: The interface version of the native accelerator this runtime was written for.
_ABI = 3

_native = None
if not _os.environ.get("NERVE_LCM_PURE"):
    try:
        from nerve import _native
    except ImportError:
        _native = None
    if _native is not None and getattr(_native, "ABI", None) != _ABI:
        _native = None  # built for another version of this runtime

#: Whether the native accelerator is in use.
NATIVE = _native is not None

np = None  # numpy, once a numpy-mode helper needs it (_numpy)
U8 = None


def _numpy():
    """numpy, imported on first use: generated code of the default mode never needs it."""
    global np, U8
    if np is None:
        import numpy

        U8 = numpy.dtype("u1")
        np = numpy
    return np
_I = _struct.Struct(">I")
unpack_I = _I.unpack_from
pack_I = _I.pack


class DecodeError(ValueError):
    """A message could not be decoded: wrong fingerprint, truncated, or corrupt.

    ``offset`` is the byte offset (from the start of the message, fingerprint included) where the problem was
    found; ``type_name`` is the type being decoded at that point. A ``ValueError``, as LCM's decoders raise."""

    def __init__(self, message, offset, type_name=""):
        self.offset = offset
        self.type_name = type_name
        self.reason = message
        where = f"{type_name}: " if type_name else ""
        super().__init__(f"{where}{message} (at byte {offset})")


class EncodeError(ValueError, _struct.error):
    """A message could not be encoded: an array shorter than its count, a value out of range or of the wrong type.

    Also a ``struct.error``, which is what LCM's generated encoders raise, so existing handlers keep working."""


def as_bytes(data):
    """The message as ``bytes``: bytes as they are, other buffers copied (so views never see later changes to a
    reused buffer), file-like objects read to the end (as LCM's ``decode`` accepts)."""
    if data.__class__ is bytes:
        return data
    if hasattr(data, "read"):
        data = data.read()
        return data if data.__class__ is bytes else bytes(data)
    try:
        return bytes(memoryview(data))
    except TypeError:
        raise TypeError(f"decode() needs bytes, a buffer or a file-like object, not {type(data).__name__}") from None


def truncated(data, off, type_name):
    """The error for a read at ``off`` that runs past the end of the message."""
    return DecodeError(f"message truncated: {len(data)} bytes end inside a field starting at byte {off}",
                       off, type_name)


def decode_one(cls, buf):
    """LCM's ``_decode_one(buf)``: decodes a body (no fingerprint) from a file-like object or a buffer; a seekable
    file is left just after the body."""
    if hasattr(buf, "read"):
        start = buf.tell() if hasattr(buf, "seekable") and buf.seekable() else None
        data = as_bytes(buf)
        obj, end = cls._nerve_dec(data, 0)
        if start is not None:
            buf.seek(start + end)
        return obj
    return cls._nerve_dec(as_bytes(buf), 0)[0]


def bad_fingerprint(data, expected, type_name):
    if len(data) < 8:
        return DecodeError(f"message truncated: {len(data)} bytes, not even a fingerprint", 0, type_name)
    got = int.from_bytes(data[:8], "big")
    return DecodeError(f"fingerprint mismatch: expected 0x{expected:016x}, got 0x{got:016x}", 0, type_name)


def bad_string(data, off, n, type_name):
    """The error for a string whose length field (at ``off``) says ``n`` (length + 1 including the NUL)."""
    left = len(data) - off - 4
    if n == 0:
        return DecodeError("bad string length 0 (must count the terminating NUL)", off, type_name)
    if n > left:
        if n >= 0x80000000:
            return DecodeError(f"bad string length {n - (1 << 32)} (negative)", off, type_name)
        return DecodeError(f"string length {n} but only {max(left, 0)} bytes left", off, type_name)
    return DecodeError("string is not NUL-terminated", off + 4 + n - 1, type_name)


def bad_utf8(err, off, type_name):
    return DecodeError(f"string is not valid UTF-8 ({err.reason})", off, type_name)


def bad_count(what, count, off, type_name):
    return DecodeError(f"bad count {count} for {what}", off, type_name)


def too_many(what, count, elem_min, data, off, type_name):
    return DecodeError(f"count {count} for {what} needs at least {count * max(elem_min, 1)} bytes, "
                       f"{len(data) - off} left", off, type_name)


def too_deep(type_name):
    return DecodeError("message nests too deeply to decode (recursion limit)", 0, type_name)


# ---------------------------------------------------------------------------------------------------------------
# Encoding helpers


def array_bytes(value, dtype, shape, what):
    """The wire bytes of a numeric array member: ``value`` (list, tuple, numpy array, nested) converted to
    ``dtype`` (big-endian), its first ``shape`` elements along each dimension (LCM slices ``x[:n]`` too)."""
    np = _numpy()
    try:
        a = np.asarray(value, dtype=dtype)
    except (ValueError, TypeError, OverflowError) as e:
        raise EncodeError(f"{what}: cannot convert to {dtype}: {e}") from None
    if a.shape != shape:
        a = _fit(a, shape, what)
    return a.tobytes()


def bool_array_bytes(value, shape, what):
    """The wire bytes of a boolean array member (0 or 1 per element)."""
    np = _numpy()
    try:
        a = np.asarray(value)
        if a.dtype != np.bool_:
            a = a != 0 if a.dtype.kind in "biuf" else a.astype(np.bool_)
    except (ValueError, TypeError) as e:
        raise EncodeError(f"{what}: cannot convert to booleans: {e}") from None
    if a.shape != shape:
        a = _fit(a, shape, what)
    return a.astype(U8).tobytes()


def byte_array_bytes(value, shape, what):
    """The wire bytes of a byte array member: bytes-like objects as they are, anything else via uint8."""
    np = _numpy()
    if len(shape) == 1 and isinstance(value, (bytes, bytearray, memoryview)):
        n = shape[0]
        if len(value) == n:
            return value
        if len(value) > n:
            return value[:n]
        raise EncodeError(f"{what}: {len(value)} bytes, but the count says {n}")
    if len(shape) > 1 and isinstance(value, (list, tuple)):
        value = _unbytes(value)  # LCM's form of a 2-D byte array: a list of bytes
    if isinstance(value, np.ndarray) and value.dtype != U8:
        if value.dtype.kind in "iub" and value.size and (value.min() < 0 or value.max() > 255):
            raise EncodeError(f"{what}: a byte array element is out of 0..255")
    try:
        a = np.asarray(value, dtype=U8)
    except (ValueError, TypeError, OverflowError) as e:
        raise EncodeError(f"{what}: cannot convert to bytes: {e}") from None
    if a.shape != shape:
        a = _fit(a, shape, what)
    return a.tobytes()


def _unbytes(value):
    np = _numpy()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return np.frombuffer(value, U8)
    if isinstance(value, (list, tuple)):
        return [_unbytes(v) for v in value]
    return value


def _fit(a, shape, what):
    np = _numpy()
    if 0 in shape and min(shape) >= 0 and a.size == 0:
        return a.reshape(shape) if a.ndim == len(shape) else np.zeros(shape, a.dtype)
    if a.ndim != len(shape):
        raise EncodeError(f"{what}: expected {len(shape)} dimension(s) of sizes {shape}, got shape {a.shape}")
    for have, want in zip(a.shape, shape):
        if want < 0:
            raise EncodeError(f"{what}: negative count {want}")
        if have < want:
            raise EncodeError(f"{what}: shape {a.shape} is shorter than the counts {shape}")
    return a[tuple(slice(0, k) for k in shape)]


def put_string(ap, s, what):
    """Appends a string's wire form: int32 length + 1, UTF-8 bytes, NUL."""
    try:
        e = s.encode("utf-8")
    except AttributeError:
        raise EncodeError(f"{what}: expected a str, got {type(s).__name__}") from None
    ap(pack_I(len(e) + 1))
    ap(e)
    ap(b"\0")


def pack_array(value, code, shape, what):
    """The wire bytes of a primitive array member in the default mode: ``value`` nested sequences (lists, tuples,
    numpy arrays; ``bytes`` for a byte array's innermost dimension) of at least ``shape`` elements along each
    dimension, of which the first ones are packed with ``struct`` format ``code`` (LCM's generated code slices
    ``x[:n]`` too). Booleans are packed as 0 or 1."""
    out = []
    _pack_dims(value, code, shape, 0, out, what)
    return b"".join(out)


def _pack_dims(value, code, shape, k, out, what):
    n = shape[k]
    check_len(value, n, what)
    if k + 1 < len(shape):
        for i in range(n):
            _pack_dims(value[i], code, shape, k + 1, out, what)
        return
    if code == "B" and isinstance(value, (bytes, bytearray)):
        out.append(bytes(value[:n]))
        return
    try:
        items = value[:n]
    except TypeError:
        items = list(value)[:n]
    try:
        out.append(_struct.pack(f">{n}{code}", *items))
    except (_struct.error, OverflowError, TypeError, ValueError) as e:
        raise EncodeError(f"{what}: {e}") from None


def check_len(seq, n, what):
    """``seq`` must have at least ``n`` elements (the count member); LCM encodes the first ``n``."""
    if n < 0:
        raise EncodeError(f"{what}: negative count {n}")
    try:
        have = len(seq)
    except TypeError:
        raise EncodeError(f"{what}: expected a sequence, got {type(seq).__name__}") from None
    if have < n:
        raise EncodeError(f"{what}: {have} elements, but the count says {n}")


def encode_other(v, cls, ap, what):
    """Encodes ``v``, which is not an instance of ``cls``: another class of the same type (same fingerprint),
    such as LCM's own generated class, or an error."""
    fp = getattr(v, "_get_packed_fingerprint", None)
    if fp is None or fp() != cls._packed_fingerprint:
        raise EncodeError(f"{what}: expected a {cls.__name__}, got {type(v).__name__}")
    enc = getattr(v, "_nerve_enc", None)
    if enc is not None:
        enc(ap)
        return
    buf = _BytesIO()
    v._encode_one(buf)
    ap(buf.getvalue())


def encode_struct_list(seq, n, cls, ap, what):
    """Encodes the first ``n`` elements of a struct array member given as any sequence (or a StructArray, or a
    numpy structured array when ``cls`` has a fixed size)."""
    if seq.__class__ is StructArray and seq._cls is cls:
        seq._encode(n, ap, what)
        return
    if cls._nerve_dtype is not None and isinstance(seq, _numpy().ndarray) and seq.dtype.names is not None:
        check_len(seq, n, what)
        try:
            ap(np.asarray(seq[:n]).astype(cls._nerve_dtype).tobytes())
        except (ValueError, TypeError) as e:
            raise EncodeError(f"{what}: cannot convert the structured array: {e}") from None
        return
    check_len(seq, n, what)
    i = 0
    for v in seq:
        if i == n:
            break
        if v.__class__ is cls:
            v._nerve_enc(ap)
        else:
            encode_other(v, cls, ap, what)
        i += 1


# ---------------------------------------------------------------------------------------------------------------
# Arrays of fixed-size structs


class StructArray(_MutableSequence):
    """A list of ``cls`` objects that can stay undecoded until it is first used.

    Behaves as a ``list`` of objects: ``len``, indexing and slicing (slices are plain lists), iteration,
    assignment, ``append``/``insert``/``del``, ``==`` with any sequence. Decoding a message makes one of these in
    the *packed* state (a reference to the message bytes, an offset and a count: no objects, no copy). The first
    element access builds all objects at once, vectorized per field; from then on it is a list. ``len()`` and
    ``to_numpy()`` never build objects, and encoding a packed array copies its bytes in one go."""

    __slots__ = ("_cls", "_buf", "_off", "_n", "_items")

    def __init__(self, cls, items=()):
        self._cls = cls
        self._buf = None
        self._off = 0
        self._n = 0
        self._items = list(items)

    @classmethod
    def _packed(cls_, elem, buf, off, n):
        self = object.__new__(cls_)
        self._cls = elem
        self._buf = buf
        self._off = off
        self._n = n
        self._items = None
        return self

    @classmethod
    def from_numpy(cls_, elem, records):
        """A StructArray of ``elem`` objects from a numpy structured array whose fields are named like ``elem``'s
        members (any byte order or numeric types that convert). Stays packed: no objects are built."""
        np = _numpy()
        rec = np.ascontiguousarray(np.asarray(records).astype(elem._nerve_dtype))
        return cls_._packed(elem, rec.tobytes(), 0, len(rec))

    def to_numpy(self):
        """The elements as a numpy structured array (big-endian fields, named like the members). A copy."""
        np = _numpy()
        if self._items is None:
            return np.frombuffer(self._buf, self._cls._nerve_dtype, self._n, self._off).copy()
        parts = []
        for v in self._items:
            if v.__class__ is self._cls:
                v._nerve_enc(parts.append)
            else:
                encode_other(v, self._cls, parts.append, "element")
        return np.frombuffer(b"".join(parts), self._cls._nerve_dtype, len(self._items)).copy()

    def _list(self):
        items = self._items
        if items is None:
            native = self._cls.__dict__.get("_nerve_native")
            if native is not None and self._n:
                items = native.decode_records(self._buf, self._off, self._n)
            if items is not None:
                pass
            elif self._n:
                rec = _numpy().frombuffer(self._buf, self._cls._nerve_dtype, self._n, self._off)
                items = self._cls._nerve_from_records(rec)
            else:
                items = []
            self._items = items
            self._buf = None
        return items

    def _encode(self, n, ap, what):
        items = self._items
        if items is None:
            if n < 0 or n > self._n:
                raise EncodeError(f"{what}: {self._n} elements, but the count says {n}")
            size = self._cls._nerve_size
            ap(memoryview(self._buf)[self._off:self._off + n * size])
            return
        encode_struct_list(items, n, self._cls, ap, what)

    def __len__(self):
        items = self._items
        return self._n if items is None else len(items)

    def __getitem__(self, i):
        return self._list()[i]

    def __setitem__(self, i, v):
        self._list()[i] = v

    def __delitem__(self, i):
        del self._list()[i]

    def insert(self, i, v):
        self._list().insert(i, v)

    def __iter__(self):
        return iter(self._list())

    def __eq__(self, other):
        if isinstance(other, (list, tuple, StructArray)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    __hash__ = None

    def __repr__(self):
        if self._items is None:
            return f"StructArray({self._cls.__name__}, {self._n} packed)"
        return f"StructArray({self._cls.__name__}, {self._items!r})"

    def __reduce__(self):
        return (StructArray, (self._cls, list(self._list())))


def accelerate(cls, type_name, classes):
    """Called at the end of every generated struct module: ``classes`` holds, per member, the class of a struct or
    enum member (None for primitives). Keeps the pure-Python codec as ``_nerve_py_decode`` / ``_nerve_py_encode``
    and, when the native accelerator is there, installs its codec (compiled on first use)."""
    cls._nerve_classes = classes
    cls._nerve_name = type_name
    cls._nerve_struct_array = StructArray
    cls._nerve_tuple_max = TUPLE_MAX
    cls._nerve_numpy = cls.__dict__.get("_nerve_numpy", True)
    cls._nerve_py_decode = cls.__dict__["decode"]
    cls._nerve_py_encode = cls.__dict__["encode"]
    if _native is None:
        return
    codec = _native.Codec(cls)
    cls._nerve_native = codec
    cls.decode = staticmethod(codec.decode)
    enc = codec.encode

    def encode(self):
        return enc(self)

    encode.__doc__ = cls._nerve_py_encode.__doc__
    cls.encode = encode


def nest(flat, dims):
    """Regroups a flat list into nested lists of the given (outermost first) dimensions."""
    for k in reversed(dims[1:]):
        flat = [flat[i:i + k] for i in range(0, len(flat), k)]
    return flat
