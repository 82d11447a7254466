//! The native codec of the Python code that `nerve gen -p` writes (`nerve._native.Codec`).
//!
//! # Brief overview
//!
//! Each generated class ends with `_rt.accelerate(cls, "pkg.name", classes)`. When this module imports, the runtime
//! (`nerve_lcm.py`) makes a [`Codec`] per class and installs its `decode` / `encode` as the class's. On first use a
//! codec compiles a [`Plan`] from what the class already says about itself (`__slots__`, `__typenames__`,
//! `__dimensions__`, the nested classes, `_packed_fingerprint`, `_nerve_dtype`) and then interprets it: decoding
//! walks the bytes once, allocates each object as its class's tp_alloc would (`_PyObject_GC_New` for the plain
//! slotted classes the generator writes) and stores straight into its slots (strings, small tuples and nested
//! structs by per-member forms chosen when the plan compiles, no general array machinery per element), makes strings
//! with `PyUnicode_DecodeUTF8`, and arrays in the class's representation (`_nerve_numpy`, below); encoding reads the
//! slots and writes one buffer.
//!
//! # Two representations
//!
//! By default (`_nerve_numpy = False`) arrays are what lcm-gen's decoder gives: lists for the outer dimensions and in
//! the innermost one a tuple of numbers, a list of bools or `bytes`; arrays of structs are lists. This mode never
//! touches numpy (the module imports without it). With `--python-numpy` (`_nerve_numpy = True`) numeric arrays are
//! big-endian read-only numpy views of the message (as `np.frombuffer` does), small fixed arrays tuples (below), and
//! a 1-D array of a fixed-size struct a packed `StructArray`.
//!
//! # Small fixed arrays are tuples
//!
//! In numpy mode, as in the generated code (and LCM's Python): a numeric or boolean member with one constant dimension
//! of at most `TUPLE_MAX` elements (`float position[2]`, `double orientation[4]`; the runtime's `nerve_lcm.TUPLE_MAX`,
//! 16, handed over as the class attribute `_nerve_tuple_max`) decodes to a tuple of Python `int` / `float` / `bool`,
//! each made as the scalar of that type is. A numpy array per small vector costs several times a tuple and dominated
//! messages with many of them. Encoding such a member takes a tuple, a list or a numpy array, like any primitive array.
//!
//! # Freeing
//!
//! Decoding a message of many small structs spends about as long freeing them again as making them, and CPython's
//! generic deallocator of Python classes (`subtype_dealloc`) was the largest part of that. When a plan compiles, a
//! plain slotted class straight under `object` with no finalizer gets [`plain_dealloc`] instead: untrack, clear the
//! slots, free, drop the reference to the class - what `subtype_dealloc` does for such a class, without its general
//! steps. Python subclasses keep CPython's deallocator, which calls this one for the base part; a class given a
//! `__del__` later goes back to CPython's; a long chain of instances is freed in a loop, as CPython's trashcan does.
//! The blocks of freed instances are kept (a freelist per instance size, [`SPARE`]) and reused by the next decode.
//!
//! # The key design decision: a fast path, never a second semantics
//!
//! The pure-Python code stays the definition. The native codec handles the common forms exactly (`bytes` input,
//! instances of the generated classes, `int`/`float`/`bool`/`str` scalars, lists and tuples, numpy arrays of the
//! member's kind, `bytes` for byte arrays, `StructArray`), and on anything else - a malformed message, an unusual
//! input, a value out of range - it gives up without side effects and runs the class's pure-Python codec on the same
//! input. So results and errors (`DecodeError` with its offset, `EncodeError`, `struct.error`) are the pure
//! runtime's by construction, and every length is checked against the bytes left before anything is allocated.
//!
//! # Safety
//!
//! This crate talks to CPython and numpy through their C APIs, so it is `unsafe` throughout; every function here
//! runs with the GIL held (it is only reached from Python calls), and every object pointer it reads is a live,
//! type-checked object that the caller holds a reference to.

mod dealloc;
mod decode;
mod encode;
mod plan;

