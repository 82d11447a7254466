//! Decoding into one block or part by part.

use super::*;

impl Gen<'_> {
    pub(super) fn decode_run(&self, w: &mut CodeWriter, run: &[&Member]) {
        let first = run[0];
        if let Some(total) = self.input.layout.member_fixed_size(first) {
            let total: usize =
                total + run[1..].iter().map(|m| self.input.layout.member_fixed_size(m).unwrap_or(0)).sum::<usize>();
            if total == 0 {
                return;
            }
            w.line(format!("if (rem - pos < {total}) {{"));
            w.line("    r = NERVE_LCM_ENOSPACE;");
            w.line("    goto fail;");
            w.line("}");
            let mut off = 0;
            for m in run {
                off += self.raw_member_at(w, m, off, false);
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
            self.decode_elems(w, &e, &ptr, &format!("(size_t) {n}"));
            return;
        }
        let min = self.input.layout.elem_min_size(&m.ty);
        let k = m.dims.len();
        w.block("{", "}", |w| {
            // Check every count against the bytes that remain before allocating anything.
            if k == 1 {
                let Dim::Variable { member } = &m.dims[0] else { unreachable!("a variable member has a variable dim") };
                w.line(format!("r = nerve_lcm_check_count((int64_t) q->{member}, {min}, rem - pos);"));
            } else {
                let dims: Vec<String> = m
                    .dims
                    .iter()
                    .map(|d| match d {
                        Dim::Fixed { len, .. } => format!("{len}"),
                        Dim::Variable { member } => format!("(int64_t) q->{member}"),
                    })
                    .collect();
                w.line(format!("int64_t dims_[{k}] = {{ {} }};", dims.join(", ")));
                w.line(format!("r = nerve_lcm_check_dims(dims_, {k}, {min}, rem - pos);"));
            }
            w.line("if (r)");
            w.line("    goto fail;");
            let base = e.ptr_base();
            let owns = e.owns();
            let alloc = |w: &mut CodeWriter, lv: &str, n: &str, level: usize| {
                let stars = "*".repeat(k - level - 1);
                let is_ptr_level = level + 1 < k;
                let f = if is_ptr_level || owns && matches!(e, Elem::Str) {
                    "nerve_lcm_alloc_zeroed"
                } else {
                    "nerve_lcm_alloc"
                };
                let args = if f == "nerve_lcm_alloc_zeroed" {
                    format!("arena, {n}, sizeof({base}{stars})")
                } else {
                    format!("arena, sizeof({base}{stars}) * {n}, 8")
                };
                w.line(format!("{lv} = ({base}{stars}*) {f}({args});"));
                w.line(format!("if (!{lv} && {n} > 0) {{"));
                w.line("    r = NERVE_LCM_ENOMEM;");
                w.line("    goto fail;");
                w.line("}");
            };
            self.levels(
                w,
                m,
                &format!("q->{}", m.name),
                0,
                &mut |w, ptr, n| self.decode_elems(w, &e, ptr, n),
                Some(&alloc),
            );
        });
    }

    /// Decodes `n` elements into the storage at pointer expression `ptr`.
    pub(super) fn decode_elems(&self, w: &mut CodeWriter, e: &Elem, ptr: &str, n: &str) {
        match e {
            Elem::Prim { size, .. } => {
                let bound = if *size == 1 { "rem - pos".to_owned() } else { format!("(rem - pos) / {size}") };
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n};"));
                    w.line(format!("if (n_ > {bound}) {{"));
                    w.line("    r = NERVE_LCM_ENOSPACE;");
                    w.line("    goto fail;");
                    w.line("}");
                    w.line(format!("nerve_lcm_get_{}(b + pos, {ptr}, n_);", array_helper(*size)));
                    w.line(format!("pos += n_ * {size};"));
                });
            }
            Elem::Fixed { cname, size } => {
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n}, i_;"));
                    w.line(format!("{cname} *a_ = {ptr};"));
                    if *size > 0 {
                        w.line(format!("if (n_ > (rem - pos) / {size}) {{"));
                        w.line("    r = NERVE_LCM_ENOSPACE;");
                        w.line("    goto fail;");
                        w.line("}");
                        w.line(format!(
                            "for (i_ = __{cname}_decode_shuffled(b + pos, rem - pos, a_, n_); i_ < n_; i_++)"
                        ));
                        w.line(format!("    __{cname}_decode_raw(b + pos + i_ * {size}, &a_[i_]);"));
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
                    w.line(format!("char **a_ = {ptr};"));
                    w.block("for (i_ = 0; i_ < n_; i_++) {", "}", |w| {
                        w.line("r = nerve_lcm_get_string_a(b, rem, &pos, &a_[i_], arena);");
                        w.line("if (r)");
                        w.line("    goto fail;");
                    });
                });
            }
            Elem::Var { cname } => {
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n};"));
                    w.line(format!(
                        "r = __{cname}_decode_array_a(buf, offset + (int) pos, (int) (rem - pos), {ptr}, (int) n_, arena);"
                    ));
                    w.line("if (r < 0)");
                    w.line("    goto fail;");
                    w.line("pos += (size_t) r;");
                    w.line("r = 0;");
                });
            }
        }
    }
}
