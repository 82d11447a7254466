//! The view class's methods: members read in place from the encoded bytes.

use super::*;

impl Gen<'_> {
    pub(super) fn view_methods(&self, w: &mut CodeWriter, s: &Struct) {
        let name = &s.name.name;
        let v = format!("{name}_view");
        let plan = StructPlan::new(&self.input.layout, s);
        let (min, fixed) = (plan.min, plan.fixed);
        let offs = plan.const_offsets();
        let nmem = s.members.len();
        self.open_ns(w, &s.name);
        w.blank();
        w.lines(format!(
            "inline {v}::{v}(const void *buf, size_t len) : _nerve_p(0), _nerve_end(0)
{{
    const uint8_t *_b = static_cast<const uint8_t *>(buf);
    if (!_b || len < 8 || !nerve_lcm::at_least(len - 8, {min}u)) return;
    if (nerve_lcm::load<uint64_t>(_b) != 0x{:016x}ULL) return;
    _nerve_p = _b + 8;
    _nerve_end = _b + len;
}}

inline {v} {v}::_nerve_make(const uint8_t *_p, const uint8_t *_e)
{{
    {v} _v;
    if (!_p || !nerve_lcm::has(_p, _e, {min}u)) return _v;
    _v._nerve_p = _p;
    _v._nerve_end = _e;
    return _v;
}}

inline const uint8_t *{v}::_nerve_skip(const uint8_t *_p, const uint8_t *_e, unsigned _depth)
{{
    return _nerve_walk(_p, _e, {nmem}u, _depth);
}}
",
            s.fingerprint
        ));
        // The walk.
        w.line(format!(
            "inline const uint8_t *{v}::_nerve_walk(const uint8_t *_p, const uint8_t *_e, unsigned _idx, unsigned _depth)"
        ));
        w.block("{", "}", |w| {
            w.line(format!("if (!_p || !nerve_lcm::has(_p, _e, {min}u)) return 0;"));
            if let Some(size) = fixed {
                w.line("(void)_depth;");
                w.line("(void)_idx;");
                // Every member has a constant offset.
                for (k, o) in offs.iter().enumerate() {
                    w.line(format!("if (_idx == {k}u) return _p + {};", o.unwrap_or(0)));
                }
                w.line(format!("return _p + {size};"));
                return;
            }
            w.line("if (_depth > NERVE_LCM_MAX_DEPTH) return 0;");
            // Count members: locals.
            let counts: BTreeSet<&str> = s
                .members
                .iter()
                .flat_map(|m| m.dims.iter())
                .filter_map(|d| match d {
                    Dim::Variable { member } => Some(member.as_str()),
                    _ => None,
                })
                .collect();
            let v0 = offs.iter().rposition(|o| o.is_some()).unwrap_or(0);
            for (k, m) in s.members.iter().enumerate() {
                if counts.contains(m.name.as_str()) {
                    let t = prim_type(m.ty.primitive().expect("counts are integers"));
                    if k < v0 {
                        w.line(format!(
                            "const int64_t _c_{} = nerve_lcm::load<{t}>(_p + {});",
                            m.name,
                            offs[k].unwrap_or(0)
                        ));
                    } else {
                        w.line(format!("int64_t _c_{} = 0;", m.name));
                    }
                }
            }
            w.line(format!("_p += {};", offs[v0].unwrap_or(0)));
            for (k, m) in s.members.iter().enumerate().skip(v0) {
                w.line(format!("if (_idx == {k}u) return _p;"));
                w.line(format!("// {}", m.name));
                match self.input.layout.member_fixed_size(m) {
                    Some(sz) => {
                        w.line(format!("if (!nerve_lcm::has(_p, _e, {sz}u)) return 0;"));
                        if counts.contains(m.name.as_str()) {
                            let t = prim_type(m.ty.primitive().expect("counts are integers"));
                            w.line(format!("_c_{} = nerve_lcm::load<{t}>(_p);", m.name));
                        }
                        w.line(format!("_p += {sz};"));
                    }
                    None => {
                        let e = self.view_elem(&m.ty);
                        if m.dims.is_empty() {
                            w.line(format!("_p = {e}::_nerve_skip(_p, _e, _depth + 1);"));
                        } else {
                            w.line("{");
                            w.indent();
                            w.line("uint64_t _t = 1;");
                            for d in &m.dims {
                                match d {
                                    Dim::Fixed { len, .. } => {
                                        w.line(format!("_t = nerve_lcm::sat_mul(_t, {len}u);"));
                                    }
                                    Dim::Variable { member } => {
                                        w.line(format!("if (!nerve_lcm::count_ok(_c_{member})) return 0;"));
                                        w.line(format!(
                                            "_t = nerve_lcm::sat_mul(_t, static_cast<uint64_t>(_c_{member}));"
                                        ));
                                    }
                                }
                            }
                            w.line(format!("_p = nerve_lcm::skip_n<{e} >(_p, _e, _t, _depth + 1);"));
                            w.dedent();
                            w.line("}");
                        }
                        w.line("if (!_p) return 0;");
                    }
                }
            }
            w.line("return _p;");
        });
        w.blank();
        // Accessors.
        for (k, m) in s.members.iter().enumerate() {
            let ret = self.view_result(m);
            w.line(format!("inline {ret} {v}::{}() const", view_accessor(&m.name)));
            w.block("{", "}", |w| {
                match offs[k] {
                    Some(o) => w.line(format!("const uint8_t *_s = _nerve_p ? _nerve_p + {o} : 0;")),
                    None => w.line(format!("const uint8_t *_s = _nerve_walk(_nerve_p, _nerve_end, {k}u, 0);")),
                };
                let e = self.view_elem(&m.ty);
                if m.dims.is_empty() {
                    w.line(format!("return {e}::_nerve_make(_s, _nerve_end);"));
                    return;
                }
                w.line(format!("if (!_s) return {ret}();"));
                let mut items = Vec::new();
                for d in &m.dims {
                    match d {
                        Dim::Fixed { len, .. } => items.push(format!("{len}")),
                        Dim::Variable { member } => {
                            let cm = s.member(member).expect("checked dimension member");
                            let ci = s.members.iter().position(|x| x.name == *member).unwrap_or(0);
                            let t = prim_type(cm.ty.primitive().expect("counts are integers"));
                            match offs[ci] {
                                Some(o) => items.push(format!("nerve_lcm::load<{t}>(_nerve_p + {o})")),
                                None => {
                                    w.line(format!(
                                        "const nerve_lcm::maybe<{t}> _c_{member} = {}();",
                                        view_accessor(member)
                                    ));
                                    w.line(format!("if (!_c_{member}.ok()) return {ret}();"));
                                    items.push(format!("_c_{member}.value()"));
                                }
                            }
                        }
                    }
                }
                w.line(format!("const int64_t _d[{}] = {{ {} }};", m.dims.len(), items.join(", ")));
                w.line(format!("return {ret}::_nerve_make(_s, _nerve_end, _d);"));
            });
            w.blank();
        }
        self.close_ns(w, &s.name);
    }
}
