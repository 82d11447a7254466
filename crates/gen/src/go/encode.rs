//! `Encode`, `MarshalBinary` and `AppendBinary`: the count getters first, then each run of fixed-size numbers
//! written into one grown region, and the variable members after.

use super::*;
use crate::plan::Seg;

/// The statement writing primitive `v` at `b[o:]`.
pub(super) fn put(p: Primitive, v: &str) -> String {
    match p {
        Primitive::Int8 => format!("b[o] = byte({v})"),
        Primitive::Byte => format!("b[o] = {v}"),
        Primitive::Boolean => format!("b[o] = nerveBool({v})"),
        Primitive::Int16 => format!("binary.BigEndian.PutUint16(b[o:], uint16({v}))"),
        Primitive::Int32 => format!("binary.BigEndian.PutUint32(b[o:], uint32({v}))"),
        Primitive::Int64 => format!("binary.BigEndian.PutUint64(b[o:], uint64({v}))"),
        Primitive::Float => format!("binary.BigEndian.PutUint32(b[o:], math.Float32bits({v}))"),
        Primitive::Double => format!("binary.BigEndian.PutUint64(b[o:], math.Float64bits({v}))"),
        Primitive::String => unreachable!("strings are not fixed-size"),
    }
}

impl Gen<'_> {
    pub(super) fn encode_fns(&self, w: &mut CodeWriter, s: &Struct, ms: &[M<'_>], t: &str) {
        w.line("// Encode encodes a message (fingerprint & data) into binary form");
        w.line("//");
        w.line("// returns Encoded data or error");
        w.block(format!("func (p *{t}) Encode() (data []byte, err error) {{"), "}", |w| {
            w.line("size, err := p.Size()");
            w.block("if err != nil {", "}", |w| {
                w.line("return nil, err");
            });
            w.line("data = make([]byte, 8, 8+size)");
            w.line(format!("binary.BigEndian.PutUint64(data, 0x{:016x})", s.fingerprint));
            w.line("return p.AppendBinary(data)");
        });
        w.blank();
        w.line("// MarshalBinary implements the BinaryMarshaller interface");
        w.block(format!("func (p *{t}) MarshalBinary() (data []byte, err error) {{"), "}", |w| {
            w.line("size, err := p.Size()");
            w.block("if err != nil {", "}", |w| {
                w.line("return nil, err");
            });
            w.line("return p.AppendBinary(make([]byte, 0, size))");
        });
        w.blank();
        w.line("// AppendBinary appends the encoded message without its fingerprint to b (encoding.BinaryAppender).");
        w.block(format!("func (p *{t}) AppendBinary(b []byte) ([]byte, error) {{"), "}", |w| {
            self.call_getters(w, s, ms, "return b, err");
            if ms.iter().any(|m| matches!(m.elem, Elem::Str | Elem::Struct { .. })) {
                w.line("var err error");
                w.line("_ = err");
            }
            let plan = StructPlan::new(&self.input.layout, s);
            if let Some(size) = plan.fixed {
                if size > 0 {
                    w.line(format!("b, o := nerveGrow(b, {size})"));
                    w.line("p.EncodeFixed(b[o:])");
                }
                return_nil(w);
                return;
            }
            for seg in plan.segments(ms) {
                match seg {
                    // One grown region for the whole run, written at the running offset.
                    Seg::Run(run, total) => {
                        if total > 0 {
                            w.block("{", "}", |w| {
                                w.line("var o int");
                                w.line(format!("b, o = nerveGrow(b, {total})"));
                                for m in run {
                                    put_fixed(w, m);
                                }
                            });
                        }
                    }
                    Seg::Var(m) => self.append_member(w, s, m),
                }
            }
            return_nil(w);
        });
        w.blank();
        if let Some(size) = StructPlan::new(&self.input.layout, s).fixed {
            w.line(format!("// EncodeFixed writes the message's {size} bytes (no fingerprint) at the start of b."));
            w.block(format!("func (p *{t}) EncodeFixed(b []byte) {{"), "}", |w| {
                w.line(format!("b = b[:{size}:{size}]"));
                w.line("o := 0");
                for m in ms {
                    put_fixed(w, m);
                }
                w.line("_ = o");
            });
            w.blank();
        }
    }

    /// Appends a member that is not a run of numbers: strings, structs, and arrays with a variable dimension.
    fn append_member(&self, w: &mut CodeWriter, s: &Struct, m: &M<'_>) {
        let what = format!("{}.{}", s.name, m.m.name);
        let dims = m.m.dims.len();
        let mut expr = format!("p.{}", m.field);
        let fixed_struct = match m.elem {
            Elem::Struct { fixed: Some(size), .. } => Some(size),
            _ => None,
        };
        let bulk = (prim_of(m).is_some() || fixed_struct.is_some()) && dims > 0;
        let loops = if bulk { dims - 1 } else { dims };
        for i in 0..loops {
            w.line(format!("for i{i} := range {expr} {{"));
            w.indent();
            let _ = write!(expr, "[i{i}]");
        }
        match (prim_of(m), m.elem) {
            (Some(Primitive::Byte), _) => {
                w.line(format!("b = append(b, {expr}[:]...)"));
            }
            (Some(p), _) => {
                let size = p.wire_size().unwrap_or(4);
                w.block("{", "}", |w| {
                    w.line("var o int");
                    w.line(format!("b, o = nerveGrow(b, {size}*len({expr}))"));
                    w.block(format!("for _, v := range {expr} {{"), "}", |w| {
                        w.line(put(p, "v"));
                        w.line(format!("o += {size}"));
                    });
                });
            }
            (None, Elem::Struct { fixed: Some(size), .. }) if bulk => {
                if size == 0 {
                    w.line(format!("_ = {expr}"));
                } else {
                    w.block("{", "}", |w| {
                        w.line("var o int");
                        w.line(format!("b, o = nerveGrow(b, {size}*len({expr}))"));
                        w.block(format!("for i := range {expr} {{"), "}", |w| {
                            w.line(format!("{expr}[i].EncodeFixed(b[o : o+{size}])"));
                            w.line(format!("o += {size}"));
                        });
                    });
                }
            }
            (None, Elem::Str) => {
                w.block(format!("if b, err = nerveAppendString(b, {expr}, \"{what}\"); err != nil {{"), "}", |w| {
                    w.line("return b, err");
                });
            }
            _ => {
                w.block(format!("if b, err = {expr}.AppendBinary(b); err != nil {{"), "}", |w| {
                    w.line("return b, err");
                });
            }
        }
        for _ in 0..loops {
            w.dedent();
            w.line("}");
        }
    }
}

