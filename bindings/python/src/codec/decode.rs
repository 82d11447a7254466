//! Decoding: bytes to objects along a [`Plan`], with every count and length checked against the bytes left; any
//! input it does not handle exactly is a [`Fallback`] to the pure-Python decoder.

use super::*;

pub(super) struct Input {
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
pub(super) fn be<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
}

#[inline]
pub(super) unsafe fn check(p: *mut ffi::PyObject) -> R<*mut ffi::PyObject> {
    if p.is_null() {
        ffi::PyErr_Clear();
        Err(Fallback)
    } else {
        Ok(p)
    }
}

pub(super) unsafe fn decode_message(plan: &Plan, data: *mut ffi::PyObject) -> R<*mut ffi::PyObject> {
    let input =
        Input { obj: data, ptr: ffi::PyBytes_AS_STRING(data) as *const u8, len: ffi::PyBytes_Size(data) as usize };
    if input.take(0, 8)? != plan.fingerprint {
        return Err(Fallback);
    }
    let mut off = 8;
    decode_struct(plan, &input, &mut off, 0)
}

pub(super) unsafe fn decode_records(
    plan: &Plan,
    data: *mut ffi::PyObject,
    off: usize,
    n: usize,
) -> R<*mut ffi::PyObject> {
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
pub(super) unsafe fn slot(obj: *mut ffi::PyObject, offset: isize) -> *mut *mut ffi::PyObject {
    (obj as *mut u8).offset(offset) as *mut *mut ffi::PyObject
}

#[inline]
pub(super) unsafe fn decode_struct(plan: &Plan, input: &Input, off: &mut usize, depth: u32) -> R<*mut ffi::PyObject> {
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
pub(super) unsafe fn new_plain(cls: *mut ffi::PyTypeObject) -> *mut ffi::PyObject {
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
pub(super) unsafe fn decode_tuple(p: Prim, n: usize, input: &Input, off: &mut usize) -> R<*mut ffi::PyObject> {
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
pub(super) unsafe fn decode_innermost(p: Prim, n: usize, input: &Input, off: &mut usize) -> R<*mut ffi::PyObject> {
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

pub(super) unsafe fn count_of(obj: *mut ffi::PyObject, plan_members: &[Member], d: Dim) -> R<usize> {
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
pub(super) fn plan_members_offset(members: &[Member], j: usize) -> isize {
    members[j].offset
}

pub(super) unsafe fn decode_member(
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
pub(super) unsafe fn decode_flat_list(
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

pub(super) unsafe fn nested_list(
    counts: &[usize],
    elem: &mut dyn FnMut() -> R<*mut ffi::PyObject>,
) -> R<*mut ffi::PyObject> {
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

pub(super) unsafe fn new_array(
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
pub(super) unsafe fn decode_scalar(p: Prim, input: &Input, off: &mut usize) -> R<*mut ffi::PyObject> {
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
pub(super) unsafe fn copy_short(src: &[u8], dst: *mut u8) {
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
pub(super) fn is_ascii(b: &[u8]) -> bool {
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
