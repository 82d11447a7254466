//! Views: members read in place from the encoded bytes.

use super::*;

pub(super) fn kind_type(dims: &[D], elem: &Elem) -> String {
    match dims.split_first() {
        None => match elem {
            Elem::Prim(Primitive::String) => "__nc::view::Str".into(),
            Elem::Prim(p) => format!("__nc::view::Prim<{}>", prim_rust(*p)),
            Elem::Enum { path } => format!("__nc::view::Prim<{path}>"),
            Elem::Struct { view, .. } => format!("__nc::view::StructKind<{view}>"),
        },
        Some((_, rest)) => format!("__nc::view::ArrayKind<{}>", kind_type(rest, elem)),
    }
}

pub(super) fn kind_expr(dims: &[D], elem: &Elem, level: usize) -> String {
    match dims.split_first() {
        None => match elem {
            Elem::Prim(Primitive::String) => "__nc::view::Str".into(),
            Elem::Prim(_) | Elem::Enum { .. } => "__nc::view::Prim::new()".into(),
            Elem::Struct { .. } => "__nc::view::StructKind::new()".into(),
        },
        Some((d, rest)) => {
            let len = match d {
                D::Fixed(n) => format!("{n}"),
                D::Var(_) => format!("n{level}"),
            };
            format!("__nc::view::ArrayKind::new({len}, {})", kind_expr(rest, elem, level + 1))
        }
    }
}

pub(super) fn item_type(dims: &[D], elem: &Elem) -> String {
    match dims.split_first() {
        None => match elem {
            Elem::Prim(Primitive::String) => "&'a str".into(),
            Elem::Prim(p) => prim_rust(*p).into(),
            Elem::Enum { path } => path.clone(),
            Elem::Struct { view, .. } => view.clone(),
        },
        Some((_, rest)) => format!("__nc::view::ArrayView<'a, {}>", kind_type(rest, elem)),
    }
}

