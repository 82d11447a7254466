//! Compiling plans: a class's `__slots__`, `__typenames__` and `__dimensions__` (and its member classes) into the
//! [`Plan`] the codec interprets, once per class, or `None` for a class the fast path does not handle.

use super::*;

/// The cell of `cls` (made once per class and kept on it as `_nerve_plan_cell`'s address).
pub(super) fn cell_for(_py: Python<'_>, cls: &Bound<'_, PyType>) -> PyResult<&'static PlanCell> {
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
pub(super) fn compile_group(py: Python<'_>, cls: &Bound<'_, PyType>) {
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

pub(super) fn compile_one(
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

pub(super) fn build_plan(
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
pub(super) fn plan_min(cls: &Bound<'_, PyType>) -> Result<usize, ()> {
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
