//! Decoding: a struct's `_decode_one`, walking the bytes with an offset and checking every count and string
//! against the bytes left before it allocates.

use super::*;

impl Gen<'_> {
    pub(super) fn emit_decode(&self, st: &Struct, w: &mut CodeWriter, md: &mut Module) {
        let full = py_str(&st.name.full());
        // lcm-gen's decoder gives a list of bools for a boolean array (a tuple for numbers); with numpy, a tuple
        let as_list = |p: Primitive| !self.numpy && p == Primitive::Boolean;
        let cls = &st.name.name;
        w.line(format!("o = _nv_new({cls})"));
        if st.members.is_empty() {
            w.line("return o, off");
            return;
        }
        w.line("ln = len(data)");
        w.line("try:");
        w.indent();
        // A run: scalars and tuples (small fixed arrays), read with one `unpack_from`; a tuple is a slice of it.
        let mut run: Vec<(&Member, Primitive, Option<usize>)> = Vec::new();
        let flush = |run: &mut Vec<(&Member, Primitive, Option<usize>)>, w: &mut CodeWriter, md: &mut Module| {
            if run.is_empty() {
                return;
            }
            let mut fmt = String::from(">");
            let mut size = 0;
            for (_, p, len) in run.iter() {
                if let Some(n) = len {
                    let _ = write!(fmt, "{n}");
                }
                fmt.push(prim_codes(*p).0);
                size += p.wire_size().unwrap_or(0) * len.unwrap_or(1);
            }
            let s = md.fmt(&fmt);
            match &run[..] {
                [(m, p, Some(_))] if as_list(*p) => {
                    w.line(format!("o.{} = list({s}.unpack_from(data, off))", m.name));
                }
                [(m, _, Some(_))] => {
                    w.line(format!("o.{} = {s}.unpack_from(data, off)", m.name));
                }
                _ if run.iter().all(|(_, _, len)| len.is_none()) => {
                    let targets: Vec<String> = run.iter().map(|(m, _, _)| format!("o.{}", m.name)).collect();
                    w.line(format!("{}, = {s}.unpack_from(data, off)", targets.join(", ")));
                }
                _ => {
                    w.line(format!("t = {s}.unpack_from(data, off)"));
                    let mut i = 0;
                    for (m, p, len) in run.iter() {
                        match len {
                            Some(n) if as_list(*p) => {
                                w.line(format!("o.{} = list(t[{i}:{}])", m.name, i + n));
                                i += n;
                            }
                            Some(n) => {
                                w.line(format!("o.{} = t[{i}:{}]", m.name, i + n));
                                i += n;
                            }
                            None => {
                                w.line(format!("o.{} = t[{i}]", m.name));
                                i += 1;
                            }
                        }
                    }
                }
            }
            w.line(format!("off += {size}"));
            run.clear();
        };
        for m in &st.members {
            let what = py_str(&m.name);
            match self.kind(m) {
                Kind::Scalar(p) => run.push((m, p, None)),
                Kind::Tuple(p, n) => run.push((m, p, Some(n))),
                Kind::String => {
                    flush(&mut run, w, md);
                    emit_decode_string(w, &format!("o.{}", m.name), &full);
                }
                Kind::Nested => {
                    flush(&mut run, w, md);
                    let c = md.class(type_name(&m.ty));
                    let depth = self.nested_depth_arg(st, &m.ty);
                    w.line(format!("o.{}, off = {c}._nerve_dec(data, off{depth})", m.name));
                }
                Kind::PrimArray(p) => {
                    flush(&mut run, w, md);
                    self.emit_counts(m, w, &full, &what);
                    let fixed: usize = m.dims.iter().filter(|d| d.is_fixed()).map(fixed_len).product();
                    let size = p.wire_size().unwrap_or(1) * fixed;
                    let count = count_expr(m, fixed);
                    let var = m.dims.iter().any(|d| !d.is_fixed());
                    let end = if var {
                        format!("off + {count} * {}", p.wire_size().unwrap_or(1))
                    } else {
                        format!("off + {size}")
                    };
                    w.line(format!("e = {end}"));
                    w.line("if e > ln:");
                    w.indent().line(format!("raise _rt.truncated(data, off, {full})")).dedent();
                    if !self.numpy {
                        Self::emit_rows_bound(m, w, &full, &what);
                        emit_decode_prim_lists(m, p, w);
                        w.line("off = e");
                        continue;
                    }
                    let shape: Vec<String> = (0..m.dims.len()).map(|i| format!("c{i}")).collect();
                    let shape = format!("({},)", shape.join(", "));
                    let value = match p {
                        Primitive::Byte if m.dims.len() == 1 => "data[off:e]".to_owned(),
                        Primitive::Boolean if m.dims.len() == 1 => {
                            format!("_nv_frombuffer(data, _nv_u1, {count}, off) != 0")
                        }
                        Primitive::Boolean => {
                            format!("_nv_ndarray({shape}, _nv_u1, data, off) != 0")
                        }
                        _ if m.dims.len() == 1 => {
                            format!("_nv_frombuffer(data, {}, {count}, off)", dtype_var(p))
                        }
                        _ => format!("_nv_ndarray({shape}, {}, data, off)", dtype_var(p)),
                    };
                    w.line(format!("o.{} = {value}", m.name));
                    w.line("off = e");
                }
                Kind::ObjArray => {
                    flush(&mut run, w, md);
                    self.emit_decode_obj_array(m, w, md, &full, &what, self.nested_depth_arg(st, &m.ty));
                }
            }
        }
        flush(&mut run, w, md);
        w.dedent();
        w.line("except _struct.error:");
        w.indent().line(format!("raise _rt.truncated(data, off, {full}) from None")).dedent();
        w.line("except UnicodeDecodeError as ex:");
        w.indent().line(format!("raise _rt.bad_utf8(ex, off, {full}) from None")).dedent();
        w.line("return o, off");
    }

    /// Writes `c0 = ...; c1 = ...` for every dimension, checking variable ones are not negative.
    pub(super) fn emit_counts(&self, m: &Member, w: &mut CodeWriter, full: &str, what: &str) {
        for (i, d) in m.dims.iter().enumerate() {
            w.line(format!("c{i} = {}", Self::dim_expr(d, "o")));
            if !d.is_fixed() {
                w.line(format!("if c{i} < 0:"));
                w.indent().line(format!("raise _rt.bad_count({what}, c{i}, off, {full})")).dedent();
            }
        }
    }

    /// Bounds the rows of a multi-dimensional array with a variable dimension: each row is a list even when it
    /// encodes to nothing (`a[size_a][size_b]` with `size_b` 0), so a count checked only against the bytes of its
    /// elements could make millions of empty lists from a few bytes. At each outer level there may be at most
    /// [`ZERO_SIZE_SLACK`] more rows than bytes left (nerve-codec's `ensure_dims` rule; the C runtime's too).
    pub(super) fn emit_rows_bound(m: &Member, w: &mut CodeWriter, full: &str, what: &str) {
        let n = m.dims.len();
        if n < 2 || m.dims.iter().all(|d| d.is_fixed()) {
            return;
        }
        let prefixes: Vec<String> =
            (1..n).map(|k| (0..k).map(|i| format!("c{i}")).collect::<Vec<_>>().join(" * ")).collect();
        // One test per level, so the error names the count that is too many.
        for rows in &prefixes {
            w.line(format!("if {rows} > ln - off + {ZERO_SIZE_SLACK}:"));
            w.indent().line(format!("raise _rt.too_many({what}, {rows}, 0, data, off, {full})")).dedent();
        }
    }

    pub(super) fn emit_decode_obj_array(
        &self,
        m: &Member,
        w: &mut CodeWriter,
        md: &mut Module,
        full: &str,
        what: &str,
        depth: &str,
    ) {
        self.emit_counts(m, w, full, what);
        Self::emit_rows_bound(m, w, full, what);
        let n = m.dims.len();
        let fixed: usize = m.dims.iter().filter(|d| d.is_fixed()).map(fixed_len).product();
        let count = count_expr(m, fixed);
        let var = m.dims.iter().any(|d| !d.is_fixed());
        // The fast path: a 1-D array of a fixed-size struct stays packed.
        if let (1, MemberType::Struct(sn)) = (n, &m.ty) {
            if self.records_ok(sn) {
                let size = self.input.layout.fixed_size(sn).unwrap_or(1);
                let c = md.class(sn);
                w.line(format!("e = off + c0 * {size}"));
                w.line("if e > ln:");
                w.indent().line(format!("raise _rt.too_many({what}, c0, {size}, data, off, {full})")).dedent();
                w.line(format!("o.{} = _rt.StructArray._packed({c}, data, off, c0)", m.name));
                w.line("off = e");
                return;
            }
        }
        let min = self.min_elem(&m.ty);
        if var {
            if min == 0 {
                w.line(format!("if {count} > ln - off + {ZERO_SIZE_SLACK}:"));
            } else {
                w.line(format!("if {count} * {min} > ln - off:"));
            }
            w.indent().line(format!("raise _rt.too_many({what}, {count}, {min}, data, off, {full})")).dedent();
        }
        let elem_class = match &m.ty {
            MemberType::Primitive(_) => None,
            t => Some(md.class(type_name(t))),
        };
        for i in 0..n {
            w.line(format!("a{i} = []"));
            w.line(format!("for _ in range(c{i}):"));
            w.indent();
        }
        match &elem_class {
            None => emit_decode_string(w, "v", full),
            Some(c) => {
                w.line(format!("v, off = {c}._nerve_dec(data, off{depth})"));
            }
        }
        w.line(format!("a{}.append(v)", n - 1));
        for i in (0..n).rev() {
            w.dedent();
            if i > 0 {
                w.line(format!("a{}.append(a{i})", i - 1));
            }
        }
        w.line(format!("o.{} = a0", m.name));
    }
}