fn return_nil(w: &mut CodeWriter) {
    w.line("return b, nil");
}

/// Writes a fixed-size member at the running offset `o` of the grown region.
fn put_fixed(w: &mut CodeWriter, m: &M<'_>) {
    let Some(p) = prim_of(m) else {
        let Elem::Struct { fixed: Some(size @ 1..), .. } = m.elem else { return };
        let mut expr = format!("p.{}", m.field);
        for i in 0..m.m.dims.len() {
            w.line(format!("for i{i} := range {expr} {{"));
            w.indent();
            let _ = write!(expr, "[i{i}]");
        }
        w.line(format!("{expr}.EncodeFixed(b[o : o+{size}])"));
        w.line(format!("o += {size}"));
        for _ in 0..m.m.dims.len() {
            w.dedent();
            w.line("}");
        }
        return;
    };
    let size = p.wire_size().unwrap_or(4);
    let dims = m.m.dims.len();
    if dims == 0 {
        w.line(put(p, &format!("p.{}", m.field)));
        w.line(format!("o += {size}"));
        return;
    }
    let mut expr = format!("p.{}", m.field);
    let loops = if p == Primitive::Byte { dims - 1 } else { dims };
    for i in 0..loops {
        w.line(format!("for i{i} := range {expr} {{"));
        w.indent();
        let _ = write!(expr, "[i{i}]");
    }
    if p == Primitive::Byte {
        w.line(format!("o += copy(b[o:], {expr}[:])"));
    } else {
        w.line(put(p, &expr));
        w.line(format!("o += {size}"));
    }
    for _ in 0..loops {
        w.dedent();
        w.line("}");
    }
}
