//! Encoding members of variable size.

use super::*;

/// `Writer::count` for each variable dimension of `m`, as `n{level}` locals, and the encoding of `m`.
pub(super) fn encode_var_member(w: &mut CodeWriter, m: &M, members: &[M]) -> Result<(), GenError> {
    let lit = rust_lit(&m.name);
    for (l, d) in m.dims.iter().enumerate() {
        if let D::Var(ci) = d {
            let c = &members[*ci];
            w.line(format!("let n{l} = __nc::Writer::count({lit}, i64::from(self.{}))?;", c.ident));
        }
    }
    encode_level(w, m, &lit, &format!("self.{}", m.ident), 0);
    Ok(())
}

pub(super) fn encode_level(w: &mut CodeWriter, m: &M, lit: &str, place: &str, level: usize) {
    let dims = &m.dims[level..];
    if let D::Var(_) = dims.first().copied().unwrap_or(D::Fixed(0)) {
        if !dims.is_empty() {
            w.line(format!("__nc::Writer::check_len({lit}, n{level}, {place}.len())?;"));
        }
    }
    if dims.is_empty() {
        match &m.elem {
            Elem::Prim(Primitive::String) => w.line(format!("w.put_str(&{place})?;")),
            Elem::Prim(p) => w.line(format!("w.put_{}({place})?;", prim_rust(*p))),
            Elem::Enum { .. } => w.line(format!("w.put_i32({place}.0)?;")),
            Elem::Struct { fixed: Some(n), .. } => {
                w.line(format!("{place}.__nerve_encode_fixed(w.take_fixed::<{n}>()?);"))
            }
            Elem::Struct { .. } => w.line(format!("__nc::Encode::encode_body(&{place}, w)?;")),
        };
        return;
    }
    let rest_fixed = all_fixed(&dims[1..]);
    if rest_fixed {
        let flat_place = flat(place, dims.len() - 1, false);
        if let Some((t, _)) = m.elem.bulk() {
            if t == "u8" {
                w.line(format!("w.put_bytes({flat_place})?;"));
            } else {
                w.line(format!("w.put_{t}_slice({flat_place})?;"));
            }
            return;
        }
        if let Some(es) = m.elem.fixed().filter(|&es| es > 0) {
            let fp = flat_place.clone();
            w.block("{", "}", |w| {
                w.line(format!("let src = {fp};"));
                w.line(format!("let dst = w.take_array(src.len(), {es})?;"));
                if let (Elem::Struct { path, .. }, true) = (&m.elem, dims.len() == 1) {
                    w.line(format!(
                        "__nc::fixed::encode_chunks_shuffled::<{es}, _>(dst, src, {path}::__NERVE_SHUFFLE, |e, c| {{ {} }});",
                        elem_enc_at(&m.elem, "c", "0", "e")
                    ));
                    return;
                }
                let pat = if matches!(m.elem, Elem::Struct { .. }) {
                    "e"
                } else {
                    "&e"
                };
                w.block(
                    format!(
                        "for (c, {pat}) in __nc::fixed::chunks_mut::<{es}>(dst).zip(src.iter()) {{"
                    ),
                    "}",
                    |w| {
                        w.line(elem_enc_at(&m.elem, "c", "0", "e"));
                    },
                );
            });
            return;
        }
    }
    let e = format!("e{level}");
    w.block(format!("for {e} in {place}.iter() {{"), "}", |w| {
        encode_level(w, m, lit, &format!("(*{e})"), level + 1);
    });
}
