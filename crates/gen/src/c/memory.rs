//! Freeing and copying what a decoded value owns.

use super::*;

impl Gen<'_> {
    // ---- cleanup

    pub(super) fn cleanup_member(&self, w: &mut CodeWriter, m: &Member) {
        let e = self.elem(&m.ty);
        let free_elems = |w: &mut CodeWriter, ptr: &str, n: &str| match &e {
            Elem::Str => {
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n}, i_;"));
                    w.line(format!("char **a_ = {ptr};"));
                    w.line("for (i_ = 0; i_ < n_; i_++) {");
                    w.line("    free(a_[i_]);");
                    w.line("    a_[i_] = NULL;");
                    w.line("}");
                });
            }
            Elem::Var { cname } => {
                w.line(format!("__{cname}_decode_array_cleanup({ptr}, (int) ({n}));"));
            }
            _ => {}
        };
        if m.all_dims_fixed() {
            if m.dims.is_empty() {
                match &e {
                    Elem::Str => {
                        w.line(format!("free(q->{});", m.name));
                        w.line(format!("q->{} = NULL;", m.name));
                    }
                    _ => free_elems(w, &format!("&q->{}", m.name), "(size_t) 1"),
                }
            } else {
                let ptr = format!("&q->{}{}", m.name, "[0]".repeat(m.dims.len()));
                free_elems(w, &ptr, &format!("(size_t) {}", plan::fixed_count(m)));
            }
            return;
        }
        self.cleanup_level(w, m, &e, &format!("q->{}", m.name), 0);
    }

    pub(super) fn cleanup_level(&self, w: &mut CodeWriter, m: &Member, e: &Elem, lv: &str, level: usize) {
        let k = m.dims.len();
        let n = Self::dim_count(&m.dims[level], "q");
        w.block(format!("if ({lv}) {{"), "}", |w| {
            if level + 1 == k {
                match e {
                    Elem::Str => {
                        w.line(format!("size_t n_ = {n}, i_;"));
                        w.line("for (i_ = 0; i_ < n_; i_++)");
                        w.line(format!("    free({lv}[i_]);"));
                    }
                    Elem::Var { cname } => {
                        w.line(format!("__{cname}_decode_array_cleanup({lv}, (int) ({n}));"));
                    }
                    _ => {}
                }
            } else {
                let i = format!("i{level}");
                w.line(format!("size_t {i}, n{level} = {n};"));
                w.block(format!("for ({i} = 0; {i} < n{level}; {i}++) {{"), "}", |w| {
                    self.cleanup_level(w, m, e, &format!("{lv}[{i}]"), level + 1);
                });
            }
            w.line(format!("free({lv});"));
            w.line(format!("{lv} = NULL;"));
        });
    }

    // ---- clone

    pub(super) fn clone_member(&self, w: &mut CodeWriter, m: &Member) {
        let e = self.elem(&m.ty);
        let copy_elems = |w: &mut CodeWriter, src: &str, dst: &str, n: &str| match &e {
            Elem::Prim { .. } | Elem::Fixed { .. } => {
                w.line(format!("if ({n} > 0)"));
                w.line(format!("    memcpy({dst}, {src}, sizeof(*{dst}) * {n});"));
            }
            Elem::Str => {
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n}, i_;"));
                    w.block("for (i_ = 0; i_ < n_; i_++) {", "}", |w| {
                        w.line(format!("r = nerve_lcm_clone_string(({src})[i_], &({dst})[i_]);"));
                        w.line("if (r)");
                        w.line("    goto fail;");
                    });
                });
            }
            Elem::Var { cname } => {
                w.line(format!("r = __{cname}_clone_array({src}, {dst}, (int) ({n}));"));
                w.line("if (r < 0)");
                w.line("    goto fail;");
            }
        };
        if m.all_dims_fixed() {
            let flat = "[0]".repeat(m.dims.len());
            let n = if m.dims.is_empty() { 1 } else { plan::fixed_count(m) };
            copy_elems(w, &format!("&s->{}{flat}", m.name), &format!("&d->{}{flat}", m.name), &format!("(size_t) {n}"));
            return;
        }
        self.clone_level(w, m, &e, &format!("s->{}", m.name), &format!("d->{}", m.name), 0, &copy_elems);
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn clone_level(
        &self,
        w: &mut CodeWriter,
        m: &Member,
        e: &Elem,
        src: &str,
        dst: &str,
        level: usize,
        copy_elems: &dyn Fn(&mut CodeWriter, &str, &str, &str),
    ) {
        let k = m.dims.len();
        let n = Self::dim_count(&m.dims[level], "s");
        let base = e.ptr_base();
        let stars = "*".repeat(k - level - 1);
        let zeroed = level + 1 < k || matches!(e, Elem::Str);
        w.block(format!("if ({src}) {{"), "}", |w| {
            w.line(format!("size_t n{level} = {n};"));
            if zeroed {
                w.line(format!("{dst} = ({base}{stars}*) nerve_lcm_calloc(n{level}, sizeof({base}{stars}));"));
            } else {
                w.line(format!("{dst} = ({base}{stars}*) nerve_lcm_malloc(sizeof({base}{stars}) * n{level});"));
            }
            w.line(format!("if (!{dst} && n{level} > 0) {{"));
            w.line("    r = NERVE_LCM_ENOMEM;");
            w.line("    goto fail;");
            w.line("}");
            if level + 1 == k {
                copy_elems(w, src, dst, &format!("n{level}"));
            } else {
                let i = format!("i{level}");
                w.line(format!("size_t {i};"));
                w.block(format!("for ({i} = 0; {i} < n{level}; {i}++) {{"), "}", |w| {
                    self.clone_level(w, m, e, &format!("{src}[{i}]"), &format!("{dst}[{i}]"), level + 1, copy_elems);
                });
            }
        });
    }
}
