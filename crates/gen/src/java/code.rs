//! The bodies of `_nerveEncode`, `_nerveDecode` and `copy`, member by member over the plan's runs.

use nerve_types::{Dim, Member, MemberType, Primitive, Struct};

use super::{dim_expr, Gen};
use crate::plan::{MemberPlan, Seg, StructPlan};
use crate::writer::CodeWriter;

/// The reader's and writer's method suffix for a number: `i32` for `i32u` / `i32s`.
fn kind(p: Primitive) -> &'static str {
    match p {
        Primitive::Int8 | Primitive::Byte => "i8",
        Primitive::Boolean => "bool",
        Primitive::Int16 => "i16",
        Primitive::Int32 => "i32",
        Primitive::Int64 => "i64",
        Primitive::Float => "f32",
        Primitive::Double => "f64",
        Primitive::String => unreachable!("strings are not numbers"),
    }
}

/// The bulk array method of a number type (`bools` for booleans).
fn bulk(p: Primitive) -> String {
    match p {
        Primitive::Boolean => "bools".into(),
        _ => format!("{}s", kind(p)),
    }
}

/// Opens `for` loops over the first `n` dimensions of `m`; returns the element expression after them.
fn open_loops(w: &mut CodeWriter, base: &str, m: &Member, n: usize) -> String {
    let mut expr = base.to_owned();
    for (i, d) in m.dims.iter().take(n).enumerate() {
        w.line(format!("for (int _i{i} = 0; _i{i} < {}; _i{i}++) {{", dim_expr(d, false)));
        w.indent();
        expr = format!("{expr}[_i{i}]");
    }
    expr
}

fn close_loops(w: &mut CodeWriter, n: usize) {
    for _ in 0..n {
        w.dedent();
        w.line("}");
    }
}

/// The innermost dimension's length as an int.
fn last_len(m: &Member) -> String {
    dim_expr(m.dims.last().expect("an array"), true)
}

