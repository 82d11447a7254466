//! Declarations: a struct's module (its class with `__slots__`, `__typenames__`, `__dimensions__`, constants and
//! `__init__`, the precompiled `struct.Struct`s its code uses) and an enum's module.

use super::*;

impl Gen<'_> {
    pub(super) fn struct_module(&self, st: &Struct) -> String {
        let mut md = Module::default();
        let cls = st.name.name.as_str();
        let full = st.name.full();
        let mut body = CodeWriter::new("    ");

        // --- class header
        body.line(format!("class {cls}(object):"));
        body.indent();
        if let Some(doc) = &st.doc {
            body.line("\"\"\"");
            body.lines(doc_text(doc));
            body.line("\"\"\"");
        }
        body.blank();
        let names: Vec<String> = st.members.iter().map(|m| py_str(&m.name)).collect();
        body.line(format!("__slots__ = [{}]", names.join(", ")));
        body.blank();
        let typenames: Vec<String> = st
            .members
            .iter()
            .map(|m| match &m.ty {
                MemberType::Primitive(p) => py_str(p.lcm_name()),
                MemberType::Struct(n) | MemberType::Enum(n) => py_str(&n.full()),
            })
            .collect();
        body.line(format!("__typenames__ = [{}]", typenames.join(", ")));
        body.blank();
        let dims: Vec<String> = st
            .members
            .iter()
            .map(|m| {
                if m.dims.is_empty() {
                    "None".to_owned()
                } else {
                    let d: Vec<String> = m
                        .dims
                        .iter()
                        .map(|d| match d {
                            Dim::Fixed { len, .. } => len.to_string(),
                            Dim::Variable { member } => py_str(member),
                        })
                        .collect();
                    format!("[{}]", d.join(", "))
                }
            })
            .collect();
        body.line(format!("__dimensions__ = [{}]", dims.join(", ")));
        body.blank();
        for c in &st.consts {
            body.doc("# ", c.doc.as_deref());
            body.line(format!("{} = {}", c.name, const_literal(c.ty, &c.text, c.value)));
        }
        if !st.consts.is_empty() {
            body.blank();
        }
        body.line(format!("_packed_fingerprint = {}", py_bytes(&st.fingerprint.to_be_bytes())));
        let fixed = self.input.layout.fixed_size(&st.name);
        body.line(format!("_nerve_size = {}", fixed.map_or("None".to_owned(), |s| s.to_string())));
        let records = self.records_ok(&st.name);
        if records {
            body.line(format!("_nerve_dtype = _np.dtype({})", self.dtype_desc(&st.name)));
        } else {
            body.line("_nerve_dtype = None");
        }
        body.line(format!("_nerve_numpy = {}", if self.numpy { "True" } else { "False" }));
        body.blank();

        // --- __init__
        body.line("def __init__(self, **members):");
        body.indent();
        for m in &st.members {
            body.doc("# ", m.doc.as_deref());
            let v = self.default_value(m, &mut md);
            body.line(format!("self.{} = {v}", m.name));
        }
        body.block("if members:", "", |w| {
            w.block("for k, v in members.items():", "", |w| {
                w.line("setattr(self, k, v)");
            });
        });
        body.dedent();

        // --- encode
        body.line("def encode(self):");
        body.indent();
        body.line(format!("parts = [{cls}._packed_fingerprint]"));
        body.line("try:");
        body.indent().line("self._nerve_enc(parts.append)").dedent();
        body.line("except _rt.EncodeError:");
        body.indent().line("raise").dedent();
        body.line("except _struct.error as e:");
        body.indent()
            .line(format!("raise _rt.EncodeError({}+ str(e)) from None", py_str(&format!("{full}: "))))
            .dedent();
        body.line("return b\"\".join(parts)");
        body.dedent().blank();

        body.line("def _encode_one(self, buf):");
        body.indent();
        body.line("parts = []");
        body.line("self._nerve_enc(parts.append)");
        body.line("buf.write(b\"\".join(parts))");
        body.dedent().blank();

        body.line("def _nerve_enc(self, ap):");
        body.indent();
        self.emit_encode(st, &mut body, &mut md);
        body.dedent().blank();

        // --- decode
        body.line("@staticmethod");
        body.line("def decode(data):");
        body.indent();
        body.line("if data.__class__ is not bytes:");
        body.indent().line("data = _rt.as_bytes(data)").dedent();
        body.line(format!("if data[:8] != {cls}._packed_fingerprint:"));
        body.indent()
            .line(format!("raise _rt.bad_fingerprint(data, 0x{:016x}, {})", st.fingerprint, py_str(&full)))
            .dedent();
        body.line("try:");
        body.indent().line(format!("return {cls}._nerve_dec(data, 8)[0]")).dedent();
        body.line("except RecursionError:");
        body.indent().line(format!("raise _rt.too_deep({}) from None", py_str(&full))).dedent();
        body.dedent().blank();

        body.line("@staticmethod");
        body.line("def _decode_one(buf):");
        body.indent().line(format!("return _rt.decode_one({cls}, buf)")).dedent().blank();

        body.line("@staticmethod");
        if self.recursive.contains(&st.name) {
            // The Rust decoder's limit, counted the same way (levels of recursive types), so that the outcome for
            // given bytes does not depend on how deep the caller's stack already is (as Python's recursion limit
            // would make it): the native codec hands what nests deeper than its own limit to this code.
            body.line("def _nerve_dec(data, off, depth=0):");
            body.indent();
            body.line(format!("if depth >= {MAX_DEPTH}:"));
            body.indent().line(format!("raise _rt.too_deep({})", py_str(&full))).dedent();
        } else {
            body.line("def _nerve_dec(data, off):");
            body.indent();
        }
        self.emit_decode(st, &mut body, &mut md);
        body.dedent().blank();

        if records {
            self.emit_from_records(st, &mut body, &mut md);
        }

        // --- hashes
        body.line("@staticmethod");
        body.line("def _get_hash_recursive(parents):");
        body.indent();
        body.line(format!("if {cls} in parents: return 0"));
        let nested: Vec<String> = st
            .members
            .iter()
            .filter_map(|m| match &m.ty {
                MemberType::Struct(n) | MemberType::Enum(n) => {
                    Some(format!(" + {}._get_hash_recursive(newparents)", md.class(n)))
                }
                MemberType::Primitive(_) => None,
            })
            .collect();
        if !nested.is_empty() {
            body.line(format!("newparents = parents + [{cls}]"));
        }
        body.line(format!("tmphash = (0x{:016x}{}) & 0xffffffffffffffff", st.base_hash, nested.join("")));
        body.line("tmphash = (((tmphash << 1) & 0xffffffffffffffff) + (tmphash >> 63)) & 0xffffffffffffffff");
        body.line("return tmphash");
        body.dedent().blank();
        body.line("@staticmethod");
        body.line("def _get_packed_fingerprint():");
        body.indent().line(format!("return {cls}._packed_fingerprint")).dedent().blank();
        body.line("def get_hash(self):");
        body.indent()
            .line("\"\"\"The LCM fingerprint of the type.\"\"\"")
            .line(format!("return 0x{:016x}", st.fingerprint));
        body.dedent();
        body.dedent();

        // --- assemble the module
        let mut w = CodeWriter::new("    ");
        w.line("\"\"\"LCM type definitions");
        w.line("This file automatically generated by nerve gen.");
        w.line("DO NOT MODIFY BY HAND!!!!");
        w.line("\"\"\"").blank();
        w.line("import struct as _struct").blank();
        if self.numpy {
            w.line("import numpy as _np").blank();
        }
        w.line("import nerve_lcm as _rt").blank();
        w.line("_nv_new = object.__new__");
        w.line("_nv_unpack_I = _rt.unpack_I");
        w.line("_nv_pack_I = _rt.pack_I");
        w.line("_nv_unpack_from = _struct.unpack_from");
        let numpy_names: &[(&str, &str)] = if self.numpy {
            w.line("_nv_frombuffer = _np.frombuffer");
            w.line("_nv_ndarray = _np.ndarray");
            &[
                ("_nv_i1", "i1"),
                ("_nv_i2", ">i2"),
                ("_nv_i4", ">i4"),
                ("_nv_i8", ">i8"),
                ("_nv_f4", ">f4"),
                ("_nv_f8", ">f8"),
                ("_nv_u1", "u1"),
            ]
        } else {
            &[]
        };
        for &(v, d) in numpy_names {
            w.line(format!("{v} = _np.dtype({})", py_str(d)));
        }
        for (i, f) in md.structs.iter().enumerate() {
            w.line(format!("_nv_S{i} = _struct.Struct({})", py_str(f)));
        }
        w.blank().blank();
        let text = body.finish();
        let mut out = w.finish();
        out.push_str(&text);
        out.push('\n');
        out.push_str(&self.accelerate_tail(st, &mut md));
        out
    }

    pub(super) fn default_value(&self, m: &Member, md: &mut Module) -> String {
        match self.kind(m) {
            Kind::Scalar(p) => match p {
                Primitive::Float | Primitive::Double => "0.0".into(),
                Primitive::Boolean => "False".into(),
                _ => "0".into(),
            },
            Kind::String => "\"\"".into(),
            Kind::Nested => format!("{}()", md.class(type_name(&m.ty))),
            Kind::Tuple(p, n) => {
                let zero = zero_literal(p);
                match n {
                    _ if !self.numpy => format!("[{zero}] * {n}"),
                    0 => "()".into(),
                    1 => format!("({zero},)"),
                    _ => format!("({})", vec![zero; n].join(", ")),
                }
            }
            Kind::PrimArray(p) if !self.numpy => {
                // lcm-gen's nesting: lists outside, the innermost dimension a list of zeros or (byte) bytes; a
                // fixed byte array holds zero bytes rather than lcm-gen's b"", so a fresh message encodes
                let (inner, outer) = m.dims.split_last().expect("an array");
                let elem = match (p, inner) {
                    (Primitive::Byte, Dim::Fixed { len, .. }) => format!("bytes({len})"),
                    (Primitive::Byte, Dim::Variable { .. }) => "b\"\"".to_owned(),
                    (_, Dim::Variable { .. }) => "[]".to_owned(),
                    (_, Dim::Fixed { len, .. }) => format!("[{}] * {len}", zero_literal(p)),
                };
                nested_default(outer, 0, &elem)
            }
            Kind::PrimArray(p) => {
                let shape: Vec<String> =
                    m.dims.iter().map(|d| if d.is_fixed() { fixed_len(d).to_string() } else { "0".into() }).collect();
                if p == Primitive::Byte && m.dims.len() == 1 {
                    format!("bytes({})", shape[0])
                } else {
                    format!("_np.zeros(({},), {})", shape.join(", "), native_dtype(p))
                }
            }
            Kind::ObjArray => {
                let elem = match &m.ty {
                    MemberType::Primitive(_) => "\"\"".to_owned(),
                    t => format!("{}()", md.class(type_name(t))),
                };
                nested_default(&m.dims, 0, &elem)
            }
        }
    }
}

