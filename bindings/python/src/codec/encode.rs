//! Encoding: objects to bytes along a [`Plan`], with the same checks as the generated Python; anything else is a
//! [`Fallback`] to the pure-Python encoder.

use super::*;

pub(super) unsafe fn encode_message(plan: &Plan, obj: *mut ffi::PyObject) -> R<*mut ffi::PyObject> {
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

pub(super) unsafe fn encode_struct(plan: &Plan, obj: *mut ffi::PyObject, out: &mut Vec<u8>, depth: u32) -> R<()> {
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
pub(super) unsafe fn encode_nested(
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
pub(super) unsafe fn seq_items(v: *mut ffi::PyObject) -> R<(*mut *mut ffi::PyObject, usize)> {
    if ffi::PyList_CheckExact(v) != 0 {
        Ok(((*(v as *mut ffi::PyListObject)).ob_item, ffi::PyList_GET_SIZE(v) as usize))
    } else if ffi::PyTuple_CheckExact(v) != 0 {
        Ok(((*(v as *mut ffi::PyTupleObject)).ob_item.as_mut_ptr(), ffi::PyTuple_GET_SIZE(v) as usize))
    } else {
        Err(Fallback)
    }
}

pub(super) unsafe fn encode_struct_array(
    sub: &Plan,
    v: *mut ffi::PyObject,
    n: usize,
    out: &mut Vec<u8>,
    depth: u32,
) -> R<()> {
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

pub(super) unsafe fn packed_bytes(sub: &Plan, v: *mut ffi::PyObject, n: usize, out: &mut Vec<u8>) -> R<()> {
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
pub(super) unsafe fn int_value(v: *mut ffi::PyObject) -> R<i64> {
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
pub(super) unsafe fn float_value(v: *mut ffi::PyObject) -> R<f64> {
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
pub(super) fn to_f32(x: f64) -> R<f32> {
    let y = x as f32;
    if y.is_infinite() && x.is_finite() {
        return Err(Fallback); // struct.pack raises OverflowError here; numpy gives inf: leave it to them
    }
    Ok(y)
}

pub(super) unsafe fn encode_scalar(p: Prim, v: *mut ffi::PyObject, out: &mut Vec<u8>) -> R<()> {
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

pub(super) unsafe fn encode_prim_array(p: Prim, v: *mut ffi::PyObject, counts: &[usize], out: &mut Vec<u8>) -> R<()> {
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

pub(super) unsafe fn encode_ndarray(
    p: Prim,
    a: *mut PyArrayObject,
    counts: &[usize],
    total: usize,
    out: &mut Vec<u8>,
) -> R<()> {
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