pub(super) fn emit_view(
    w: &mut CodeWriter,
    s: &Struct,
    name: &str,
    members: &[M],
    fixed: Option<usize>,
    min: usize,
) -> Result<(), GenError> {
    let view = format!("{name}View");
    // Offsets: constant up to the first variable-size member, then from the end of the last one before.
    let mut offsets: Vec<(Option<usize>, usize)> = Vec::new(); // (index of the last variable member before, plus)
    let mut anchor: Option<usize> = None;
    let mut plus = 0usize;
    for (i, m) in members.iter().enumerate() {
        offsets.push((anchor, plus));
        match m.fixed {
            Some(n) => plus += n,
            None => {
                anchor = Some(i);
                plus = 0;
            }
        }
    }
    let off_expr = |i: usize| -> String {
        match offsets[i] {
            (None, p) => format!("self.pos + {p}"),
            (Some(j), p) => format!("self.__end_{j}()? + {p}"),
        }
    };
    let counts = |w: &mut CodeWriter, m: &M| {
        for (l, d) in m.dims.iter().enumerate() {
            if let D::Var(ci) = d {
                w.line(format!("let n{l} = __nc::view::count(i64::from(self.{}()?), at)?;", members[*ci].accessor));
            }
        }
    };

    w.blank();
    w.line(format!("/// A view of an encoded `{}`: reads single fields straight from the bytes.", s.name));
    w.line("///");
    w.line("/// Fields before the first variable-size member are read at constant offsets; later ones skip the");
    w.line("/// variable-size members before them. Every read is checked and returns a `Result`.");
    w.line("#[derive(Clone, Copy, Debug)]");
    w.block(format!("pub struct {view}<'a> {{"), "}", |w| {
        w.line("buf: &'a [u8],");
        w.line("pos: usize,");
        w.line("depth: u32,");
    });
    w.blank();
    w.block(format!("impl<'a> {view}<'a> {{"), "}", |w| {
        w.line(format!(
            "/// A view of an encoded message: checks the fingerprint and that at least {min} bytes follow it."
        ));
        w.block(format!("pub fn new(buf: &'a [u8]) -> {RESULT}<Self, __nc::DecodeError> {{"), "}", |w| {
            w.line(format!("__nc::view::check_message(buf, 0x{:016x}, {min})?;", s.fingerprint));
            w.line(format!("{OK}(Self {{ buf, pos: 8, depth: 0 }})"));
        });
        for (i, m) in members.iter().enumerate() {
            w.blank();
            match &m.doc {
                Some(d) => {
                    w.doc("/// ", Some(d));
                }
                None => {
                    w.line(format!("/// Reads member `{}`.", m.name));
                }
            }
            let item = item_type(&m.dims, &m.elem);
            w.line("#[inline]");
            w.block(format!("pub fn {}(&self) -> {RESULT}<{item}, __nc::DecodeError> {{", m.accessor), "}", |w| {
                if m.dims.is_empty() && m.elem.bulk().is_some() {
                    w.line(format!("__nc::view::prim::<{}>(self.buf, {})", m.elem.rust(), off_expr(i)));
                    return;
                }
                w.line(format!("let at = {};", off_expr(i)));
                counts(w, m);
                w.line(format!("let k: {} = {};", kind_type(&m.dims, &m.elem), kind_expr(&m.dims, &m.elem, 0)));
                w.line("__nc::view::Kind::read(&k, self.buf, at, self.depth + 1)");
            });
        }
        // The end offset of every variable-size member.
        for (i, m) in members.iter().enumerate() {
            if m.fixed.is_some() {
                continue;
            }
            w.blank();
            w.block(format!("fn __end_{i}(&self) -> {RESULT}<usize, __nc::DecodeError> {{"), "}", |w| {
                w.line(format!("let at = {};", off_expr(i)));
                counts(w, m);
                w.line(format!("let k: {} = {};", kind_type(&m.dims, &m.elem), kind_expr(&m.dims, &m.elem, 0)));
                w.line(format!("{OK}(at + __nc::view::Kind::size_at(&k, self.buf, at, self.depth + 1)?)"));
            });
        }
    });
    w.blank();
    w.block(format!("impl<'a> __nc::view::StructView<'a> for {view}<'a> {{"), "}", |w| {
        match fixed {
            Some(n) => {
                w.line(format!("const FIXED_SIZE: ::core::option::Option<usize> = ::core::option::Option::Some({n});"))
            }
            None => w.line("const FIXED_SIZE: ::core::option::Option<usize> = ::core::option::Option::None;"),
        };
        w.line(format!("const MIN_SIZE: usize = {min};"));
        w.line("#[inline]");
        w.block(
            format!("fn view_at(buf: &'a [u8], at: usize, depth: u32) -> {RESULT}<Self, __nc::DecodeError> {{"),
            "}",
            |w| {
                w.line("__nc::view::check_depth(depth, at)?;");
                w.line(format!("__nc::view::check_room(buf, at, {min})?;"));
                w.line(format!("{OK}(Self {{ buf, pos: at, depth }})"));
            },
        );
        w.line("#[inline]");
        w.block(format!("fn body_len(&self) -> {RESULT}<usize, __nc::DecodeError> {{"), "}", |w| match fixed {
            Some(n) => {
                w.line(format!("{OK}({n})"));
            }
            None => {
                let last = members.iter().rposition(|m| m.fixed.is_none()).unwrap_or(0);
                let trail: usize = members[last + 1..].iter().map(|m| m.fixed.unwrap_or(0)).sum();
                w.line(format!("let len = self.__end_{last}()? + {trail} - self.pos;"));
                w.line("__nc::view::check_room(self.buf, self.pos, len)?;");
                w.line(format!("{OK}(len)"));
            }
        });
    });
    w.blank();
    w.block(format!("impl<'a> __nc::json::WriteJson for {view}<'a> {{"), "}", |w| {
        w.block(format!("fn write_json(&self, out: &mut {STRING}) -> {RESULT}<(), __nc::DecodeError> {{"), "}", |w| {
            for (i, m) in members.iter().enumerate() {
                let key = format!("{}{}", if i == 0 { "{" } else { "," }, json_key(&m.name));
                w.line(format!("out.push_str({});", rust_lit(&key)));
                w.line(format!("__nc::json::WriteJson::write_json(&self.{}()?, out)?;", m.accessor));
            }
            if members.is_empty() {
                w.line("out.push('{');");
            }
            w.line("out.push('}');");
            w.line(format!("{OK}(())"));
        });
    });
    let _ = &s.span;
    Ok(())
}