use std::cell::{Cell, RefCell, UnsafeCell};
use std::ffi::{c_char, c_int, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use numpy::npyffi::{self, npy_intp, NpyTypes, PyArrayObject, PyArray_Descr, PY_ARRAY_API};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyType};

use dealloc::*;
use decode::*;
use encode::*;
use plan::*;

/// Bumped when the interface between `nerve_lcm.py` and this module changes; the runtime ignores other values.
const ABI: u32 = 3;

/// Nesting deeper than this is left to the pure-Python codec, which decodes it more slowly or raises its "nests too
/// deeply" error past 256 levels of recursive structs (a count of its own, independent of the caller's stack). This
/// counts every struct level, recursive or not, so whatever it decodes is within the pure codec's limit too.
const MAX_DEPTH: u32 = 200;

/// How many more rows than bytes left a level of a multi-dimensional array may have: the generator's
/// `ZERO_SIZE_SLACK` (crates/gen/src/python.rs), which the pure code enforces. The native code only needs to stay
/// within it: past it, it falls back and the pure code raises the error.
const ZERO_SIZE_SLACK: usize = 65536;

/// "Let the pure-Python codec do this call": any Python error set on the way has been cleared.
struct Fallback;
type R<T> = Result<T, Fallback>;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Prim {
    I8,
    I16,
    I32,
    I64,
    F32,
    F64,
    Bool,
    Byte,
    Str,
}

