//! `Decode`, `UnmarshalBinary` and `DecodeBody`: one bounds check per run of fixed-size members, every array's
//! dimensions checked against the bytes left before anything is allocated.

use super::*;
use crate::plan::Seg;

/// The expression reading primitive `p` at `d[at:]`.
fn get(p: Primitive, at: &str) -> String {
    match p {
        Primitive::Int8 => format!("int8(d[{at}])"),
        Primitive::Byte => format!("d[{at}]"),
        Primitive::Boolean => format!("d[{at}] != 0"),
        Primitive::Int16 => format!("int16(binary.BigEndian.Uint16(d[{at}:]))"),
        Primitive::Int32 => format!("int32(binary.BigEndian.Uint32(d[{at}:]))"),
        Primitive::Int64 => format!("int64(binary.BigEndian.Uint64(d[{at}:]))"),
        Primitive::Float => format!("math.Float32frombits(binary.BigEndian.Uint32(d[{at}:]))"),
        Primitive::Double => format!("math.Float64frombits(binary.BigEndian.Uint64(d[{at}:]))"),
        Primitive::String => unreachable!("strings are not fixed-size"),
    }
}

impl Gen<'_> {
    pub(super) fn decode_fns(&self, w: &mut CodeWriter, s: &Struct, ms: &[M<'_>], t: &str) {
        let name = s.name.full();
        w.line("// Decode decodes a message (fingerprint & data) from binary form");
        w.line("// and verifies that the fingerprint match the expected");
        w.line("//");
        w.line("// param data The buffer containing the encoded message");
        w.line("// returns Error");
        w.block(format!("func (p *{t}) Decode(data []byte) (err error) {{"), "}", |w| {
            w.block("if len(data) < 8 {", "}", |w| {
                w.line(format!("return fmt.Errorf(\"lcm: {name}: %d bytes, too short for a fingerprint\", len(data))"));
            });
            w.block(format!("if fp := binary.BigEndian.Uint64(data); fp != 0x{:016x} {{", s.fingerprint), "}", |w| {
                w.line(format!(
                    "return fmt.Errorf(\"lcm: {name}: fingerprint %016x, expected {:016x}\", fp)",
                    s.fingerprint
                ));
            });
            w.line("n, err := p.DecodeBody(data[8:], 0)");
            w.block("if err != nil {", "}", |w| {
                w.line("return err");
            });
            w.block("if n != len(data)-8 {", "}", |w| {
                w.line(format!("return fmt.Errorf(\"lcm: {name}: %d bytes after the message\", len(data)-8-n)"));
            });
            w.line("return nil");
        });
        w.blank();
        w.line("// UnmarshalBinary implements the BinaryUnmarshaler interface (bytes after the message are ignored)");
        w.block(format!("func (p *{t}) UnmarshalBinary(data []byte) (err error) {{"), "}", |w| {
            w.line("_, err = p.DecodeBody(data, 0)");
            w.line("return err");
        });
        w.blank();
        let recursive = self.recursive.contains(&s.name);
        if let Some(size) = StructPlan::new(&self.input.layout, s).fixed {
            w.line(format!("// DecodeFixed reads the message from d, which holds its {size} bytes (no fingerprint)."));
            w.block(format!("func (p *{t}) DecodeFixed(d []byte) {{"), "}", |w| {
                w.line(format!("d = d[:{size}:{size}]"));
                w.line("o := 0");
                for m in ms {
                    get_fixed(w, m);
                }
                w.line("_ = o");
            });
            w.blank();
        }
        w.line("// DecodeBody decodes a message without its fingerprint from the front of d and returns the bytes it");
        w.line("// took; depth counts the recursive types it is nested in.");
        w.block(format!("func (p *{t}) DecodeBody(d []byte, depth int) (int, error) {{"), "}", |w| {
            if recursive {
                w.block("if depth >= nerveMaxDepth {", "}", |w| {
                    w.line(format!("return 0, nerveTooDeep(\"{name}\")"));
                });
                w.line("depth++");
            }
            let plan = StructPlan::new(&self.input.layout, s);
            if let Some(size) = plan.fixed {
                w.block(format!("if len(d) < {size} {{"), "}", |w| {
                    w.line(format!("return 0, nerveShort(\"{name}\", {size}, len(d))"));
                });
                w.line(format!("p.DecodeFixed(d[:{size}])"));
                w.line(format!("return {size}, nil"));
                return;
            }
            w.line("o := 0");
            for seg in plan.segments(ms) {
                match seg {
                    Seg::Run(run, total) => {
                        if total > 0 {
                            w.block(format!("if len(d)-o < {total} {{"), "}", |w| {
                                w.line(format!(
                                    "return 0, nerveShort(\"{name}.{}\", {total}, len(d)-o)",
                                    run[0].m.name
                                ));
                            });
                        }
                        for m in run {
                            get_fixed(w, m);
                        }
                    }
                    Seg::Var(m) => self.decode_member(w, s, ms, m),
                }
            }
            w.line("return o, nil");
        });
        w.blank();
    }

    /// Decodes a member that is not a number of fixed size: checks its dimensions, then fills it level by level.
    fn decode_member(&self, w: &mut CodeWriter, s: &Struct, ms: &[M<'_>], m: &M<'_>) {
        let what = format!("{}.{}", s.name, m.m.name);
        let dims = &m.m.dims;
        let count = |d: &Dim| match d {
            Dim::Fixed { len, .. } => format!("{len}"),
            Dim::Variable { member } => format!("int64(p.{})", field_of(ms, member)),
        };
        w.block("{", "}", |w| {
            if dims.iter().any(|d| !d.is_fixed()) {
                let min = m.elem.min();
                if dims.len() == 1 {
                    w.line(format!("n0, err := nerveCount({}, {min}, len(d)-o, \"{what}\")", count(&dims[0])));
                } else {
                    let all: Vec<String> = dims.iter().map(count).collect();
                    w.line(format!("err := nerveDims(\"{what}\", {min}, len(d)-o, {})", all.join(", ")));
                }
                w.block("if err != nil {", "}", |w| {
                    w.line("return 0, err");
                });
                if dims.len() > 1 {
                    for (i, d) in dims.iter().enumerate() {
                        if let Dim::Variable { member } = d {
                            w.line(format!("n{i} := int(p.{})", field_of(ms, member)));
                        }
                    }
                }
            }
            self.decode_level(w, s, m, 0, &format!("p.{}", m.field));
        });
    }

    fn decode_level(&self, w: &mut CodeWriter, s: &Struct, m: &M<'_>, level: usize, expr: &str) {
        let dims = &m.m.dims;
        let what = format!("{}.{}", s.name, m.m.name);
        if level == dims.len() {
            match m.elem {
                Elem::Str => {
                    w.block(format!("if v, k, err := nerveString(d, o, \"{what}\"); err != nil {{"), "} else {", |w| {
                        w.line("return 0, err");
                    });
                    w.line(format!("\t{expr}, o = v, k"));
                    w.line("}");
                }
                Elem::Struct { fixed: Some(size), .. } => {
                    if size > 0 {
                        w.line(format!("{expr}.DecodeFixed(d[o : o+{size}])"));
                        w.line(format!("o += {size}"));
                    } else {
                        w.line(format!("_ = {expr}"));
                    }
                }
                Elem::Struct { .. } => {
                    let depth = "depth";
                    w.block(
                        format!("if k, err := {expr}.DecodeBody(d[o:], {depth}); err != nil {{"),
                        "} else {",
                        |w| {
                            w.line("return 0, err");
                        },
                    );
                    w.line("\to += k");
                    w.line("}");
                }
                _ => {
                    let p = prim_of(m).unwrap_or(Primitive::Int32);
                    w.line(format!("{expr} = {}", get(p, "o")));
                    w.line(format!("o += {}", p.wire_size().unwrap_or(4)));
                }
            }
            return;
        }
        let var = !dims[level].is_fixed();
        let n = format!("n{level}");
        // The innermost dimension of numbers: one row at a time.
        if level + 1 == dims.len() {
            if let Some(p) = prim_of(m) {
                let size = p.wire_size().unwrap_or(4);
                if var {
                    w.block("{", "}", |w| {
                        w.line(format!("r := make([]{}, {n})", m.elem_type));
                        if p == Primitive::Byte {
                            w.line("o += copy(r, d[o:])");
                        } else {
                            w.block("for i := range r {", "}", |w| {
                                w.line(format!("r[i] = {}", get(p, &format!("o+{size}*i"))));
                            });
                            w.line(format!("o += {size} * len(r)"));
                        }
                        w.line(format!("{expr} = r"));
                    });
                } else if p == Primitive::Byte {
                    w.line(format!("o += copy({expr}[:], d[o:])"));
                } else {
                    w.block(format!("for i := range {expr} {{"), "}", |w| {
                        w.line(format!("{expr}[i] = {}", get(p, &format!("o+{size}*i"))));
                    });
                    w.line(format!("o += {size} * len({expr})"));
                }
                return;
            }
        }
        if var {
            w.line(format!("{expr} = make({}, {n})", m.type_from(level)));
        }
        let i = format!("i{level}");
        w.block(format!("for {i} := range {expr} {{"), "}", |w| {
            self.decode_level(w, s, m, level + 1, &format!("{expr}[{i}]"));
        });
    }
}

/// Reads a fixed-size member at the running offset `o` (the run's bounds are checked).
fn get_fixed(w: &mut CodeWriter, m: &M<'_>) {
    let Some(p) = prim_of(m) else {
        let Elem::Struct { fixed: Some(size @ 1..), .. } = m.elem else { return };
        let mut expr = format!("p.{}", m.field);
        for i in 0..m.m.dims.len() {
            w.line(format!("for i{i} := range {expr} {{"));
            w.indent();
            let _ = write!(expr, "[i{i}]");
        }
        w.line(format!("{expr}.DecodeFixed(d[o : o+{size}])"));
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
        w.line(format!("p.{} = {}", m.field, get(p, "o")));
        w.line(format!("o += {size}"));
        return;
    }
    let mut expr = format!("p.{}", m.field);
    for i in 0..dims - 1 {
        w.line(format!("for i{i} := range {expr} {{"));
        w.indent();
        let _ = write!(expr, "[i{i}]");
    }
    if p == Primitive::Byte {
        w.line(format!("o += copy({expr}[:], d[o:])"));
    } else {
        w.block(format!("for i := range {expr} {{"), "}", |w| {
            w.line(format!("{expr}[i] = {}", get(p, &format!("o+{size}*i"))));
        });
        w.line(format!("o += {size} * len({expr})"));
    }
    for _ in 0..dims - 1 {
        w.dedent();
        w.line("}");
    }
}

/// The Go field of the member called `name`.
fn field_of<'m>(ms: &'m [M<'_>], name: &'m str) -> &'m str {
    ms.iter().find(|m| m.m.name == name).map_or(name, |m| m.field.as_str())
}
