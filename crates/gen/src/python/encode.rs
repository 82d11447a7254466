//! Encoding: a struct's `_encode_one`, runs of fixed-size members packed at once, arrays of numbers and of structs.

use super::*;

impl Gen<'_> {
    /// The slow, checked encoding of one primitive array member (numpy conversion, shape check).
    pub(super) fn prim_array_line(&self, m: &Member, p: Primitive, what: &str) -> String {
        let shape: Vec<String> = m.dims.iter().map(|d| Self::dim_expr(d, "self")).collect();
        let shape = format!("({},)", shape.join(", "));
        if !self.numpy {
            // nested sequences (lists, tuples, bytes, numpy arrays too) packed with `struct`, checked
            let code = if p == Primitive::Boolean { '?' } else { prim_codes(p).0 };
            return format!("ap(_rt.pack_array(self.{}, \"{code}\", {shape}, {what}))", m.name);
        }
        match p {
            Primitive::Byte => {
                format!("ap(_rt.byte_array_bytes(self.{}, {shape}, {what}))", m.name)
            }
            Primitive::Boolean => {
                format!("ap(_rt.bool_array_bytes(self.{}, {shape}, {what}))", m.name)
            }
            _ => format!("ap(_rt.array_bytes(self.{}, {}, {shape}, {what}))", m.name, dtype_var(p)),
        }
    }

    pub(super) fn emit_encode(&self, st: &Struct, w: &mut CodeWriter, md: &mut Module) {
        let full = st.name.full();
        let numpy = self.numpy;
        // A run: scalars, and small 1-D fixed arrays packed with `*` (one `pack` for all; if that fails, e.g. for
        // a list longer than the array, each member again through the checked path).
        let mut run: Vec<(&Member, Primitive, Option<usize>)> = Vec::new();
        let mut any = false;
        let flush = |run: &mut Vec<(&Member, Primitive, Option<usize>)>, w: &mut CodeWriter, md: &mut Module| {
            if run.is_empty() {
                return;
            }
            let mut fmt = String::from(">");
            for (_, p, len) in run.iter() {
                if let Some(n) = len {
                    let _ = write!(fmt, "{n}");
                }
                fmt.push(prim_codes(*p).0);
            }
            let s = md.fmt(&fmt);
            // numpy arrays go through tolist(): unpacking a list is several times faster than an array
            let mut args = Vec::new();
            for (i, (m, _, len)) in run.iter().enumerate() {
                if len.is_some() {
                    w.line(format!("x{i} = self.{}", m.name));
                    if numpy {
                        w.line(format!("if x{i}.__class__ is _nv_ndarray:"));
                        w.indent().line(format!("x{i} = x{i}.tolist()")).dedent();
                    }
                    args.push(format!("*x{i}"));
                } else {
                    args.push(format!("self.{}", m.name));
                }
            }
            let fast = format!("ap({s}.pack({}))", args.join(", "));
            if run.iter().all(|(_, _, len)| len.is_none()) {
                w.line(fast);
            } else {
                w.line("try:");
                w.indent().line(fast).dedent();
                w.line("except (_struct.error, TypeError):");
                w.indent();
                for (m, p, len) in run.iter() {
                    let what = py_str(&format!("{full}.{}", m.name));
                    if len.is_some() {
                        w.line(self.prim_array_line(m, *p, &what));
                    } else {
                        let s = md.fmt(&format!(">{}", prim_codes(*p).0));
                        w.line(format!("ap({s}.pack(self.{}))", m.name));
                    }
                }
                w.dedent();
            }
            run.clear();
        };
        for m in &st.members {
            any = true;
            let what = py_str(&format!("{full}.{}", m.name));
            match self.kind(m) {
                Kind::Scalar(p) => run.push((m, p, None)),
                Kind::String => {
                    flush(&mut run, w, md);
                    w.line(format!("e = self.{}.encode(\"utf-8\")", m.name));
                    w.line("ap(_nv_pack_I(len(e) + 1))");
                    w.line("ap(e)");
                    w.line("ap(b\"\\0\")");
                }
                Kind::Nested => {
                    flush(&mut run, w, md);
                    let c = md.class(type_name(&m.ty));
                    w.line(format!("v = self.{}", m.name));
                    w.line(format!("if v.__class__ is {c}:"));
                    w.indent().line("v._nerve_enc(ap)").dedent();
                    w.line("else:");
                    w.indent().line(format!("_rt.encode_other(v, {c}, ap, {what})")).dedent();
                }
                Kind::Tuple(p, n) => run.push((m, p, Some(n))),
                Kind::PrimArray(p) => {
                    flush(&mut run, w, md);
                    w.line(self.prim_array_line(m, p, &what));
                }
                Kind::ObjArray => {
                    flush(&mut run, w, md);
                    self.emit_encode_obj_array(m, w, md, &what);
                }
            }
        }
        flush(&mut run, w, md);
        if !any {
            w.line("pass");
        }
    }

    pub(super) fn emit_encode_obj_array(&self, m: &Member, w: &mut CodeWriter, md: &mut Module, what: &str) {
        let n = m.dims.len();
        for (i, d) in m.dims.iter().enumerate() {
            w.line(format!("c{i} = {}", Self::dim_expr(d, "self")));
        }
        w.line(format!("a0 = self.{}", m.name));
        let is_struct = matches!(m.ty, MemberType::Struct(_));
        for i in 0..n {
            let last = i + 1 == n;
            if last && is_struct {
                let c = md.class(type_name(&m.ty));
                w.line(format!("_rt.encode_struct_list(a{i}, c{i}, {c}, ap, {what})"));
                break;
            }
            w.line(format!("_rt.check_len(a{i}, c{i}, {what})"));
            w.line(format!("for i{i} in range(c{i}):"));
            w.indent();
            if !last {
                w.line(format!("a{} = a{i}[i{i}]", i + 1));
            } else {
                w.line(format!("v = a{i}[i{i}]"));
                match &m.ty {
                    MemberType::Primitive(_) => {
                        w.line("e = v.encode(\"utf-8\")");
                        w.line("ap(_nv_pack_I(len(e) + 1))");
                        w.line("ap(e)");
                        w.line("ap(b\"\\0\")");
                    }
                    t => {
                        let c = md.class(type_name(t));
                        w.line(format!("if v.__class__ is {c}:"));
                        w.indent().line("v._nerve_enc(ap)").dedent();
                        w.line("else:");
                        w.indent().line(format!("_rt.encode_other(v, {c}, ap, {what})")).dedent();
                    }
                }
            }
        }
        for i in (0..n).rev() {
            let last = i + 1 == n;
            if !(last && is_struct) {
                w.dedent();
            }
        }
    }
}
