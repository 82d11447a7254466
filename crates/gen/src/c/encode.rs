//! Encoding and the encoded size.

use super::*;

impl Gen<'_> {
    pub(super) fn encode_run(&self, w: &mut CodeWriter, run: &[&Member]) {
        let first = run[0];
        if let Some(total) = self.input.layout.member_fixed_size(first) {
            let total: usize =
                total + run[1..].iter().map(|m| self.input.layout.member_fixed_size(m).unwrap_or(0)).sum::<usize>();
            if total == 0 {
                return;
            }
            w.line(format!("if (rem - pos < {total})"));
            w.line("    return NERVE_LCM_ENOSPACE;");
            let mut off = 0;
            for m in run {
                off += self.raw_member_at(w, m, off, true);
            }
            w.line(format!("pos += {total};"));
            return;
        }
        let m = first;
        let e = self.elem(&m.ty);
        if m.all_dims_fixed() {
            let (ptr, n) = if m.dims.is_empty() {
                (format!("&q->{}", m.name), 1)
            } else {
                (format!("&q->{}{}", m.name, "[0]".repeat(m.dims.len())), plan::fixed_count(m))
            };
            self.encode_elems(w, &e, &ptr, &format!("(size_t) {n}"));
            return;
        }
        // A variable array: counts must not be negative (the decoder would reject the message).
        w.block("{", "}", |w| {
            for d in &m.dims {
                if let Dim::Variable { member } = d {
                    w.line(format!("if (q->{member} < 0)"));
                    w.line("    return NERVE_LCM_ELENGTH;");
                }
            }
            self.levels(w, m, &format!("q->{}", m.name), 0, &mut |w, ptr, n| self.encode_elems(w, &e, ptr, n), None);
        });
    }

    /// Encodes `n` elements starting at pointer expression `ptr`.
    pub(super) fn encode_elems(&self, w: &mut CodeWriter, e: &Elem, ptr: &str, n: &str) {
        match e {
            Elem::Prim { size, .. } => {
                let bound = if *size == 1 { "rem - pos".to_owned() } else { format!("(rem - pos) / {size}") };
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n};"));
                    w.line(format!("if (n_ > {bound})"));
                    w.line("    return NERVE_LCM_ENOSPACE;");
                    w.line(format!("nerve_lcm_put_{}(b + pos, {ptr}, n_);", array_helper(*size)));
                    w.line(format!("pos += n_ * {size};"));
                });
            }
            Elem::Fixed { cname, size } => {
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n}, i_;"));
                    w.line(format!("const {cname} *a_ = {ptr};"));
                    if *size > 0 {
                        w.line(format!("if (n_ > (rem - pos) / {size})"));
                        w.line("    return NERVE_LCM_ENOSPACE;");
                        w.line(format!("for (i_ = __{cname}_encode_shuffled(b + pos, a_, n_); i_ < n_; i_++)"));
                        w.line(format!("    __{cname}_encode_raw(b + pos + i_ * {size}, &a_[i_]);"));
                        w.line(format!("pos += n_ * {size};"));
                    } else {
                        w.line("(void) a_;");
                        w.line("(void) n_;");
                        w.line("(void) i_;");
                    }
                });
            }
            Elem::Str => {
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n}, i_;"));
                    w.line(format!("char *const *a_ = {ptr};"));
                    w.block("for (i_ = 0; i_ < n_; i_++) {", "}", |w| {
                        w.line("r = nerve_lcm_put_string(b, rem, &pos, a_[i_]);");
                        w.line("if (r)");
                        w.line("    return r;");
                    });
                });
            }
            Elem::Var { cname } => {
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n};"));
                    w.line("if (n_ > 0x7fffffff)");
                    w.line("    return NERVE_LCM_ELENGTH;");
                    w.line(format!(
                        "r = __{cname}_encode_array(buf, offset + (int) pos, (int) (rem - pos), {ptr}, (int) n_);"
                    ));
                    w.line("if (r < 0)");
                    w.line("    return r;");
                    w.line("pos += (size_t) r;");
                });
            }
        }
    }

    /// Raw access at `b + pos + off` for a member of a fixed-size run.
    pub(super) fn raw_member_at(&self, w: &mut CodeWriter, m: &Member, off: usize, encode: bool) -> usize {
        let base = "b + pos";
        self.raw_member(w, m, base, off, encode)
    }

    /// Walks the pointer levels of a member with a variable dimension. `inner` writes the work on the innermost
    /// level (pointer expression, element count); `alloc` (decode and clone) allocates each level first.
    #[allow(clippy::type_complexity)]
    pub(super) fn levels(
        &self,
        w: &mut CodeWriter,
        m: &Member,
        lvalue: &str,
        level: usize,
        inner: &mut dyn FnMut(&mut CodeWriter, &str, &str),
        alloc: Option<&dyn Fn(&mut CodeWriter, &str, &str, usize)>,
    ) {
        let k = m.dims.len();
        let n = Self::dim_count(&m.dims[level], "q");
        if let Some(a) = alloc {
            a(w, lvalue, &n, level);
        }
        if level + 1 == k {
            inner(w, lvalue, &n);
            return;
        }
        let i = format!("i{level}");
        w.block("{", "}", |w| {
            w.line(format!("size_t {i}, n{level} = {n};"));
            w.block(format!("for ({i} = 0; {i} < n{level}; {i}++) {{"), "}", |w| {
                self.levels(w, m, &format!("{lvalue}[{i}]"), level + 1, inner, alloc);
            });
        });
    }

    // ---- encoded size

    pub(super) fn size_run(&self, w: &mut CodeWriter, run: &[&Member]) {
        let first = run[0];
        if let Some(total) = self.input.layout.member_fixed_size(first) {
            let total: usize =
                total + run[1..].iter().map(|m| self.input.layout.member_fixed_size(m).unwrap_or(0)).sum::<usize>();
            if total > 0 {
                w.line(format!("size += {total};"));
            }
            return;
        }
        let m = first;
        let e = self.elem(&m.ty);
        let size_elems = |w: &mut CodeWriter, ptr: &str, n: &str| match &e {
            Elem::Prim { size, .. } | Elem::Fixed { size, .. } => {
                if *size > 0 {
                    w.line(format!("size += {size} * {n};"));
                }
            }
            Elem::Str => {
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n}, i_;"));
                    w.line(format!("char *const *a_ = {ptr};"));
                    w.line("for (i_ = 0; i_ < n_; i_++)");
                    w.line("    size += nerve_lcm_string_size(a_[i_]);");
                });
            }
            Elem::Var { cname } => {
                w.line(format!("size += (size_t) __{cname}_encoded_array_size({ptr}, (int) ({n}));"));
            }
        };
        if m.all_dims_fixed() {
            let (ptr, n) = if m.dims.is_empty() {
                (format!("&q->{}", m.name), 1)
            } else {
                (format!("&q->{}{}", m.name, "[0]".repeat(m.dims.len())), plan::fixed_count(m))
            };
            size_elems(w, &ptr, &format!("(size_t) {n}"));
            return;
        }
        let mut inner = |w: &mut CodeWriter, ptr: &str, n: &str| size_elems(w, ptr, n);
        if matches!(e, Elem::Prim { .. } | Elem::Fixed { .. }) {
            // No need to walk the pointers: the size is the product of the dimensions.
            let n: Vec<String> = m.dims.iter().map(|d| Self::dim_count(d, "q")).collect();
            inner(w, "NULL", &n.join(" * "));
            return;
        }
        w.block(format!("if (q->{}) {{", m.name), "}", |w| {
            self.levels(w, m, &format!("q->{}", m.name), 0, &mut inner, None);
        });
    }
}