pub(super) fn enum_module(en: &nerve_types::Enum) -> String {
    let cls = &en.name.name;
    let full = py_str(&en.name.full());
    let mut w = CodeWriter::new("    ");
    w.line("\"\"\"LCM type definitions");
    w.line("This file automatically generated by nerve gen.");
    w.line("DO NOT MODIFY BY HAND!!!!");
    w.line("\"\"\"").blank();
    w.line("import struct as _struct").blank();
    w.line("import nerve_lcm as _rt").blank();
    w.line("_nv_i = _struct.Struct(\">i\")").blank().blank();
    w.line(format!("class {cls}(object):"));
    w.indent();
    if let Some(doc) = &en.doc {
        w.line("\"\"\"").lines(doc_text(doc)).line("\"\"\"");
    }
    w.line("__slots__ = [\"value\"]");
    for v in &en.values {
        w.line(format!("{} = {}", v.name, v.value));
    }
    w.line(format!("_packed_fingerprint = {}", py_bytes(&en.hash.to_be_bytes())));
    w.line("_nerve_size = 4");
    w.line("_nerve_dtype = None").blank();
    w.line("def __init__(self, value=0):");
    w.indent().line("self.value = value").dedent().blank();
    w.line("@staticmethod");
    w.line("def _get_hash_recursive(parents):");
    w.indent().line(format!("return 0x{:016x}", en.hash)).dedent().blank();
    w.line("@staticmethod");
    w.line("def _get_packed_fingerprint():");
    w.indent().line(format!("return {cls}._packed_fingerprint")).dedent().blank();
    w.line("def get_hash(self):");
    w.indent().line(format!("return 0x{:016x}", en.hash)).dedent().blank();
    w.line("def encode(self):");
    w.indent().line(format!("return {cls}._packed_fingerprint + _nv_i.pack(self.value)")).dedent().blank();
    w.line("def _nerve_enc(self, ap):");
    w.indent().line("ap(_nv_i.pack(self.value))").dedent().blank();
    w.line("def _encode_one(self, buf):");
    w.indent().line("buf.write(_nv_i.pack(self.value))").dedent().blank();
    w.line("@staticmethod");
    w.line("def decode(data):");
    w.indent();
    w.line("if data.__class__ is not bytes:");
    w.indent().line("data = _rt.as_bytes(data)").dedent();
    w.line(format!("if data[:8] != {cls}._packed_fingerprint:"));
    w.indent().line(format!("raise _rt.bad_fingerprint(data, 0x{:016x}, {full})", en.hash)).dedent();
    w.line(format!("return {cls}._nerve_dec(data, 8)[0]"));
    w.dedent().blank();
    w.line("@staticmethod");
    w.line("def _decode_one(buf):");
    w.indent().line(format!("return _rt.decode_one({cls}, buf)")).dedent().blank();
    w.line("@staticmethod");
    w.line("def _nerve_dec(data, off):");
    w.indent();
    w.line("try:");
    w.indent().line("v, = _nv_i.unpack_from(data, off)").dedent();
    w.line("except _struct.error:");
    w.indent().line(format!("raise _rt.truncated(data, off, {full}) from None")).dedent();
    w.line(format!("return {cls}(v), off + 4"));
    w.dedent();
    w.dedent();
    w.finish()
}