impl Gen<'_> {
    pub(super) fn encode_body(&self, w: &mut CodeWriter, s: &Struct, plan: &StructPlan) {
        let items: Vec<usize> = (0..s.members.len()).collect();
        for seg in plan.segments(&items) {
            match seg {
                Seg::Run(run, size) => {
                    w.line(format!("_w.need({size});"));
                    for &i in run {
                        self.encode_member(w, &s.members[i]);
                    }
                }
                Seg::Var(&i) => self.encode_member(w, &s.members[i]),
            }
        }
    }

    /// One member; scalar numbers only ever come in a run whose room was made already.
    fn encode_member(&self, w: &mut CodeWriter, m: &Member) {
        let this = format!("this.{}", m.name);
        if m.dims.is_empty() {
            match &m.ty {
                MemberType::Primitive(Primitive::String) => w.line(format!("_w.string({this});")),
                MemberType::Primitive(p) => w.line(format!("_w.{}u({this});", kind(*p))),
                MemberType::Enum(_) => w.line(format!("_w.i32u({this}.value);")),
                MemberType::Struct(_) => w.line(format!("{this}._nerveEncode(_w);")),
            };
            return;
        }
        let k = m.dims.len();
        let row = open_loops(w, &this, m, k - 1);
        let last = dim_expr(m.dims.last().expect("an array"), false);
        match &m.ty {
            MemberType::Primitive(Primitive::String) => {
                w.line(format!("for (int _j = 0; _j < {last}; _j++) _w.string({row}[_j]);"));
            }
            MemberType::Primitive(p) => {
                w.line(format!("_w.{}({row}, {last});", bulk(*p)));
            }
            MemberType::Enum(_) => {
                w.line(format!("for (int _j = 0; _j < {last}; _j++) _w.i32({row}[_j].value);"));
            }
            MemberType::Struct(_) => {
                w.line(format!("for (int _j = 0; _j < {last}; _j++) {row}[_j]._nerveEncode(_w);"));
            }
        }
        close_loops(w, k - 1);
    }

    pub(super) fn decode_body(&self, w: &mut CodeWriter, s: &Struct, plan: &StructPlan) {
        let items: Vec<usize> = (0..s.members.len()).collect();
        for seg in plan.segments(&items) {
            match seg {
                Seg::Run(run, size) => {
                    w.line(format!("_r.need({size});"));
                    for &i in run {
                        self.decode_member(w, &s.members[i], &plan.members[i]);
                    }
                }
                Seg::Var(&i) => self.decode_member(w, &s.members[i], &plan.members[i]),
            }
        }
    }

    /// One member. Numbers are read unchecked: a run's bytes were checked as a whole, and an array's count was
    /// checked against the bytes its elements take at least before it was allocated.
    fn decode_member(&self, w: &mut CodeWriter, m: &Member, mp: &MemberPlan) {
        let this = format!("this.{}", m.name);
        let elem = self.elem_type(&m.ty);
        if m.dims.is_empty() {
            match &m.ty {
                MemberType::Primitive(Primitive::String) => w.line(format!("{this} = _r.string();")),
                MemberType::Primitive(p) => w.line(format!("{this} = _r.{}u();", kind(*p))),
                MemberType::Enum(_) => w.line(format!("{this} = new {elem}(_r.i32u());")),
                MemberType::Struct(_) => w.line(format!("{this} = {elem}._nerveDecodeFactory(_r);")),
            };
            return;
        }
        let min = mp.elem.min();
        if !m.all_dims_fixed() {
            if let [Dim::Variable { member }] = m.dims.as_slice() {
                w.line(format!("_r.count(this.{member}, {min});"));
            } else {
                let ds: Vec<String> = m.dims.iter().map(|d| dim_expr(d, false)).collect();
                w.line(format!("_r.dims({min}, {});", ds.join(", ")));
            }
        }
        w.line(format!("{this} = new {};", self.alloc(m, &[])));
        let k = m.dims.len();
        let row = open_loops(w, &this, m, k - 1);
        let last = last_len(m);
        match &m.ty {
            MemberType::Primitive(Primitive::String) => {
                w.line(format!("for (int _j = 0; _j < {last}; _j++) {row}[_j] = _r.string();"));
            }
            MemberType::Primitive(p) => {
                w.line(format!("_r.{}({row}, {last});", bulk(*p)));
            }
            MemberType::Enum(_) => {
                w.line(format!("for (int _j = 0; _j < {last}; _j++) {row}[_j] = new {elem}(_r.i32u());"));
            }
            MemberType::Struct(_) => {
                w.line(format!("for (int _j = 0; _j < {last}; _j++) {row}[_j] = {elem}._nerveDecodeFactory(_r);"));
            }
        }
        close_loops(w, k - 1);
    }

    /// lcm-gen's `copy()`: a deep copy (arrays of the declared sizes, nested structs copied, strings shared).
    pub(super) fn copy_method(&self, w: &mut CodeWriter, s: &Struct, me: &str) {
        super::method(w, format!("public {me} copy()"), |w| {
            w.line(format!("{me} _o = new {me}();"));
            for m in &s.members {
                let name = &m.name;
                let scalar_struct = matches!(m.ty, MemberType::Struct(_) | MemberType::Enum(_));
                if m.dims.is_empty() {
                    if scalar_struct {
                        w.line(format!("_o.{name} = this.{name}.copy();"));
                    } else {
                        w.line(format!("_o.{name} = this.{name};"));
                    }
                    continue;
                }
                w.line(format!("_o.{name} = new {};", self.alloc(m, &[])));
                let k = m.dims.len();
                let mut src = format!("this.{name}");
                let mut dst = format!("_o.{name}");
                for (i, d) in m.dims.iter().take(k - 1).enumerate() {
                    w.line(format!("for (int _i{i} = 0; _i{i} < {}; _i{i}++) {{", dim_expr(d, false)));
                    w.indent();
                    src = format!("{src}[_i{i}]");
                    dst = format!("{dst}[_i{i}]");
                }
                let last = last_len(m);
                if scalar_struct {
                    w.line(format!("for (int _j = 0; _j < {last}; _j++) {dst}[_j] = {src}[_j].copy();"));
                } else if m.dims.last().is_some_and(Dim::is_fixed) {
                    w.line(format!("System.arraycopy({src}, 0, {dst}, 0, {last});"));
                } else {
                    w.line(format!("if ({last} > 0) System.arraycopy({src}, 0, {dst}, 0, {last});"));
                }
                close_loops(w, k - 1);
            }
            w.line("return _o;");
        });
    }
}
