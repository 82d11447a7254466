//! The message class's methods: encode, decode and the encoded size, a run of fixed-size members at a time.

use super::*;

impl Gen<'_> {
    pub(super) fn class_methods(&self, w: &mut CodeWriter, s: &Struct) {
        let name = &s.name.name;
        let fp = format!("0x{:016x}ULL", s.fingerprint);
        self.open_ns(w, &s.name);
        w.blank();
        w.lines(format!(
            "inline int {name}::encode(void *buf, int offset, int maxlen) const
{{
    if (!buf || offset < 0 || maxlen < 8) return -1;
    uint8_t *_start = static_cast<uint8_t *>(buf) + offset;
    uint8_t *_p = nerve_lcm::store<uint64_t>(_start, {fp});
    _p = _nerve_encode(_p, _start + maxlen);
    if (!_p) return -1;
    return static_cast<int>(_p - _start);
}}

inline int {name}::decode(const void *buf, int offset, int maxlen)
{{
    if (!buf || offset < 0 || maxlen < 8) return -1;
    const uint8_t *_start = static_cast<const uint8_t *>(buf) + offset;
    if (nerve_lcm::load<uint64_t>(_start) != {fp}) return -1;
    const uint8_t *_p = _nerve_decode(_start + 8, _start + maxlen, 0);
    if (!_p) return -1;
    return static_cast<int>(_p - _start);
}}

inline int {name}::getEncodedSize() const
{{
    return nerve_lcm::clamp_int(nerve_lcm::sat_add(8, _nerve_size()));
}}

inline int64_t {name}::getHash()
{{
    return static_cast<int64_t>({fp});
}}

inline const char *{name}::getTypeName()
{{
    return \"{name}\";
}}

inline int {name}::_encodeNoHash(void *buf, int offset, int maxlen) const
{{
    if (!buf || offset < 0 || maxlen < 0) return -1;
    uint8_t *_start = static_cast<uint8_t *>(buf) + offset;
    uint8_t *_p = _nerve_encode(_start, _start + maxlen);
    if (!_p) return -1;
    return static_cast<int>(_p - _start);
}}

inline int {name}::_getEncodedSizeNoHash() const
{{
    return nerve_lcm::clamp_int(_nerve_size());
}}

inline int {name}::_decodeNoHash(const void *buf, int offset, int maxlen)
{{
    if (!buf || offset < 0 || maxlen < 0) return -1;
    const uint8_t *_start = static_cast<const uint8_t *>(buf) + offset;
    const uint8_t *_p = _nerve_decode(_start, _start + maxlen, 0);
    if (!_p) return -1;
    return static_cast<int>(_p - _start);
}}
"
        ));
        // _computeHash
        let children: Vec<&TypeName> = s
            .members
            .iter()
            .filter_map(|m| match &m.ty {
                MemberType::Struct(n) | MemberType::Enum(n) => Some(n),
                _ => None,
            })
            .collect();
        w.line(format!("inline uint64_t {name}::_computeHash(const nerve_lcm::hash_ptr *p)"));
        w.block("{", "}", |w| {
            w.line("for (const nerve_lcm::hash_ptr *fp = p; fp; fp = fp->parent)");
            w.line(format!("    if (fp->v == {name}::getHash) return 0;"));
            if children.is_empty() {
                w.line(format!("uint64_t hash = 0x{:016x}ULL;", s.base_hash));
            } else {
                w.line(format!("const nerve_lcm::hash_ptr cp = {{ p, {name}::getHash }};"));
                w.line(format!("uint64_t hash = 0x{:016x}ULL", s.base_hash));
                for c in &children {
                    w.line(format!("    + {}::_computeHash(&cp)", self.qual(c)));
                }
                w.line("    ;");
            }
            w.line("return nerve_lcm::rotate_hash(hash);");
        });
        w.blank();

        if let Some(size) = self.is_fixed(&s.name) {
            self.fixed_methods(w, s, size);
        } else {
            self.variable_methods(w, s);
        }
        self.close_ns(w, &s.name);
    }

    pub(super) fn fixed_methods(&self, w: &mut CodeWriter, s: &Struct, size: usize) {
        let name = &s.name.name;
        w.line(format!("inline uint8_t *{name}::_nerve_encode_fixed(uint8_t *_p) const"));
        w.block("{", "}", |w| {
            for m in &s.members {
                self.fixed_member(w, m, true);
            }
            w.line("return _p;");
        });
        w.blank();
        w.line(format!("inline const uint8_t *{name}::_nerve_decode_fixed(const uint8_t *_p)"));
        w.block("{", "}", |w| {
            for m in &s.members {
                self.fixed_member(w, m, false);
            }
            w.line("return _p;");
        });
        w.blank();
        w.lines(format!(
            "inline uint8_t *{name}::_nerve_encode(uint8_t *_p, uint8_t *_e) const
{{
    if (!nerve_lcm::has(_p, _e, {size}u)) return 0;
    return _nerve_encode_fixed(_p);
}}

inline const uint8_t *{name}::_nerve_decode(const uint8_t *_p, const uint8_t *_e, unsigned)
{{
    if (!nerve_lcm::has(_p, _e, {size}u)) return 0;
    return _nerve_decode_fixed(_p);
}}

inline uint64_t {name}::_nerve_size() const
{{
    return {size}u;
}}
"
        ));
    }

    pub(super) fn variable_methods(&self, w: &mut CodeWriter, s: &Struct) {
        let name = &s.name.name;
        let plan = StructPlan::new(&self.input.layout, s);
        let segs = plan.segments(&s.members);
        w.line(format!("inline uint8_t *{name}::_nerve_encode(uint8_t *_p, uint8_t *_e) const"));
        w.block("{", "}", |w| {
            for seg in &segs {
                match seg {
                    Seg::Run(run, size) => {
                        w.line(format!("if (!nerve_lcm::has(_p, _e, {size}u)) return 0;"));
                        for m in *run {
                            self.fixed_member(w, m, true);
                        }
                    }
                    Seg::Var(m) => self.variable_encode(w, s, m),
                }
            }
            w.line("return _p;");
        });
        w.blank();
        w.line(format!(
            "inline const uint8_t *{name}::_nerve_decode(const uint8_t *_p, const uint8_t *_e, unsigned _depth)"
        ));
        w.block("{", "}", |w| {
            w.line("if (_depth > NERVE_LCM_MAX_DEPTH) return 0;");
            for seg in &segs {
                match seg {
                    Seg::Run(run, size) => {
                        w.line(format!("if (!nerve_lcm::has(_p, _e, {size}u)) return 0;"));
                        for m in *run {
                            self.fixed_member(w, m, false);
                        }
                    }
                    Seg::Var(m) => self.variable_decode(w, s, m),
                }
            }
            w.line("return _p;");
        });
        w.blank();
        w.line(format!("inline uint64_t {name}::_nerve_size() const"));
        w.block("{", "}", |w| {
            let fixed_total: usize = segs.iter().map(|seg| if let Seg::Run(_, size) = seg { *size } else { 0 }).sum();
            w.line(format!("uint64_t _n = {fixed_total}u;"));
            for seg in &segs {
                if let Seg::Var(m) = seg {
                    self.variable_size(w, s, m);
                }
            }
            w.line("return _n;");
        });
        w.blank();
    }

    /// Statements for a fixed-size member, the bounds already checked: stores when `encode`, else loads.
    pub(super) fn fixed_member(&self, w: &mut CodeWriter, m: &Member, encode: bool) {
        let lens: Vec<usize> = m.dims.iter().map(fixed_len).collect();
        let base = format!("this->{}", m.name);
        match &m.ty {
            MemberType::Primitive(p) => {
                let t = prim_type(*p);
                let sz = p.wire_size().expect("fixed members have no strings");
                if lens.is_empty() {
                    if encode {
                        w.line(format!("_p = nerve_lcm::store<{t}>(_p, {base});"));
                    } else {
                        w.line(format!("{base} = nerve_lcm::load<{t}>(_p);"));
                        w.line(format!("_p += {sz};"));
                    }
                    return;
                }
                let (outer, inner) = lens.split_at(lens.len() - 1);
                let inner = inner[0];
                let mut idx = String::new();
                for (k, len) in outer.iter().enumerate() {
                    w.line(format!("for (size_t _i{k} = 0; _i{k} < {len}u; ++_i{k}) {{"));
                    w.indent();
                    let _ = write!(idx, "[_i{k}]");
                }
                if encode {
                    w.line(format!("_p = nerve_lcm::store_n(_p, &{base}{idx}[0], {inner}u);"));
                } else {
                    w.line(format!("nerve_lcm::load_n(&{base}{idx}[0], _p, {inner}u);"));
                    w.line(format!("_p += {};", inner * sz));
                }
                for _ in outer {
                    w.dedent();
                    w.line("}");
                }
            }
            MemberType::Struct(_) | MemberType::Enum(_) => {
                let mut idx = String::new();
                for (k, len) in lens.iter().enumerate() {
                    w.line(format!("for (size_t _i{k} = 0; _i{k} < {len}u; ++_i{k}) {{"));
                    w.indent();
                    let _ = write!(idx, "[_i{k}]");
                }
                if encode {
                    w.line(format!("_p = {base}{idx}._nerve_encode_fixed(_p);"));
                } else {
                    w.line(format!("_p = {base}{idx}._nerve_decode_fixed(_p);"));
                }
                for _ in &lens {
                    w.dedent();
                    w.line("}");
                }
            }
        }
    }

    /// `uint64_t _d[N] = {...};` with checked counts; `on_negative` is the statement for a count out of range
    /// (None: treat it as 0).
    pub(super) fn dims_decl(&self, w: &mut CodeWriter, m: &Member, on_bad: Option<&str>) {
        let mut items = Vec::new();
        for d in &m.dims {
            match d {
                Dim::Fixed { len, .. } => items.push(format!("{len}u")),
                Dim::Variable { member } => {
                    if let Some(stmt) = on_bad {
                        w.line(format!("if (!nerve_lcm::count_ok(this->{member})) {stmt}"));
                        items.push(format!("static_cast<uint64_t>(this->{member})"));
                    } else {
                        items.push(format!("nerve_lcm::count_or_zero(this->{member})"));
                    }
                }
            }
        }
        w.line(format!("const uint64_t _d[{}] = {{ {} }};", m.dims.len(), items.join(", ")));
    }

    pub(super) fn variable_encode(&self, w: &mut CodeWriter, _s: &Struct, m: &Member) {
        let base = format!("this->{}", m.name);
        w.line(format!("// {}", m.name));
        let elem_stmt = |w: &mut CodeWriter, e: &str| match &m.ty {
            MemberType::Primitive(Primitive::String) => {
                w.line(format!("_p = nerve_lcm::put_string(_p, _e, {e});"));
                w.line("if (!_p) return 0;");
            }
            MemberType::Struct(n) if self.is_fixed(n).is_some() => {
                w.line(format!("_p = {e}._nerve_encode_fixed(_p);"));
            }
            MemberType::Enum(_) => {
                w.line(format!("_p = {e}._nerve_encode_fixed(_p);"));
            }
            _ => {
                w.line(format!("_p = {e}._nerve_encode(_p, _e);"));
                w.line("if (!_p) return 0;");
            }
        };
        if m.all_dims_fixed() {
            // C arrays (or a scalar) of variable-size elements.
            let mut idx = String::new();
            for (k, d) in m.dims.iter().enumerate() {
                w.line(format!("for (size_t _i{k} = 0; _i{k} < {}u; ++_i{k}) {{", fixed_len(d)));
                w.indent();
                let _ = write!(idx, "[_i{k}]");
            }
            elem_stmt(w, &format!("{base}{idx}"));
            for _ in &m.dims {
                w.dedent();
                w.line("}");
            }
            return;
        }
        w.line("{");
        w.indent();
        for d in &m.dims {
            if let Dim::Variable { member } = d {
                w.line(format!("if (this->{member} < 0) return 0;"));
            }
        }
        self.dims_decl(w, m, None);
        let rank = m.dims.len();
        let elem_fixed = self.elem_fixed(&m.ty);
        if let Some(sz) = elem_fixed {
            w.line("uint64_t _t = 1;");
            w.line(format!("for (unsigned _k = 0; _k < {rank}u; ++_k) _t = nerve_lcm::sat_mul(_t, _d[_k]);"));
            w.line(format!("if (!nerve_lcm::fits(_t, {sz}u, static_cast<size_t>(_e - _p))) return 0;"));
        }
        let mut expr = base.clone();
        for k in 0..rank {
            let v = format!("_v{k}");
            w.line(format!("const {} &{v} = {expr};", self.vec_type(&m.ty, rank - k)));
            w.line(format!("if ({v}.size() < _d[{k}]) return 0;"));
            if k + 1 == rank {
                match &m.ty {
                    MemberType::Primitive(p) if *p != Primitive::String => {
                        w.line(format!("_p = nerve_lcm::store_n(_p, {v}.data(), static_cast<size_t>(_d[{k}]));"));
                    }
                    _ => {
                        // Locals, so that stores through the byte pointer cannot make the compiler reload them.
                        w.line(format!("const {} *_a{k} = {v}.data();", self.elem_type(&m.ty)));
                        w.line(format!("const size_t _n{k} = static_cast<size_t>(_d[{k}]);"));
                        w.line(format!("for (size_t _i{k} = 0; _i{k} < _n{k}; ++_i{k}) {{"));
                        w.indent();
                        elem_stmt(w, &format!("_a{k}[_i{k}]"));
                        w.dedent();
                        w.line("}");
                    }
                }
            } else {
                w.line(format!("for (size_t _i{k} = 0; _i{k} < _d[{k}]; ++_i{k}) {{"));
                w.indent();
            }
            expr = format!("{v}[_i{k}]");
        }
        for _ in 0..rank - 1 {
            w.dedent();
            w.line("}");
        }
        w.dedent();
        w.line("}");
    }

    pub(super) fn vec_type(&self, ty: &MemberType, levels: usize) -> String {
        let mut t = format!(" {} ", self.elem_type(ty));
        for _ in 0..levels {
            t = format!("std::vector<{t}>");
        }
        t.trim().to_owned()
    }

    pub(super) fn variable_decode(&self, w: &mut CodeWriter, _s: &Struct, m: &Member) {
        let base = format!("this->{}", m.name);
        w.line(format!("// {}", m.name));
        let elem_stmt = |w: &mut CodeWriter, e: &str| match &m.ty {
            MemberType::Primitive(Primitive::String) => {
                w.line(format!("_p = nerve_lcm::get_string({e}, _p, _e);"));
                w.line("if (!_p) return 0;");
            }
            MemberType::Struct(n) if self.is_fixed(n).is_some() => {
                w.line(format!("_p = {e}._nerve_decode_fixed(_p);"));
            }
            MemberType::Enum(_) => {
                w.line(format!("_p = {e}._nerve_decode_fixed(_p);"));
            }
            _ => {
                w.line(format!("_p = {e}._nerve_decode(_p, _e, _depth + 1);"));
                w.line("if (!_p) return 0;");
            }
        };
        if m.all_dims_fixed() {
            let mut idx = String::new();
            for (k, d) in m.dims.iter().enumerate() {
                w.line(format!("for (size_t _i{k} = 0; _i{k} < {}u; ++_i{k}) {{", fixed_len(d)));
                w.indent();
                let _ = write!(idx, "[_i{k}]");
            }
            elem_stmt(w, &format!("{base}{idx}"));
            for _ in &m.dims {
                w.dedent();
                w.line("}");
            }
            return;
        }
        w.line("{");
        w.indent();
        self.dims_decl(w, m, Some("return 0;"));
        let rank = m.dims.len();
        let elem_min = self.elem_min(&m.ty);
        w.line(format!(
            "if (!nerve_lcm::check_dims(_d, {rank}u, {elem_min}u, static_cast<size_t>(_e - _p))) return 0;"
        ));
        let mut expr = base.clone();
        for k in 0..rank {
            let v = format!("_v{k}");
            w.line(format!("{} &{v} = {expr};", self.vec_type(&m.ty, rank - k)));
            w.line(format!("{v}.resize(static_cast<size_t>(_d[{k}]));"));
            if k + 1 == rank {
                match &m.ty {
                    MemberType::Primitive(p) if *p != Primitive::String => {
                        let sz = p.wire_size().unwrap_or(1);
                        w.line(format!("nerve_lcm::load_n({v}.data(), _p, static_cast<size_t>(_d[{k}]));"));
                        w.line(format!("_p += static_cast<size_t>(_d[{k}]) * {sz}u;"));
                    }
                    _ => {
                        // Locals: the compiler need not reload them in the loop.
                        w.line(format!("{} *_a{k} = {v}.data();", self.elem_type(&m.ty)));
                        w.line(format!("const size_t _n{k} = static_cast<size_t>(_d[{k}]);"));
                        w.line(format!("for (size_t _i{k} = 0; _i{k} < _n{k}; ++_i{k}) {{"));
                        w.indent();
                        elem_stmt(w, &format!("_a{k}[_i{k}]"));
                        w.dedent();
                        w.line("}");
                    }
                }
            } else {
                w.line(format!("for (size_t _i{k} = 0; _i{k} < _d[{k}]; ++_i{k}) {{"));
                w.indent();
            }
            expr = format!("{v}[_i{k}]");
        }
        for _ in 0..rank - 1 {
            w.dedent();
            w.line("}");
        }
        w.dedent();
        w.line("}");
    }

    pub(super) fn variable_size(&self, w: &mut CodeWriter, _s: &Struct, m: &Member) {
        let base = format!("this->{}", m.name);
        let elem_fixed = self.elem_fixed(&m.ty);
        let elem_expr = |e: &str| match &m.ty {
            MemberType::Primitive(Primitive::String) => format!("nerve_lcm::string_size({e})"),
            _ => format!("{e}._nerve_size()"),
        };
        if m.all_dims_fixed() {
            let mut idx = String::new();
            for (k, d) in m.dims.iter().enumerate() {
                w.line(format!("for (size_t _i{k} = 0; _i{k} < {}u; ++_i{k}) {{", fixed_len(d)));
                w.indent();
                let _ = write!(idx, "[_i{k}]");
            }
            w.line(format!("_n = nerve_lcm::sat_add(_n, {});", elem_expr(&format!("{base}{idx}"))));
            for _ in &m.dims {
                w.dedent();
                w.line("}");
            }
            return;
        }
        w.line("{");
        w.indent();
        self.dims_decl(w, m, None);
        let rank = m.dims.len();
        if let Some(sz) = elem_fixed {
            w.line("uint64_t _t = 1;");
            w.line(format!("for (unsigned _k = 0; _k < {rank}u; ++_k) _t = nerve_lcm::sat_mul(_t, _d[_k]);"));
            w.line(format!("_n = nerve_lcm::sat_add(_n, nerve_lcm::sat_mul(_t, {sz}u));"));
        } else {
            let mut expr = base.clone();
            for k in 0..rank {
                let v = format!("_v{k}");
                w.line(format!("const {} &{v} = {expr};", self.vec_type(&m.ty, rank - k)));
                w.line(format!("for (size_t _i{k} = 0; _i{k} < _d[{k}] && _i{k} < {v}.size(); ++_i{k}) {{"));
                w.indent();
                expr = format!("{v}[_i{k}]");
            }
            w.line(format!("_n = nerve_lcm::sat_add(_n, {});", elem_expr(&expr)));
            for _ in 0..rank {
                w.dedent();
                w.line("}");
            }
        }
        w.dedent();
        w.line("}");
    }
}
