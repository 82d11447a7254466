//! Freeing: the deallocator given to plain generated classes, and the spare blocks it keeps for the next decode
//! of the same size (`REUSES_INSTANCES`).

use super::*;

/// CPython's deallocator of heap classes (`subtype_dealloc`), as found on the first class given [`plain_dealloc`];
/// handed back to a class that gains a finalizer.
pub(super) static GENERIC_DEALLOC: AtomicUsize = AtomicUsize::new(0);

/// How many releases of a slot value that may come back into [`plain_dealloc`] are nested on this thread, and the
/// references put off until the outermost one returns: CPython's trashcan, for our frames (a long chain of instances
/// through their slots is freed in a loop, not by recursion).
pub(super) const FREE_NESTING: u32 = 50;
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
pub(super) static SPARE: Spare =
    Spare(UnsafeCell::new([SizeClass { len: 0, blocks: [null_mut(); SPARE_KEEP] }; SPARE_SLOTS + 1]));
/// Whether [`SPARE`] is used: set once, when the module initialises.
pub(super) static SPARE_ON: AtomicBool = AtomicBool::new(false);
pub(super) const SPARE_SLOTS: usize = 16;
pub(super) const SPARE_KEEP: usize = 1024;

pub(super) struct Spare(UnsafeCell<[SizeClass; SPARE_SLOTS + 1]>);
#[derive(Clone, Copy)]
pub(super) struct SizeClass {
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
    pub(super) unsafe fn take(&self, cls: *mut ffi::PyTypeObject) -> *mut ffi::PyObject {
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
pub(super) fn spare_supported(py: Python<'_>) -> PyResult<bool> {
    let cpython = py.import("sys")?.getattr("implementation")?.getattr("name")?.extract::<String>()? == "cpython";
    let gil_disabled = py.import("sysconfig")?.call_method1("get_config_var", ("Py_GIL_DISABLED",))?.is_truthy()?;
    let v = py.version_info();
    Ok(cpython && !gil_disabled && (3, 9) <= (v.major, v.minor) && (v.major, v.minor) <= (3, 13))
}

/// Gives a plain slotted class (`Plan::plain_alloc`) [`plain_dealloc`] in place of CPython's `subtype_dealloc`,
/// whose general steps (finalizers, weak references, `__dict__`, untrack then track again around the slots, a walk
/// of the bases twice) were an eighth of decoding a message of many small structs and freeing it again. Only for a
/// heap class straight under `object`, with no finalizer, freed by `PyObject_GC_Del`, as the generator writes them.
pub(super) unsafe fn install_plain_dealloc(t: *mut ffi::PyTypeObject) {
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
pub(super) unsafe extern "C" fn plain_dealloc(obj: *mut ffi::PyObject) {
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
pub(super) unsafe fn release(v: *mut ffi::PyObject) {
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
pub(super) unsafe fn release_nested(v: *mut ffi::PyObject) {
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