impl Prim {
    fn from_name(s: &str) -> Option<Prim> {
        Some(match s {
            "int8_t" => Prim::I8,
            "int16_t" => Prim::I16,
            "int32_t" => Prim::I32,
            "int64_t" => Prim::I64,
            "float" => Prim::F32,
            "double" => Prim::F64,
            "boolean" => Prim::Bool,
            "byte" => Prim::Byte,
            "string" => Prim::Str,
            _ => return None,
        })
    }
    fn size(self) -> usize {
        match self {
            Prim::I8 | Prim::Bool | Prim::Byte => 1,
            Prim::I16 => 2,
            Prim::I32 | Prim::F32 => 4,
            Prim::I64 | Prim::F64 => 8,
            Prim::Str => 5, // the least a string takes: length + NUL
        }
    }
    fn is_int(self) -> bool {
        matches!(self, Prim::I8 | Prim::I16 | Prim::I32 | Prim::I64)
    }
    /// numpy type numbers an input array of this member may have (same kind and size, any byte order).
    fn accepts(self, type_num: c_int) -> bool {
        use npyffi::NPY_TYPES as T;
        let t = |x: T| x as c_int == type_num;
        match self {
            Prim::I8 => t(T::NPY_BYTE),
            Prim::I16 => t(T::NPY_SHORT),
            Prim::I32 => t(T::NPY_INT),
            Prim::I64 => t(T::NPY_LONG) || t(T::NPY_LONGLONG),
            Prim::F32 => t(T::NPY_FLOAT),
            Prim::F64 => t(T::NPY_DOUBLE),
            Prim::Bool => t(T::NPY_BOOL),
            Prim::Byte => t(T::NPY_UBYTE),
            Prim::Str => false,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Dim {
    Fixed(usize),
    /// The count is the integer member at this index (an earlier one).
    Var(usize),
}

enum Kind {
    Prim(Prim),
    Struct(&'static PlanCell),
}

struct Member {
    offset: isize,
    kind: Kind,
    dims: Vec<Dim>,
    /// A small fixed 1-D numeric or boolean array (numpy mode), or any fixed 1-D numeric one (list mode): decodes
    /// to a tuple of scalars (see the module docs).
    tuple: bool,
    /// For numeric arrays (not tuples): the big-endian dtype decoded arrays get (uint8 for multi-dimensional byte
    /// arrays).
    descr: *mut PyArray_Descr,
    /// How `decode_struct` decodes it: the common forms without the general array machinery.
    fast: Fast,
}

/// The decode form of a member, chosen when the plan compiles.
#[derive(Clone, Copy)]
enum Fast {
    /// A primitive scalar (string included).
    Scalar(Prim),
    /// A small fixed array decoded to a tuple of this many scalars.
    Tuple(Prim, usize),
    /// A nested struct.
    Struct(&'static PlanCell),
    /// Anything else: `decode_member`.
    Other,
}
struct Plan {
    cls: *mut ffi::PyTypeObject,
    /// The class was generated with `--python-numpy` (`_nerve_numpy`): numpy arrays; otherwise lcm-gen's lists,
    /// tuples and bytes.
    numpy: bool,
    fingerprint: [u8; 8],
    members: Vec<Member>,
    /// Encoded size when fixed and the class has a records dtype: 1-D arrays of it decode to a packed StructArray.
    records_size: Option<usize>,
    /// For a plain slotted class whose members are all scalars and small tuples: (slot offset, form) per member,
    /// which `decode_flat_list` decodes lists of in one tight loop.
    flat: Option<Box<[(isize, Fast)]>>,
    /// The fewest bytes one encoded value takes.
    min_size: usize,
    /// Instances can be made with `_PyObject_GC_New` (see `decode_struct`): a GC type allocated by
    /// PyType_GenericAlloc, with no items, no managed dict and no slots but the members (whose slot area it sizes).
    plain_alloc: bool,
    /// The runtime's `StructArray` class and its `_packed` constructor (each generated tree has its own runtime).
    struct_array: *mut ffi::PyObject,
    packed: *mut ffi::PyObject,
}

/// A plan that is filled in once the whole group of classes that refer to each other has compiled.
struct PlanCell(OnceLock<Option<&'static Plan>>);

// SAFETY: plans are only read with the GIL held; the raw pointers in them are to objects they keep alive forever.
unsafe impl Send for PlanCell {}
// SAFETY: as above.
unsafe impl Sync for PlanCell {}
// SAFETY: as above.
unsafe impl Send for Plan {}
// SAFETY: as above.
unsafe impl Sync for Plan {}

/// Python objects every codec needs, made when the module imports.
struct Env {
    array_type: *mut ffi::PyTypeObject,
    bool_descr: *mut PyArray_Descr,
    s_cls: *mut ffi::PyObject,
    s_buf: *mut ffi::PyObject,
    s_off: *mut ffi::PyObject,
    s_n: *mut ffi::PyObject,
    s_items: *mut ffi::PyObject,
}
// SAFETY: read only with the GIL held; the objects are kept alive forever.
unsafe impl Send for Env {}
// SAFETY: as above.
unsafe impl Sync for Env {}

static ENV: OnceLock<Env> = OnceLock::new();

fn env() -> &'static Env {
    ENV.get().expect("set when the module imports")
}

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The per-class codec that `nerve_lcm.accelerate` installs.
#[pyclass(frozen, module = "nerve._native")]
struct Codec {
    cls: Py<PyType>,
    plan: &'static PlanCell,
    py_decode: Py<PyAny>,
    py_encode: Py<PyAny>,
}

#[pymethods]
impl Codec {
    #[new]
    fn new(py: Python<'_>, cls: Bound<'_, PyType>) -> PyResult<Self> {
        let py_decode = cls.getattr("_nerve_py_decode")?.unbind();
        let py_encode = cls.getattr("_nerve_py_encode")?.unbind();
        let plan = cell_for(py, &cls)?;
        Ok(Codec { cls: cls.unbind(), plan, py_decode, py_encode })
    }

    /// `T.decode(data)`: natively for bytes-like input when the class compiled, else the pure-Python decode.
    fn decode<'py>(&self, py: Python<'py>, data: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if let Some(plan) = self.plan(py) {
            let bytes = if data.is_exact_instance_of::<PyBytes>() {
                Some(data.clone())
            } else if data.is_instance_of::<pyo3::types::PyByteArray>()
                || data.is_instance_of::<pyo3::types::PyMemoryView>()
            {
                // bytes(memoryview(data)): the copy the pure runtime makes too
                let mv = pyo3::types::PyMemoryView::from(&data)?;
                Some(py.get_type::<PyBytes>().call1((mv,))?)
            } else {
                None
            };
            if let Some(b) = bytes {
                // SAFETY: GIL held; `b` is an exact bytes object kept alive for the call.
                if let Ok(obj) = unsafe { decode_message(plan, b.as_ptr()) } {
                    // SAFETY: `obj` is a new reference.
                    return Ok(unsafe { Bound::from_owned_ptr(py, obj) });
                }
                return self.py_decode.bind(py).call1((b,));
            }
        }
        self.py_decode.bind(py).call1((data,))
    }

    /// `msg.encode()`: natively for the forms it knows, else the pure-Python encode (same bytes, same errors).
    fn encode<'py>(&self, py: Python<'py>, obj: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if let Some(plan) = self.plan(py) {
            // SAFETY: GIL held; `obj` is alive for the call.
            if let Ok(b) = unsafe { encode_message(plan, obj.as_ptr()) } {
                // SAFETY: `b` is a new reference.
                return Ok(unsafe { Bound::from_owned_ptr(py, b) });
            }
        }
        self.py_encode.bind(py).call1((obj,))
    }

    /// The `n` elements of a packed StructArray (`n` encoded values at `off` in `buf`) as a list of objects, or
    /// None to let the pure-Python code build them.
    fn decode_records<'py>(
        &self,
        py: Python<'py>,
        buf: Bound<'py, PyAny>,
        off: usize,
        n: usize,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(plan) = self.plan(py) else { return Ok(None) };
        if !buf.is_exact_instance_of::<PyBytes>() {
            return Ok(None);
        }
        // SAFETY: GIL held; `buf` is an exact bytes object alive for the call.
        let r = unsafe { decode_records(plan, buf.as_ptr(), off, n) };
        // SAFETY: a new reference.
        Ok(r.ok().map(|l| unsafe { Bound::from_owned_ptr(py, l) }))
    }

    /// Whether the class compiled to a native plan (False: every call goes to the pure-Python codec).
    fn is_native(&self, py: Python<'_>) -> bool {
        self.plan(py).is_some()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let name = self.cls.bind(py).name().map(|n| n.to_string()).unwrap_or_default();
        format!("<nerve._native.Codec for {name}: {}>", if self.is_native(py) { "native" } else { "pure" })
    }
}

impl Codec {
    fn plan(&self, py: Python<'_>) -> Option<&'static Plan> {
        if let Some(p) = self.plan.0.get() {
            return *p;
        }
        compile_group(py, self.cls.bind(py));
        self.plan.0.get().copied().flatten()
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The module

/// Sets up the codec's part of `nerve._native`: numpy's types (when numpy imports), `ABI`, `REUSES_INSTANCES` and
/// `Codec`.
pub(crate) fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    // numpy is optional: without it the classes of the default (list) mode are served, and numpy-mode classes
    // (which import numpy themselves) cannot exist; `array_type` null matches no object.
    let (array_type, bool_descr) = match py.import("numpy") {
        Ok(numpy) => {
            let bool_descr = numpy.getattr("dtype")?.call1(("?",))?;
            // SAFETY: GIL held; numpy imports, so its C API is imported by PY_ARRAY_API on first use.
            let array_type = unsafe { npyffi::get_type_object(py, NpyTypes::PyArray_Type) };
            (array_type, bool_descr.unbind().into_ptr() as *mut PyArray_Descr)
        }
        Err(_) => (null_mut(), null_mut()),
    };
    let intern = |s: &str| PyString::intern(py, s).into_any().unbind().into_ptr();
    let e = Env {
        array_type,
        bool_descr,
        s_cls: intern("_cls"),
        s_buf: intern("_buf"),
        s_off: intern("_off"),
        s_n: intern("_n"),
        s_items: intern("_items"),
    };
    let _ = ENV.set(e);
    SPARE_ON.store(spare_supported(py)?, Ordering::Relaxed);
    m.add("ABI", ABI)?;
    m.add("REUSES_INSTANCES", SPARE_ON.load(Ordering::Relaxed))?;
    m.add_class::<Codec>()?;
    Ok(())
}