/// Decodes a primitive array member as lcm-gen's decoder gives it, the bytes already checked to end at `e`: lists
/// for the outer dimensions, the innermost one a tuple of numbers, a list of bools or bytes (`off` is left at the
/// start; the caller moves it to `e`).
pub(super) fn emit_decode_prim_lists(m: &Member, p: Primitive, w: &mut CodeWriter) {
    let n = m.dims.len();
    let last = n - 1;
    let size = p.wire_size().unwrap_or(1);
    let inner = match p {
        Primitive::Byte => format!("data[p:p + c{last}]"),
        Primitive::Boolean => format!("list(_nv_unpack_from(\">%d?\" % c{last}, data, p))"),
        _ => format!("_nv_unpack_from(\">%d{}\" % c{last}, data, p)", prim_codes(p).0),
    };
    if n == 1 {
        w.line("p = off");
        w.line(format!("o.{} = {inner}", m.name));
        return;
    }
    w.line("p = off");
    for i in 0..last {
        w.line(format!("a{i} = []"));
        w.line(format!("for _ in range(c{i}):"));
        w.indent();
    }
    w.line(format!("a{}.append({inner})", last - 1));
    w.line(format!("p += c{last} * {size}"));
    for i in (0..last).rev() {
        w.dedent();
        if i > 0 {
            w.line(format!("a{}.append(a{i})", i - 1));
        }
    }
    w.line(format!("o.{} = a0", m.name));
}

/// Decodes one string at `off` into `target` (an assignable expression), advancing `off`.
pub(super) fn emit_decode_string(w: &mut CodeWriter, target: &str, full: &str) {
    w.line("k, = _nv_unpack_I(data, off)");
    w.line("e = off + 4 + k");
    w.line("if k == 0 or e > ln or data[e - 1]:");
    w.indent().line(format!("raise _rt.bad_string(data, off, k, {full})")).dedent();
    w.line(format!("{target} = data[off + 4:e - 1].decode(\"utf-8\")"));
    w.line("off = e");
}
