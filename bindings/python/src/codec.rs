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

use std::cell::{Cell, RefCell, UnsafeCell};
use std::ffi::{c_char, c_int, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use numpy::npyffi::{self, npy_intp, NpyTypes, PyArrayObject, PyArray_Descr, PY_ARRAY_API};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyType};

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
// Compiling plans

/// The cell of `cls` (made once per class and kept on it as `_nerve_plan_cell`'s address).
fn cell_for(_py: Python<'_>, cls: &Bound<'_, PyType>) -> PyResult<&'static PlanCell> {
    static CELLS: std::sync::Mutex<Vec<(usize, &'static PlanCell)>> = std::sync::Mutex::new(Vec::new());
    let key = cls.as_ptr() as usize;
    let mut cells = CELLS.lock().unwrap();
    if let Some((_, c)) = cells.iter().find(|(k, _)| *k == key) {
        return Ok(c);
    }
    // The class is kept alive forever, like the plan that points at it.
    std::mem::forget(cls.clone());
    let c: &'static PlanCell = Box::leak(Box::new(PlanCell(OnceLock::new())));
    cells.push((key, c));
    Ok(c)
}

/// Compiles `cls` and every class it reaches; a class that cannot be compiled (and every class that contains it)
/// gets `None` and stays pure Python.
fn compile_group(py: Python<'_>, cls: &Bound<'_, PyType>) {
    let mut pending: Vec<(&'static PlanCell, Option<Plan>)> = Vec::new();
    let mut seen: Vec<usize> = Vec::new();
    let ok = compile_one(py, cls, &mut pending, &mut seen).is_ok();
    for (cell, plan) in pending {
        let v = if ok { plan.map(|p| &*Box::leak(Box::new(p))) } else { None };
        let _ = cell.0.set(v);
    }
    if !ok {
        // leave at least this class's cell decided
        if let Ok(c) = cell_for(py, cls) {
            let _ = c.0.set(None);
        }
    }
}

fn compile_one(
    py: Python<'_>,
    cls: &Bound<'_, PyType>,
    pending: &mut Vec<(&'static PlanCell, Option<Plan>)>,
    seen: &mut Vec<usize>,
) -> Result<&'static PlanCell, ()> {
    let cell = cell_for(py, cls).map_err(|_| ())?;
    if let Some(done) = cell.0.get() {
        return if done.is_some() { Ok(cell) } else { Err(()) };
    }
    let key = cls.as_ptr() as usize;
    if seen.contains(&key) {
        return Ok(cell);
    }
    seen.push(key);
    let idx = pending.len();
    pending.push((cell, None));
    let plan = build_plan(py, cls, pending, seen)?;
    pending[idx].1 = Some(plan);
    Ok(cell)
}

fn build_plan(
    py: Python<'_>,
    cls: &Bound<'_, PyType>,
    pending: &mut Vec<(&'static PlanCell, Option<Plan>)>,
    seen: &mut Vec<usize>,
) -> Result<Plan, ()> {
    let e = |_| ();
    let slots: Vec<String> = cls.getattr("__slots__").map_err(e)?.extract().map_err(e)?;
    let types: Vec<String> = cls.getattr("__typenames__").map_err(e)?.extract().map_err(e)?;
    let dims_all = cls.getattr("__dimensions__").map_err(e)?;
    let classes = cls.getattr("_nerve_classes").map_err(e)?;
    let fp: Vec<u8> = cls.getattr("_packed_fingerprint").map_err(e)?.extract().map_err(e)?;
    let size: Option<usize> = cls.getattr("_nerve_size").map_err(e)?.extract().map_err(e)?;
    let has_dtype = !cls.getattr("_nerve_dtype").map_err(e)?.is_none();
    let struct_array = cls.getattr("_nerve_struct_array").map_err(e)?;
    let packed = struct_array.getattr("_packed").map_err(e)?;
    let tuple_max: usize = cls.getattr("_nerve_tuple_max").map_err(e)?.extract().map_err(e)?;
    let numpy_mode: bool = cls.getattr("_nerve_numpy").map_err(e)?.extract().map_err(e)?;
    if fp.len() != 8 || types.len() != slots.len() {
        return Err(());
    }
    let dict = cls.getattr("__dict__").map_err(e)?;
    // numpy is needed (and imported) only by classes generated with --python-numpy
    let numpy = if numpy_mode { Some(py.import("numpy").map_err(e)?) } else { None };
    let mut members = Vec::with_capacity(slots.len());
    let mut min_size = 0usize;
    for (i, name) in slots.iter().enumerate() {
        // the slot's offset, from its member descriptor
        let descr = dict.get_item(name).map_err(e)?;
        // SAFETY: GIL held; the type of `descr` is checked before its fields are read.
        let offset = unsafe {
            if ffi::Py_TYPE(descr.as_ptr()) != std::ptr::addr_of_mut!(ffi::PyMemberDescr_Type) {
                return Err(());
            }
            let md = descr.as_ptr() as *mut ffi::PyMemberDescrObject;
            if (*md).d_common.d_type != cls.as_ptr() as *mut ffi::PyTypeObject {
                return Err(());
            }
            let def = (*md).d_member;
            if (*def).type_code != ffi::Py_T_OBJECT_EX || (*def).flags != 0 {
                return Err(());
            }
            (*def).offset
        };
        let dims_obj = dims_all.get_item(i).map_err(e)?;
        let mut dims = Vec::new();
        if !dims_obj.is_none() {
            for d in dims_obj.try_iter().map_err(e)? {
                let d = d.map_err(e)?;
                if let Ok(n) = d.extract::<usize>() {
                    dims.push(Dim::Fixed(n));
                } else {
                    let s: String = d.extract().map_err(e)?;
                    let j = slots[..i].iter().position(|x| *x == s).ok_or(())?;
                    match &members.get(j).map(|m: &Member| (&m.kind, m.dims.len())) {
                        Some((Kind::Prim(p), 0)) if p.is_int() => {}
                        _ => return Err(()),
                    }
                    dims.push(Dim::Var(j));
                }
            }
        }
        let fixed_count: usize = dims
            .iter()
            .map(|d| match d {
                Dim::Fixed(n) => *n,
                Dim::Var(_) => 0,
            })
            .product();
        let kind = match Prim::from_name(&types[i]) {
            Some(p) => {
                min_size += if dims.is_empty() { p.size() } else { fixed_count * p.size() };
                Kind::Prim(p)
            }
            None => {
                let sub = classes.get_item(i).map_err(e)?;
                let sub = sub.cast::<PyType>().map_err(|_| ())?;
                if !sub.hasattr("_nerve_classes").map_err(e)? {
                    return Err(()); // an enum or a foreign class: pure Python
                }
                let sub_min = plan_min(sub)?;
                if !dims.is_empty() && sub_min == 0 {
                    return Err(()); // arrays of zero-size structs: the pure code's slack rule applies
                }
                min_size += if dims.is_empty() { sub_min } else { fixed_count * sub_min };
                Kind::Struct(compile_one(py, sub, pending, seen)?)
            }
        };
        let tuple = match (&kind, &dims[..]) {
            (Kind::Prim(p), [Dim::Fixed(n)]) if numpy_mode => !matches!(p, Prim::Str | Prim::Byte) && *n <= tuple_max,
            (Kind::Prim(p), [Dim::Fixed(_)]) => !matches!(p, Prim::Str | Prim::Byte | Prim::Bool),
            _ => false,
        };
        let descr = match (&kind, &numpy) {
            _ if tuple => null_mut(),
            (_, None) => null_mut(),
            (Kind::Prim(p), Some(numpy))
                if !dims.is_empty() && *p != Prim::Str && !(*p == Prim::Byte && dims.len() == 1) =>
            {
                let code = match p {
                    Prim::I8 => "i1",
                    Prim::I16 => ">i2",
                    Prim::I32 => ">i4",
                    Prim::I64 => ">i8",
                    Prim::F32 => ">f4",
                    Prim::F64 => ">f8",
                    Prim::Bool => "?",
                    _ => "u1",
                };
                let d = numpy.getattr("dtype").map_err(e)?.call1((code,)).map_err(e)?;
                let p = d.as_ptr() as *mut PyArray_Descr;
                std::mem::forget(d);
                p
            }
            _ => null_mut(),
        };
        let fast = match (&kind, &dims[..]) {
            (Kind::Prim(p), []) => Fast::Scalar(*p),
            (Kind::Prim(p), [Dim::Fixed(n)]) if tuple => Fast::Tuple(*p, *n),
            (Kind::Struct(c), []) => Fast::Struct(c),
            _ => Fast::Other,
        };
        members.push(Member { offset, kind, dims, tuple, descr, fast });
    }
    let records_size = match (size, has_dtype) {
        (Some(s), true) if s > 0 => Some(s),
        (_, true) => return Err(()),
        _ => None,
    };
    let mut fingerprint = [0u8; 8];
    fingerprint.copy_from_slice(&fp);
    // SAFETY: GIL held; `cls` is a live type object, only its fields are read.
    let plain_alloc = unsafe {
        let t = cls.as_ptr() as *mut ffi::PyTypeObject;
        (*t).tp_alloc.map(|f| f as usize) == Some(ffi::PyType_GenericAlloc as *const () as usize)
            && (*t).tp_itemsize == 0
            && (*t).tp_flags & ffi::Py_TPFLAGS_HAVE_GC != 0
            && (*t).tp_flags & ffi::Py_TPFLAGS_MANAGED_DICT == 0
            && (*t).tp_dictoffset == 0
            && (*t).tp_weaklistoffset == 0
            && (*t).tp_basicsize as usize
                == std::mem::size_of::<ffi::PyObject>() + members.len() * std::mem::size_of::<*mut ffi::PyObject>()
            && members
                .iter()
                .all(|m| m.offset >= std::mem::size_of::<ffi::PyObject>() as isize && m.offset < (*t).tp_basicsize)
    };
    if plain_alloc {
        // SAFETY: GIL held; `cls` is a live plain slotted class (checked just above), kept alive by the plan.
        unsafe { install_plain_dealloc(cls.as_ptr() as *mut ffi::PyTypeObject) };
    }
    let flat = (plain_alloc && members.iter().all(|m| matches!(m.fast, Fast::Scalar(_) | Fast::Tuple(..))))
        .then(|| members.iter().map(|m| (m.offset, m.fast)).collect());
    Ok(Plan {
        cls: cls.as_ptr() as *mut ffi::PyTypeObject,
        numpy: numpy_mode,
        flat,
        plain_alloc,
        fingerprint,
        members,
        records_size,
        min_size,
        struct_array: struct_array.unbind().into_ptr(),
        packed: packed.unbind().into_ptr(),
    })
}

/// The least encoded size of a class, computed from its Python description (recursion stops at a cycle: a cycle
/// can only go through arrays, whose least size is 0 when variable).
fn plan_min(cls: &Bound<'_, PyType>) -> Result<usize, ()> {
    fn go(cls: &Bound<'_, PyType>, stack: &mut Vec<usize>) -> Result<usize, ()> {
        let e = |_| ();
        let key = cls.as_ptr() as usize;
        if stack.contains(&key) || stack.len() > 64 {
            return Ok(0);
        }
        stack.push(key);
        let types: Vec<String> = cls.getattr("__typenames__").map_err(e)?.extract().map_err(e)?;
        let dims_all = cls.getattr("__dimensions__").map_err(e)?;
        let classes = cls.getattr("_nerve_classes").map_err(e)?;
        let mut total = 0usize;
        for (i, t) in types.iter().enumerate() {
            let d = dims_all.get_item(i).map_err(e)?;
            let mut count = 1usize;
            if !d.is_none() {
                for x in d.try_iter().map_err(e)? {
                    count = count.saturating_mul(x.map_err(e)?.extract::<usize>().unwrap_or(0));
                }
            }
            let one = match Prim::from_name(t) {
                Some(p) => p.size(),
                None => {
                    let sub = classes.get_item(i).map_err(e)?;
                    let sub = sub.cast::<PyType>().map_err(|_| ())?;
                    if !sub.hasattr("_nerve_classes").map_err(e)? {
                        return Err(());
                    }
                    if count == 0 {
                        0
                    } else {
                        go(sub, stack)?
                    }
                }
            };
            total = total.saturating_add(count.saturating_mul(one));
        }
        stack.pop();
        Ok(total)
    }
    go(cls, &mut Vec::new())
}

// ---------------------------------------------------------------------------------------------------------------
// Decoding

struct Input {
    obj: *mut ffi::PyObject,
    ptr: *const u8,
    len: usize,
}

impl Input {
    #[inline]
    fn take(&self, off: usize, n: usize) -> R<&[u8]> {
        // `off` may come from Python (decode_records): past the end it is refused even for n == 0, since forming
        // the pointer would already leave the allocation.
        if off > self.len || n > self.len - off {
            return Err(Fallback);
        }
        // SAFETY: off + n <= len, within the bytes object that `obj` keeps alive.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr.add(off), n) })
    }
}

#[inline]
fn be<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
}

#[inline]
unsafe fn check(p: *mut ffi::PyObject) -> R<*mut ffi::PyObject> {
    if p.is_null() {
        ffi::PyErr_Clear();
        Err(Fallback)
    } else {
        Ok(p)
    }
}

unsafe fn decode_message(plan: &Plan, data: *mut ffi::PyObject) -> R<*mut ffi::PyObject> {
    let input =
        Input { obj: data, ptr: ffi::PyBytes_AS_STRING(data) as *const u8, len: ffi::PyBytes_Size(data) as usize };
    if input.take(0, 8)? != plan.fingerprint {
        return Err(Fallback);
    }
    let mut off = 8;
    decode_struct(plan, &input, &mut off, 0)
}

unsafe fn decode_records(plan: &Plan, data: *mut ffi::PyObject, off: usize, n: usize) -> R<*mut ffi::PyObject> {
    let input =
        Input { obj: data, ptr: ffi::PyBytes_AS_STRING(data) as *const u8, len: ffi::PyBytes_Size(data) as usize };
    let size = plan.records_size.ok_or(Fallback)?;
    input.take(off, n.checked_mul(size).ok_or(Fallback)?)?;
    let list = check(ffi::PyList_New(n as ffi::Py_ssize_t))?;
    let mut o = off;
    for i in 0..n {
        match decode_struct(plan, &input, &mut o, 1) {
            Ok(v) => ffi::PyList_SET_ITEM(list, i as ffi::Py_ssize_t, v),
            Err(f) => {
                ffi::Py_DECREF(list);
                return Err(f);
            }
        }
    }
    Ok(list)
}

#[inline]
unsafe fn slot(obj: *mut ffi::PyObject, offset: isize) -> *mut *mut ffi::PyObject {
    (obj as *mut u8).offset(offset) as *mut *mut ffi::PyObject
}

#[inline]
unsafe fn decode_struct(plan: &Plan, input: &Input, off: &mut usize, depth: u32) -> R<*mut ffi::PyObject> {
    if depth > MAX_DEPTH {
        return Err(Fallback);
    }
    let cls = plan.cls;
    let obj = if plan.plain_alloc {
        // SAFETY: GIL held; `cls` is a live GC type whose tp_alloc is PyType_GenericAlloc with no items and no
        // pre-header (checked in build_plan): _PyObject_GC_New makes the same object (class referenced, refcount 1)
        // without zeroing it or tracking it yet. Every slot is set below, in member order; on a failure the slots
        // not set yet are set to NULL before the object is released with Py_DECREF. It is handed to the GC once
        // complete (nothing reads a slot before: counts come from earlier members).
        check(new_plain(cls))?
    } else {
        let alloc = (*cls).tp_alloc.ok_or(Fallback)?;
        // SAFETY: GIL held; `cls` is a live type (kept alive by the plan); its tp_alloc gives a zeroed, tracked
        // instance (every slot NULL), so a partly filled object can be released with Py_DECREF.
        check(alloc(cls, 0))?
    };
    for (i, m) in plan.members.iter().enumerate() {
        let r = match m.fast {
            Fast::Scalar(p) => decode_scalar(p, input, off),
            Fast::Tuple(p, n) => decode_tuple(p, n, input, off),
            Fast::Struct(c) => match *c.0.get().unwrap_or(&None) {
                Some(sub) => decode_struct(sub, input, off, depth + 1),
                None => Err(Fallback),
            },
            Fast::Other => decode_member(plan, m, obj, input, off, depth),
        };
        match r {
            // SAFETY: the slot offset came from the class's own member descriptor; the slot is NULL (fresh object)
            // and takes over the new reference.
            Ok(v) => *slot(obj, m.offset) = v,
            Err(f) => {
                if plan.plain_alloc {
                    for rest in &plan.members[i..] {
                        // SAFETY: the slots not set yet hold whatever the allocator left: cleared before release.
                        *slot(obj, rest.offset) = null_mut();
                    }
                }
                // SAFETY: `obj` is our new reference; its filled slots are released by its dealloc.
                ffi::Py_DECREF(obj);
                return Err(f);
            }
        }
    }
    if plan.plain_alloc {
        // SAFETY: `obj` came from _PyObject_GC_New and is not tracked yet; all its slots are set.
        ffi::PyObject_GC_Track(obj as *mut c_void);
    }
    Ok(obj)
}

/// A new instance of a plain slotted class (`Plan::plain_alloc`), as `_PyObject_GC_New` makes it: class
/// referenced, refcount 1, not tracked by the GC, slots uninitialised. A block [`plain_dealloc`] kept is reused
/// first ([`SPARE`]).
#[inline(always)]
unsafe fn new_plain(cls: *mut ffi::PyTypeObject) -> *mut ffi::PyObject {
    let o = SPARE.take(cls);
    if o.is_null() {
        return _PyObject_GC_New(cls);
    }
    // SAFETY: `o` is a block of this class's size that `plain_dealloc` kept: untracked (its GC header as a new
    // object's), its slots cleared, nothing else refers to it. The header is written whole (refcount 1, as
    // `_Py_NewReference` sets it), then the class it now belongs to, which an instance of a heap class references.
    std::ptr::write(o, ffi::PyObject_HEAD_INIT);
    (*o).ob_type = cls;
    ffi::Py_INCREF(cls as *mut ffi::PyObject);
    o
}

extern "C" {
    /// CPython's allocator behind `PyObject_GC_New` (allocates a GC object of `tp_basicsize`, not tracked, with its
    /// type referenced and refcount 1; its fields uninitialised).
    fn _PyObject_GC_New(tp: *mut ffi::PyTypeObject) -> *mut ffi::PyObject;
}

/// A tuple of `n` scalars of `p` (a small fixed numeric or boolean array).
#[inline(always)]
unsafe fn decode_tuple(p: Prim, n: usize, input: &Input, off: &mut usize) -> R<*mut ffi::PyObject> {
    let size = p.size();
    // one bounds check for the whole array: a short message falls back before anything is made
    let b = input.take(*off, n * size)?;
    let t = check(ffi::PyTuple_New(n as ffi::Py_ssize_t))?;
    let src = b.as_ptr();
    for i in 0..n {
        // SAFETY: i * size + size <= n * size = b.len(): reads stay within `b`.
        let x = src.add(i * size);
        let v = match p {
            Prim::F32 => ffi::PyFloat_FromDouble(f32::from_be_bytes(*(x as *const [u8; 4])) as f64),
            Prim::F64 => ffi::PyFloat_FromDouble(f64::from_be_bytes(*(x as *const [u8; 8]))),
            Prim::I8 => ffi::PyLong_FromLong(*x as i8 as _),
            Prim::I16 => ffi::PyLong_FromLong(i16::from_be_bytes(*(x as *const [u8; 2])) as _),
            Prim::I32 => ffi::PyLong_FromLong(i32::from_be_bytes(*(x as *const [u8; 4])) as _),
            Prim::I64 => ffi::PyLong_FromLongLong(i64::from_be_bytes(*(x as *const [u8; 8]))),
            Prim::Bool => ffi::PyBool_FromLong((*x != 0) as _),
            Prim::Byte => ffi::PyLong_FromLong(*x as _),
            Prim::Str => null_mut(), // never a tuple (see build_plan)
        };
        if v.is_null() {
            // SAFETY: `t` is our new tuple; its unset items are NULL, which tuple dealloc skips.
            ffi::Py_DECREF(t);
            ffi::PyErr_Clear();
            return Err(Fallback);
        }
        // SAFETY: `t` is a new tuple of `n` empty items; each is set once, taking over the new reference `v`.
        ffi::PyTuple_SET_ITEM(t, i as ffi::Py_ssize_t, v);
    }
    *off += n * size;
    Ok(t)
}

/// The innermost dimension of a primitive array in list mode: bytes, a list of bools or a tuple of numbers.
unsafe fn decode_innermost(p: Prim, n: usize, input: &Input, off: &mut usize) -> R<*mut ffi::PyObject> {
    match p {
        Prim::Byte => {
            let b = input.take(*off, n)?;
            let v = check(ffi::PyBytes_FromStringAndSize(b.as_ptr() as *const c_char, n as ffi::Py_ssize_t))?;
            *off += n;
            Ok(v)
        }
        Prim::Bool => {
            let b = input.take(*off, n)?;
            let list = check(ffi::PyList_New(n as ffi::Py_ssize_t))?;
            for (i, x) in b.iter().enumerate() {
                // SAFETY: a new list of `n` empty items, each set once with a new reference to a bool.
                ffi::PyList_SET_ITEM(list, i as ffi::Py_ssize_t, ffi::PyBool_FromLong((*x != 0) as _));
            }
            *off += n;
            Ok(list)
        }
        _ => decode_tuple(p, n, input, off),
    }
}

unsafe fn count_of(obj: *mut ffi::PyObject, plan_members: &[Member], d: Dim) -> R<usize> {
    match d {
        Dim::Fixed(n) => Ok(n),
        Dim::Var(j) => {
            let v = *slot(obj, plan_members_offset(plan_members, j));
            if v.is_null() {
                return Err(Fallback);
            }
            let n = ffi::PyLong_AsLongLong(v);
            if n == -1 && !ffi::PyErr_Occurred().is_null() {
                ffi::PyErr_Clear();
                return Err(Fallback);
            }
            usize::try_from(n).map_err(|_| Fallback)
        }
    }
}

#[inline]
fn plan_members_offset(members: &[Member], j: usize) -> isize {
    members[j].offset
}

unsafe fn decode_member(
    plan: &Plan,
    m: &Member,
    obj: *mut ffi::PyObject,
    input: &Input,
    off: &mut usize,
    depth: u32,
) -> R<*mut ffi::PyObject> {
    // `m` belongs to the plan of `obj`'s class; counts refer to earlier, already-set slots.
    let members = &plan.members[..];
    if m.dims.is_empty() {
        return match &m.kind {
            Kind::Prim(p) => decode_scalar(*p, input, off),
            Kind::Struct(c) => decode_struct(c.0.get().copied().flatten().ok_or(Fallback)?, input, off, depth + 1),
        };
    }
    let mut counts = [0usize; 8];
    if m.dims.len() > counts.len() {
        return Err(Fallback);
    }
    let mut total: usize = 1;
    for (k, d) in m.dims.iter().enumerate() {
        let c = count_of(obj, members, *d)?;
        counts[k] = c;
        total = total.checked_mul(c).ok_or(Fallback)?;
    }
    let counts = &counts[..m.dims.len()];
    if total == 0 && counts.len() > 1 {
        // Rows of nothing (an inner count of 0) still make a list each: past the generator's bound (at most
        // ZERO_SIZE_SLACK more rows than bytes left at each level), the pure code raises its DecodeError.
        let limit = (input.len - *off).saturating_add(ZERO_SIZE_SLACK);
        let mut rows = 1usize;
        for c in &counts[..counts.len() - 1] {
            rows = rows.saturating_mul(*c);
            if rows > limit {
                return Err(Fallback);
            }
        }
    }
    match &m.kind {
        Kind::Prim(p) if m.tuple => {
            let t = check(ffi::PyTuple_New(total as ffi::Py_ssize_t))?;
            for i in 0..total {
                match decode_scalar(*p, input, off) {
                    // SAFETY: `t` is a new tuple of `total` empty items; each is set once.
                    Ok(v) => ffi::PyTuple_SET_ITEM(t, i as ffi::Py_ssize_t, v),
                    Err(f) => {
                        ffi::Py_DECREF(t);
                        return Err(f);
                    }
                }
            }
            Ok(t)
        }
        Kind::Prim(p) if !plan.numpy && *p != Prim::Str => {
            // lcm-gen's form: lists for the outer dimensions, the innermost one a tuple of numbers, a list of bools
            // or bytes; the whole array's bytes are checked first
            input.take(*off, total.checked_mul(p.size()).ok_or(Fallback)?)?;
            let (inner, outer) = counts.split_last().ok_or(Fallback)?;
            let mut elem = || decode_innermost(*p, *inner, input, off);
            if outer.is_empty() {
                elem()
            } else {
                nested_list(outer, &mut elem)
            }
        }
        Kind::Prim(Prim::Str) => {
            if total.checked_mul(5).ok_or(Fallback)? > input.len - *off {
                return Err(Fallback);
            }
            nested_list(counts, &mut || decode_scalar(Prim::Str, input, off))
        }
        Kind::Prim(Prim::Byte) if m.dims.len() == 1 => {
            let b = input.take(*off, total)?;
            let v = check(ffi::PyBytes_FromStringAndSize(b.as_ptr() as *const c_char, total as ffi::Py_ssize_t))?;
            *off += total;
            Ok(v)
        }
        Kind::Prim(Prim::Bool) => {
            let b = input.take(*off, total)?;
            let a = new_array(env().bool_descr, counts, null_mut(), true)?;
            let dst = (*(a as *mut PyArrayObject)).fields.data as *mut u8;
            for (i, x) in b.iter().enumerate() {
                *dst.add(i) = (*x != 0) as u8;
            }
            *off += total;
            Ok(a)
        }
        Kind::Prim(p) => {
            let n = total.checked_mul(p.size()).ok_or(Fallback)?;
            let b = input.take(*off, n)?;
            let a = new_array(m.descr, counts, b.as_ptr() as *mut c_void, false)?;
            ffi::Py_INCREF(input.obj);
            if (PY_ARRAY_API.PyArray_SetBaseObject(Python::assume_attached(), a as *mut PyArrayObject, input.obj)) < 0 {
                ffi::Py_DECREF(input.obj);
                ffi::Py_DECREF(a);
                ffi::PyErr_Clear();
                return Err(Fallback);
            }
            *off += n;
            Ok(a)
        }
        Kind::Struct(c) => {
            let sub = c.0.get().copied().flatten().ok_or(Fallback)?;
            if let (1, Some(size)) = (m.dims.len(), sub.records_size) {
                let n = total.checked_mul(size).ok_or(Fallback)?;
                input.take(*off, n)?;
                let args = [
                    sub.cls as *mut ffi::PyObject,
                    input.obj,
                    ffi::PyLong_FromSize_t(*off),
                    ffi::PyLong_FromSize_t(total),
                ];
                if args[2].is_null() || args[3].is_null() {
                    ffi::Py_XDECREF(args[2]);
                    ffi::Py_XDECREF(args[3]);
                    ffi::PyErr_Clear();
                    return Err(Fallback);
                }
                let r = ffi::PyObject_Vectorcall(sub.packed, args.as_ptr(), 4, null_mut());
                ffi::Py_DECREF(args[2]);
                ffi::Py_DECREF(args[3]);
                let r = check(r)?;
                *off += n;
                return Ok(r);
            }
            if total.checked_mul(sub.min_size).ok_or(Fallback)? > input.len - *off {
                return Err(Fallback);
            }
            if counts.len() == 1 {
                if let Some(ops) = &sub.flat {
                    return decode_flat_list(sub.cls, ops, total, input, off);
                }
                // SAFETY: GIL held; a new list of `total` empty items, each set once below (or freed on failure).
                let list = check(ffi::PyList_New(total as ffi::Py_ssize_t))?;
                for i in 0..total {
                    match decode_struct(sub, input, off, depth + 1) {
                        Ok(v) => ffi::PyList_SET_ITEM(list, i as ffi::Py_ssize_t, v),
                        Err(f) => {
                            ffi::Py_DECREF(list);
                            return Err(f);
                        }
                    }
                }
                return Ok(list);
            }
            nested_list(counts, &mut || decode_struct(sub, input, off, depth + 1))
        }
    }
}

/// A list of `total` instances of a flat plain slotted class (`Plan::flat`): what `decode_struct` makes for each,
/// in a loop of its own with no per-element plan dispatch beyond the members' forms.
#[inline(never)]
unsafe fn decode_flat_list(
    cls: *mut ffi::PyTypeObject,
    ops: &[(isize, Fast)],
    total: usize,
    input: &Input,
    off: &mut usize,
) -> R<*mut ffi::PyObject> {
    // SAFETY: GIL held; a new list of `total` empty (NULL) items, each set once below; a list with NULL items is
    // released correctly on failure.
    let list = check(ffi::PyList_New(total as ffi::Py_ssize_t))?;
    let items = (*(list as *mut ffi::PyListObject)).ob_item;
    for i in 0..total {
        // SAFETY: as in decode_struct (`plain_alloc` holds for a flat plan): every slot is set below, or cleared on
        // a failure before the object is released; tracked once complete.
        let o = new_plain(cls);
        if o.is_null() {
            ffi::PyErr_Clear();
            ffi::Py_DECREF(list);
            return Err(Fallback);
        }
        for (j, (offset, fast)) in ops.iter().enumerate() {
            let r = match *fast {
                Fast::Scalar(p) => decode_scalar(p, input, off),
                Fast::Tuple(p, n) => decode_tuple(p, n, input, off),
                _ => Err(Fallback), // never: a flat plan has only these
            };
            match r {
                Ok(v) => *slot(o, *offset) = v,
                Err(f) => {
                    for (rest, _) in &ops[j..] {
                        *slot(o, *rest) = null_mut();
                    }
                    ffi::Py_DECREF(o);
                    ffi::Py_DECREF(list);
                    return Err(f);
                }
            }
        }
        ffi::PyObject_GC_Track(o as *mut c_void);
        // SAFETY: i < total, the list's length; the item is NULL and takes over the new reference.
        *items.add(i) = o;
    }
    Ok(list)
}

unsafe fn nested_list(counts: &[usize], elem: &mut dyn FnMut() -> R<*mut ffi::PyObject>) -> R<*mut ffi::PyObject> {
    let n = counts[0];
    let list = check(ffi::PyList_New(n as ffi::Py_ssize_t))?;
    for i in 0..n {
        let v = if counts.len() == 1 { elem() } else { nested_list(&counts[1..], elem) };
        match v {
            Ok(v) => ffi::PyList_SET_ITEM(list, i as ffi::Py_ssize_t, v),
            Err(f) => {
                ffi::Py_DECREF(list);
                return Err(f);
            }
        }
    }
    Ok(list)
}

unsafe fn new_array(
    descr: *mut PyArray_Descr,
    counts: &[usize],
    data: *mut c_void,
    writeable: bool,
) -> R<*mut ffi::PyObject> {
    let py = Python::assume_attached();
    let mut dims = [0 as npy_intp; 8];
    for (d, c) in dims.iter_mut().zip(counts) {
        *d = *c as npy_intp;
    }
    ffi::Py_INCREF(descr as *mut ffi::PyObject);
    // With data == NULL numpy allocates (writeable) and reads a non-zero `flags` as "Fortran order": pass 0.
    // With data, 0 means read-only; C order either way, since no strides are given.
    debug_assert!(writeable == data.is_null());
    let flags = 0;
    let a = PY_ARRAY_API.PyArray_NewFromDescr(
        py,
        env().array_type,
        descr,
        counts.len() as c_int,
        dims.as_mut_ptr(),
        null_mut(),
        data,
        flags,
        null_mut(),
    );
    check(a)
}

#[inline(always)]
unsafe fn decode_scalar(p: Prim, input: &Input, off: &mut usize) -> R<*mut ffi::PyObject> {
    let b = input.take(*off, if p == Prim::Str { 4 } else { p.size() })?;
    let v = match p {
        Prim::I8 => ffi::PyLong_FromLong(b[0] as i8 as _),
        Prim::Byte => ffi::PyLong_FromLong(b[0] as _),
        Prim::Bool => ffi::PyBool_FromLong((b[0] != 0) as _),
        Prim::I16 => ffi::PyLong_FromLong(i16::from_be_bytes(be(b)) as _),
        Prim::I32 => ffi::PyLong_FromLong(i32::from_be_bytes(be(b)) as _),
        Prim::I64 => ffi::PyLong_FromLongLong(i64::from_be_bytes(be(b))),
        Prim::F32 => ffi::PyFloat_FromDouble(f32::from_be_bytes(be(b)) as f64),
        Prim::F64 => ffi::PyFloat_FromDouble(f64::from_be_bytes(be(b))),
        Prim::Str => {
            let k = u32::from_be_bytes(be(b)) as usize;
            if k == 0 {
                return Err(Fallback);
            }
            let s = input.take(*off + 4, k)?;
            if s[k - 1] != 0 {
                return Err(Fallback);
            }
            let text = &s[..k - 1];
            if is_ascii(text) {
                // The same str PyUnicode_DecodeUTF8 makes for ASCII (a compact ASCII object; "" is the empty
                // singleton), without its decoder.
                // SAFETY: GIL held; PyUnicode_New(n, 127) gives a compact ASCII object whose n + 1 data bytes follow
                // its PyASCIIObject header; we fill the n characters (the NUL is already there) before anyone sees it.
                let v = check(ffi::PyUnicode_New(text.len() as ffi::Py_ssize_t, 127))?;
                let dst = (v as *mut ffi::PyASCIIObject).add(1) as *mut u8;
                copy_short(text, dst);
                *off += 4 + k;
                return Ok(v);
            }
            let v = check(ffi::PyUnicode_DecodeUTF8(
                s.as_ptr() as *const c_char,
                (k - 1) as ffi::Py_ssize_t,
                c"strict".as_ptr(),
            ))?;
            *off += 4 + k;
            return Ok(v);
        }
    };
    *off += p.size();
    check(v)
}

/// `copy_nonoverlapping` of `src` to `dst`, with the short lengths of names and ids (up to 16 bytes) copied inline
/// by two overlapping loads and stores rather than by a call to memcpy.
#[inline(always)]
unsafe fn copy_short(src: &[u8], dst: *mut u8) {
    let n = src.len();
    let p = src.as_ptr();
    // SAFETY (all arms): reads stay within `src` and writes within the n bytes at `dst` the caller provides.
    if (8..=16).contains(&n) {
        let a = std::ptr::read_unaligned(p as *const u64);
        let b = std::ptr::read_unaligned(p.add(n - 8) as *const u64);
        std::ptr::write_unaligned(dst as *mut u64, a);
        std::ptr::write_unaligned(dst.add(n - 8) as *mut u64, b);
    } else if (4..8).contains(&n) {
        let a = std::ptr::read_unaligned(p as *const u32);
        let b = std::ptr::read_unaligned(p.add(n - 4) as *const u32);
        std::ptr::write_unaligned(dst as *mut u32, a);
        std::ptr::write_unaligned(dst.add(n - 4) as *mut u32, b);
    } else {
        std::ptr::copy_nonoverlapping(p, dst, n);
    }
}

/// Whether every byte is ASCII (eight at a time).
#[inline(always)]
fn is_ascii(b: &[u8]) -> bool {
    let mut chunks = b.chunks_exact(8);
    let mut acc = 0u64;
    for c in &mut chunks {
        acc |= u64::from_ne_bytes(be(c));
    }
    let mut tail = 0u8;
    for x in chunks.remainder() {
        tail |= *x;
    }
    (acc & 0x8080_8080_8080_8080) == 0 && tail < 0x80
}

// ---------------------------------------------------------------------------------------------------------------
// Freeing

/// CPython's deallocator of heap classes (`subtype_dealloc`), as found on the first class given [`plain_dealloc`];
/// handed back to a class that gains a finalizer.
static GENERIC_DEALLOC: AtomicUsize = AtomicUsize::new(0);

/// How many releases of a slot value that may come back into [`plain_dealloc`] are nested on this thread, and the
/// references put off until the outermost one returns: CPython's trashcan, for our frames (a long chain of instances
/// through their slots is freed in a loop, not by recursion).
const FREE_NESTING: u32 = 50;
thread_local! {
    static FREEING: Cell<u32> = const { Cell::new(0) };
    static FREE_LATER: RefCell<Vec<*mut ffi::PyObject>> = const { RefCell::new(Vec::new()) };
}

/// Blocks of freed instances of the plain slotted classes, kept for [`new_plain`] by size (object slots, up to
/// [`SPARE_SLOTS`]), at most [`SPARE_KEEP`] of each: CPython keeps freelists of its own for floats, tuples, lists
/// and dicts, but not for instances of Python classes, whose allocation and release through pymalloc and the GC's
/// bookkeeping were a sizeable share of decoding and freeing a message of many small structs (path_t). Only
/// on CPython 3.9-3.13 with the GIL ([`spare_supported`]), whose `PyObject_GC_UnTrack` leaves the GC header as
/// `_PyObject_GC_New` makes it. Like CPython's own freelists, a reused block skips the GC's count of allocations
/// (and its keeping skips the count's decrement), and blocks kept are never given back: at most
/// `SPARE_KEEP` per size in use.
static SPARE: Spare = Spare(UnsafeCell::new([SizeClass { len: 0, blocks: [null_mut(); SPARE_KEEP] }; SPARE_SLOTS + 1]));
/// Whether [`SPARE`] is used: set once, when the module initialises.
static SPARE_ON: AtomicBool = AtomicBool::new(false);
const SPARE_SLOTS: usize = 16;
const SPARE_KEEP: usize = 1024;

struct Spare(UnsafeCell<[SizeClass; SPARE_SLOTS + 1]>);
#[derive(Clone, Copy)]
struct SizeClass {
    len: usize,
    blocks: [*mut ffi::PyObject; SPARE_KEEP],
}
// SAFETY: only used with the GIL held (from a decode or a tp_dealloc), which serialises every access.
unsafe impl Sync for Spare {}

impl Spare {
    /// The size class of instances of `cls`, a plain slotted class.
    #[inline(always)]
    unsafe fn class_of(&self, cls: *mut ffi::PyTypeObject) -> Option<*mut SizeClass> {
        let slots =
            ((*cls).tp_basicsize as usize - std::mem::size_of::<ffi::PyObject>()) / std::mem::size_of::<usize>();
        if slots > SPARE_SLOTS || !SPARE_ON.load(Ordering::Relaxed) {
            return None;
        }
        Some((self.0.get() as *mut SizeClass).add(slots))
    }

    /// A kept block for an instance of `cls`, or NULL.
    #[inline(always)]
    unsafe fn take(&self, cls: *mut ffi::PyTypeObject) -> *mut ffi::PyObject {
        // SAFETY (here and in `keep`): GIL held, so no other reference to the array is live (see the Sync impl);
        // the one made here ends before anything that could reach `SPARE` again.
        match self.class_of(cls).map(|c| &mut *c) {
            Some(c) if c.len > 0 => {
                c.len -= 1;
                c.blocks[c.len]
            }
            _ => null_mut(),
        }
    }

    /// Keeps the block of `obj`, a freed (untracked, slots cleared) instance of the plain slotted class `cls`; false
    /// when its size class is full.
    #[inline(always)]
    unsafe fn keep(&self, cls: *mut ffi::PyTypeObject, obj: *mut ffi::PyObject) -> bool {
        match self.class_of(cls).map(|c| &mut *c) {
            Some(c) if c.len < SPARE_KEEP => {
                c.blocks[c.len] = obj;
                c.len += 1;
                true
            }
            _ => false,
        }
    }
}

/// Whether this interpreter's GC header and freeing are as [`SPARE`] needs: CPython 3.9 to 3.13 built with the GIL.
fn spare_supported(py: Python<'_>) -> PyResult<bool> {
    let cpython = py.import("sys")?.getattr("implementation")?.getattr("name")?.extract::<String>()? == "cpython";
    let gil_disabled = py.import("sysconfig")?.call_method1("get_config_var", ("Py_GIL_DISABLED",))?.is_truthy()?;
    let v = py.version_info();
    Ok(cpython && !gil_disabled && (3, 9) <= (v.major, v.minor) && (v.major, v.minor) <= (3, 13))
}

/// Gives a plain slotted class (`Plan::plain_alloc`) [`plain_dealloc`] in place of CPython's `subtype_dealloc`,
/// whose general steps (finalizers, weak references, `__dict__`, untrack then track again around the slots, a walk
/// of the bases twice) were an eighth of decoding a message of many small structs and freeing it again. Only for a
/// heap class straight under `object`, with no finalizer, freed by `PyObject_GC_Del`, as the generator writes them.
unsafe fn install_plain_dealloc(t: *mut ffi::PyTypeObject) {
    let Some(cur) = (*t).tp_dealloc else { return };
    let cur = cur as usize;
    if cur == plain_dealloc as *const () as usize {
        return;
    }
    if (*t).tp_base != std::ptr::addr_of_mut!(ffi::PyBaseObject_Type)
        || (*t).tp_flags & ffi::Py_TPFLAGS_HEAPTYPE == 0
        || (*t).tp_finalize.is_some()
        || (*t).tp_del.is_some()
        || (*t).tp_free.map(|f| f as usize) != Some(ffi::PyObject_GC_Del as *const () as usize)
    {
        return;
    }
    match GENERIC_DEALLOC.compare_exchange(0, cur, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => {}
        Err(g) if g == cur => {}
        Err(_) => return, // not the deallocator the other classes had: leave this one alone
    }
    (*t).tp_dealloc = Some(plain_dealloc);
}

/// `tp_dealloc` of the plain slotted classes: what `subtype_dealloc` does for them, without its general steps.
///
/// It is called for an instance of the class, or, as the base's deallocator, by `subtype_dealloc` of a Python
/// subclass, which has already run the finalizer, cleared the subclass's own slots, `__dict__` and weak references;
/// either way what is left is the class's slots (every word between the object header and its `tp_basicsize`,
/// checked when the plan compiled), the memory (`tp_free`) and the instance's reference to its type.
unsafe extern "C" fn plain_dealloc(obj: *mut ffi::PyObject) {
    let tp = ffi::Py_TYPE(obj);
    // the class whose dealloc this is: `tp` itself or its nearest base with this dealloc
    let mut layer = tp;
    while (*layer).tp_dealloc.map(|f| f as usize) != Some(plain_dealloc as *const () as usize) {
        layer = (*layer).tp_base;
        if layer.is_null() {
            // cannot happen: only reached through a class that has this dealloc
            std::process::abort();
        }
    }
    if layer == tp && ((*tp).tp_finalize.is_some() || (*tp).tp_del.is_some()) {
        // A finalizer was given to the class later (`cls.__del__ = f`): it goes back to CPython's dealloc, for good.
        // SAFETY: GENERIC_DEALLOC was set from this class's own tp_dealloc before this one replaced it.
        let generic: ffi::destructor = std::mem::transmute(GENERIC_DEALLOC.load(Ordering::Relaxed));
        (*tp).tp_dealloc = Some(generic);
        return generic(obj);
    }
    // SAFETY: `obj` is a GC object (refcount 0) being freed; untracking an untracked object does nothing.
    ffi::PyObject_GC_UnTrack(obj as *mut c_void);
    let word = std::mem::size_of::<*mut ffi::PyObject>() as isize;
    let mut off = std::mem::size_of::<ffi::PyObject>() as isize;
    while off < (*layer).tp_basicsize {
        // SAFETY: the words from the header to tp_basicsize are the class's object slots (build_plan checked it);
        // each is cleared before its reference is dropped, as CPython's clear_slots does.
        let p = slot(obj, off);
        let v = *p;
        if !v.is_null() {
            *p = null_mut();
            release(v);
        }
        off += word;
    }
    let tp = ffi::Py_TYPE(obj);
    // an instance of the class itself (not of a subclass, whose blocks are larger) may be kept for reuse
    if layer == tp && SPARE.keep(tp, obj) {
        ffi::Py_DECREF(tp as *mut ffi::PyObject);
        return;
    }
    match (*tp).tp_free {
        Some(free) => free(obj as *mut c_void),
        None => ffi::PyObject_GC_Del(obj as *mut c_void),
    }
    // an instance of a heap class holds a reference to it (its subclass's subtype_dealloc leaves that to its base's
    // dealloc when the base is a heap class, as here)
    ffi::Py_DECREF(tp as *mut ffi::PyObject);
}

/// Drops a reference a slot held. Objects of exact types whose dealloc frees nothing of ours or puts itself in
/// CPython's trashcan (str, bytes, int, bool, float, None; tuple, list) are released at once; anything else (a
/// nested struct, say) counts as one level of nesting, and past [`FREE_NESTING`] levels its release waits until the
/// outermost level returns.
#[inline]
unsafe fn release(v: *mut ffi::PyObject) {
    let t = ffi::Py_TYPE(v);
    let leaf = t == std::ptr::addr_of_mut!(ffi::PyUnicode_Type)
        || t == std::ptr::addr_of_mut!(ffi::PyTuple_Type)
        || t == std::ptr::addr_of_mut!(ffi::PyLong_Type)
        || t == std::ptr::addr_of_mut!(ffi::PyFloat_Type)
        || t == std::ptr::addr_of_mut!(ffi::PyList_Type)
        || t == std::ptr::addr_of_mut!(ffi::PyBytes_Type)
        || t == std::ptr::addr_of_mut!(ffi::PyBool_Type)
        || v == ffi::Py_None();
    if leaf {
        return ffi::Py_DECREF(v);
    }
    release_nested(v)
}

/// `release` of a value that may come back into [`plain_dealloc`]: out of line, so that the common case does not
/// look up the thread-local counters.
#[cold]
#[inline(never)]
unsafe fn release_nested(v: *mut ffi::PyObject) {
    let depth = FREEING.with(|d| d.get());
    if depth >= FREE_NESTING {
        // the reference is ours: dropping it a little later is the same as dropping it now
        return FREE_LATER.with(|l| l.borrow_mut().push(v));
    }
    FREEING.with(|d| d.set(depth + 1));
    ffi::Py_DECREF(v);
    if depth == 0 {
        while let Some(x) = FREE_LATER.with(|l| l.borrow_mut().pop()) {
            ffi::Py_DECREF(x);
        }
    }
    FREEING.with(|d| d.set(depth));
}

// ---------------------------------------------------------------------------------------------------------------
// Encoding

unsafe fn encode_message(plan: &Plan, obj: *mut ffi::PyObject) -> R<*mut ffi::PyObject> {
    SCRATCH.with(|s| {
        let mut fresh = Vec::new();
        let mut guard = s.try_borrow_mut();
        let out: &mut Vec<u8> = match guard.as_mut() {
            Ok(g) => g,
            Err(_) => &mut fresh,
        };
        out.clear();
        out.extend_from_slice(&plan.fingerprint);
        encode_struct(plan, obj, out, 0)?;
        let r = check(ffi::PyBytes_FromStringAndSize(out.as_ptr() as *const c_char, out.len() as ffi::Py_ssize_t));
        if out.capacity() > (1 << 24) {
            *out = Vec::new(); // do not keep a huge buffer around
        }
        r
    })
}

unsafe fn encode_struct(plan: &Plan, obj: *mut ffi::PyObject, out: &mut Vec<u8>, depth: u32) -> R<()> {
    if depth > MAX_DEPTH || ffi::Py_TYPE(obj) != plan.cls {
        return Err(Fallback);
    }
    for m in &plan.members {
        let v = *slot(obj, m.offset);
        if v.is_null() {
            return Err(Fallback);
        }
        if m.dims.is_empty() {
            match &m.kind {
                Kind::Prim(p) => encode_scalar(*p, v, out)?,
                Kind::Struct(c) => encode_struct(c.0.get().copied().flatten().ok_or(Fallback)?, v, out, depth + 1)?,
            }
            continue;
        }
        let mut counts = [0usize; 8];
        if m.dims.len() > counts.len() {
            return Err(Fallback);
        }
        for (k, d) in m.dims.iter().enumerate() {
            counts[k] = match *d {
                Dim::Fixed(n) => n,
                Dim::Var(j) => {
                    let c = *slot(obj, plan.members[j].offset);
                    if c.is_null() || ffi::PyLong_CheckExact(c) == 0 {
                        return Err(Fallback);
                    }
                    let n = ffi::PyLong_AsLongLong(c);
                    if n == -1 && !ffi::PyErr_Occurred().is_null() {
                        ffi::PyErr_Clear();
                        return Err(Fallback);
                    }
                    usize::try_from(n).map_err(|_| Fallback)?
                }
            };
        }
        let counts = &counts[..m.dims.len()];
        match &m.kind {
            Kind::Prim(Prim::Str) => encode_nested(v, counts, &mut |x, out| encode_scalar(Prim::Str, x, out), out)?,
            Kind::Prim(p) => encode_prim_array(*p, v, counts, out)?,
            Kind::Struct(c) => {
                let sub = c.0.get().copied().flatten().ok_or(Fallback)?;
                if counts.len() == 1 && ffi::Py_TYPE(v) as *mut ffi::PyObject == sub.struct_array {
                    encode_struct_array(sub, v, counts[0], out, depth)?;
                } else {
                    encode_nested(v, counts, &mut |x, out| encode_struct(sub, x, out, depth + 1), out)?;
                }
            }
        }
    }
    Ok(())
}

/// The first `counts[0]` elements of a list or tuple (nested for more dimensions).
unsafe fn encode_nested(
    v: *mut ffi::PyObject,
    counts: &[usize],
    elem: &mut dyn FnMut(*mut ffi::PyObject, &mut Vec<u8>) -> R<()>,
    out: &mut Vec<u8>,
) -> R<()> {
    let (items, len) = seq_items(v)?;
    let n = counts[0];
    if len < n {
        return Err(Fallback);
    }
    for i in 0..n {
        let x = *items.add(i);
        if counts.len() == 1 {
            elem(x, out)?;
        } else {
            encode_nested(x, &counts[1..], elem, out)?;
        }
    }
    Ok(())
}

/// The item array of an exact list or tuple.
unsafe fn seq_items(v: *mut ffi::PyObject) -> R<(*mut *mut ffi::PyObject, usize)> {
    if ffi::PyList_CheckExact(v) != 0 {
        Ok(((*(v as *mut ffi::PyListObject)).ob_item, ffi::PyList_GET_SIZE(v) as usize))
    } else if ffi::PyTuple_CheckExact(v) != 0 {
        Ok(((*(v as *mut ffi::PyTupleObject)).ob_item.as_mut_ptr(), ffi::PyTuple_GET_SIZE(v) as usize))
    } else {
        Err(Fallback)
    }
}

unsafe fn encode_struct_array(sub: &Plan, v: *mut ffi::PyObject, n: usize, out: &mut Vec<u8>, depth: u32) -> R<()> {
    let e = env();
    let get = |name: *mut ffi::PyObject| check(ffi::PyObject_GetAttr(v, name));
    let cls = get(e.s_cls)?;
    ffi::Py_DECREF(cls); // the class is alive through the plan
    if cls != sub.cls as *mut ffi::PyObject {
        return Err(Fallback);
    }
    let items = get(e.s_items)?;
    let r = if items == ffi::Py_None() {
        packed_bytes(sub, v, n, out)
    } else {
        encode_nested(items, &[n], &mut |x, out| encode_struct(sub, x, out, depth + 1), out)
    };
    ffi::Py_DECREF(items);
    r
}

unsafe fn packed_bytes(sub: &Plan, v: *mut ffi::PyObject, n: usize, out: &mut Vec<u8>) -> R<()> {
    let e = env();
    let size = sub.records_size.ok_or(Fallback)?;
    let int_attr = |name| -> R<usize> {
        let x = check(ffi::PyObject_GetAttr(v, name))?;
        let r = ffi::PyLong_AsSsize_t(x);
        ffi::Py_DECREF(x);
        if r < 0 {
            ffi::PyErr_Clear();
            return Err(Fallback);
        }
        Ok(r as usize)
    };
    let have = int_attr(e.s_n)?;
    let off = int_attr(e.s_off)?;
    if n > have {
        return Err(Fallback);
    }
    let buf = check(ffi::PyObject_GetAttr(v, e.s_buf))?;
    let mut view: ffi::Py_buffer = std::mem::zeroed();
    if ffi::PyObject_GetBuffer(buf, &mut view, ffi::PyBUF_SIMPLE) != 0 {
        ffi::Py_DECREF(buf);
        ffi::PyErr_Clear();
        return Err(Fallback);
    }
    let len = view.len as usize;
    let need = n * size;
    let r = if off <= len && need <= len - off {
        out.extend_from_slice(std::slice::from_raw_parts((view.buf as *const u8).add(off), need));
        Ok(())
    } else {
        Err(Fallback)
    };
    ffi::PyBuffer_Release(&mut view);
    ffi::Py_DECREF(buf);
    r
}

/// An exact int as i64 (bools too: they are ints to `struct.pack`).
#[inline]
unsafe fn int_value(v: *mut ffi::PyObject) -> R<i64> {
    if ffi::PyLong_CheckExact(v) == 0 && ffi::PyBool_Check(v) == 0 {
        return Err(Fallback);
    }
    let n = ffi::PyLong_AsLongLong(v);
    if n == -1 && !ffi::PyErr_Occurred().is_null() {
        ffi::PyErr_Clear();
        return Err(Fallback);
    }
    Ok(n)
}

/// An exact float, or an int or bool that a double holds exactly, as f64.
#[inline]
unsafe fn float_value(v: *mut ffi::PyObject) -> R<f64> {
    if ffi::PyFloat_CheckExact(v) != 0 {
        return Ok(ffi::PyFloat_AS_DOUBLE(v));
    }
    let n = int_value(v)?;
    if n.unsigned_abs() > (1u64 << 53) {
        return Err(Fallback);
    }
    Ok(n as f64)
}

#[inline]
fn to_f32(x: f64) -> R<f32> {
    let y = x as f32;
    if y.is_infinite() && x.is_finite() {
        return Err(Fallback); // struct.pack raises OverflowError here; numpy gives inf: leave it to them
    }
    Ok(y)
}

unsafe fn encode_scalar(p: Prim, v: *mut ffi::PyObject, out: &mut Vec<u8>) -> R<()> {
    match p {
        Prim::I8 => out.push(i8::try_from(int_value(v)?).map_err(|_| Fallback)? as u8),
        Prim::Byte => out.push(u8::try_from(int_value(v)?).map_err(|_| Fallback)?),
        Prim::I16 => out.extend_from_slice(&i16::try_from(int_value(v)?).map_err(|_| Fallback)?.to_be_bytes()),
        Prim::I32 => out.extend_from_slice(&i32::try_from(int_value(v)?).map_err(|_| Fallback)?.to_be_bytes()),
        Prim::I64 => out.extend_from_slice(&int_value(v)?.to_be_bytes()),
        Prim::F32 => out.extend_from_slice(&to_f32(float_value(v)?)?.to_be_bytes()),
        Prim::F64 => out.extend_from_slice(&float_value(v)?.to_be_bytes()),
        Prim::Bool => {
            // struct's '?' packs the truth value of anything; keep to the forms whose truth is plain
            let b = if v == ffi::Py_True() {
                1
            } else if v == ffi::Py_False() {
                0
            } else {
                (int_value(v)? != 0) as u8
            };
            out.push(b);
        }
        Prim::Str => {
            if ffi::PyUnicode_Check(v) == 0 {
                return Err(Fallback);
            }
            let mut n: ffi::Py_ssize_t = 0;
            let s = ffi::PyUnicode_AsUTF8AndSize(v, &mut n);
            if s.is_null() {
                ffi::PyErr_Clear();
                return Err(Fallback);
            }
            let n = n as usize;
            out.extend_from_slice(&u32::try_from(n + 1).map_err(|_| Fallback)?.to_be_bytes());
            out.extend_from_slice(std::slice::from_raw_parts(s as *const u8, n));
            out.push(0);
        }
    }
    Ok(())
}

unsafe fn encode_prim_array(p: Prim, v: *mut ffi::PyObject, counts: &[usize], out: &mut Vec<u8>) -> R<()> {
    let total: usize = counts.iter().try_fold(1usize, |a, c| a.checked_mul(*c)).ok_or(Fallback)?;
    if ffi::Py_TYPE(v) == env().array_type {
        return encode_ndarray(p, v as *mut PyArrayObject, counts, total, out);
    }
    if p == Prim::Byte && counts.len() == 1 {
        if ffi::PyBytes_CheckExact(v) != 0 {
            let len = ffi::PyBytes_Size(v) as usize;
            if len < total {
                return Err(Fallback);
            }
            out.extend_from_slice(std::slice::from_raw_parts(ffi::PyBytes_AS_STRING(v) as *const u8, total));
            return Ok(());
        }
        if ffi::PyByteArray_CheckExact(v) != 0 {
            let len = ffi::PyByteArray_Size(v) as usize;
            if len < total {
                return Err(Fallback);
            }
            out.extend_from_slice(std::slice::from_raw_parts(ffi::PyByteArray_AsString(v) as *const u8, total));
            return Ok(());
        }
    }
    if counts.len() != 1 {
        return Err(Fallback); // nested lists of numbers: numpy's conversion rules, in the pure code
    }
    let (items, len) = seq_items(v)?;
    if len < total {
        return Err(Fallback);
    }
    // numpy converts every element (an invalid extra element is an error), so check them all, write the first n
    out.reserve(total * p.size());
    for i in 0..len {
        let x = *items.add(i);
        let keep = i < total;
        match p {
            Prim::F32 => {
                let y = to_f32(float_value(x)?)?;
                if keep {
                    out.extend_from_slice(&y.to_be_bytes());
                }
            }
            Prim::F64 => {
                let y = float_value(x)?;
                if keep {
                    out.extend_from_slice(&y.to_be_bytes());
                }
            }
            Prim::Bool => {
                let b = if x == ffi::Py_True() {
                    1u8
                } else if x == ffi::Py_False() {
                    0
                } else {
                    return Err(Fallback);
                };
                if keep {
                    out.push(b);
                }
            }
            _ => {
                let n = int_value(x)?;
                let ok = match p {
                    Prim::I8 => i8::try_from(n).is_ok(),
                    Prim::Byte => u8::try_from(n).is_ok(),
                    Prim::I16 => i16::try_from(n).is_ok(),
                    Prim::I32 => i32::try_from(n).is_ok(),
                    _ => true,
                };
                if !ok {
                    return Err(Fallback);
                }
                if keep {
                    let b = n.to_be_bytes();
                    out.extend_from_slice(&b[8 - p.size()..]);
                }
            }
        }
    }
    Ok(())
}

unsafe fn encode_ndarray(p: Prim, a: *mut PyArrayObject, counts: &[usize], total: usize, out: &mut Vec<u8>) -> R<()> {
    let f = &(*a).fields;
    let d = &(*f.descr).fields;
    if !p.accepts(d.type_num) || f.nd as usize != counts.len() || f.flags & npyffi::NPY_ARRAY_C_CONTIGUOUS == 0 {
        return Err(Fallback);
    }
    let shape = std::slice::from_raw_parts(f.dimensions, counts.len());
    for (k, (s, c)) in shape.iter().zip(counts).enumerate() {
        let s = *s as usize;
        // a longer 1-D array is sliced to the count, as LCM does
        if !(s == *c || (k == 0 && counts.len() == 1 && s > *c)) {
            return Err(Fallback);
        }
    }
    let size = p.size();
    let src = std::slice::from_raw_parts(f.data as *const u8, total * size);
    let swap = size > 1 && (d.byteorder as u8 == b'<' || (d.byteorder as u8 == b'=' && cfg!(target_endian = "little")));
    if !swap {
        if size > 1 && d.byteorder as u8 != b'>' && !(d.byteorder as u8 == b'=' && cfg!(target_endian = "big")) {
            return Err(Fallback);
        }
        out.extend_from_slice(src);
        return Ok(());
    }
    let start = out.len();
    out.extend_from_slice(src);
    let dst = &mut out[start..];
    match size {
        2 => dst.chunks_exact_mut(2).for_each(|c| c.reverse()),
        4 => dst.chunks_exact_mut(4).for_each(|c| {
            let x = u32::from_ne_bytes([c[0], c[1], c[2], c[3]]).swap_bytes();
            c.copy_from_slice(&x.to_ne_bytes());
        }),
        _ => dst.chunks_exact_mut(8).for_each(|c| {
            let x = u64::from_ne_bytes(be(c)).swap_bytes();
            c.copy_from_slice(&x.to_ne_bytes());
        }),
    }
    Ok(())
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
