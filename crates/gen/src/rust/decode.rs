//! Decoding members of variable size, afresh and into a value's existing memory.

use super::*;

/// Decodes a variable-size member into local `m_{idx}`.
pub(super) fn decode_var_member(w: &mut CodeWriter, m: &M, idx: usize, _members: &[M]) {
    let mut lens = Vec::new();
    for (l, d) in m.dims.iter().enumerate() {
        match d {
            D::Var(ci) => {
                w.line(format!("let n{l} = r.count(i64::from(m_{ci}))?;"));
                lens.push(format!("n{l}"));
            }
            D::Fixed(n) => lens.push(format!("{n}")),
        }
    }
    if !m.dims.is_empty() {
        w.line(format!("r.ensure_dims(&[{}], {})?;", lens.join(", "), m.elem.min()));
    }
    if let ([D::Var(_)], Elem::Struct { path, fixed: None, .. }) = (m.dims.as_slice(), &m.elem) {
        // Each element decoded in place (pushed as its default value, then filled by `decode_body_into`), not
        // returned from `decode_body` and pushed: its `Result` (or, inlined, the `Str` where the fast and slow paths
        // of a string meet) was stored piecemeal on the stack and read back whole for the push, a missed store
        // forwarding per element; decoding in place made path_t's decode markedly faster.
        w.line(format!(
            "let m_{idx} = {{ let mut v: {VEC}<{path}> = {VEC}::with_capacity(n0); for _ in 0..n0 {{ v.push(<{path} as ::core::default::Default>::default()); if let ::core::option::Option::Some(e) = v.last_mut() {{ __nc::Decode::decode_body_into(e, r)?; }} }} {OK}(v) }}?;"
        ));
        return;
    }
    w.line(format!("let m_{idx} = {}?;", decode_level(m, 0)));
}

/// Decodes a variable-size member into `self.<ident>`, reusing its memory where the shape allows: a string, a
/// nested struct, or a one-dimensional variable array of primitives, fixed-size structs, strings or structs. Other
/// shapes (multi-dimensional, fixed arrays of strings) are decoded afresh and assigned.
pub(super) fn decode_var_member_into(w: &mut CodeWriter, m: &M, members: &[M]) {
    let place = format!("self.{}", m.ident);
    let mut lens = Vec::new();
    for (l, d) in m.dims.iter().enumerate() {
        match d {
            D::Var(ci) => {
                w.line(format!("let n{l} = r.count(i64::from(self.{}))?;", members[*ci].ident));
                lens.push(format!("n{l}"));
            }
            D::Fixed(n) => lens.push(format!("{n}")),
        }
    }
    if !m.dims.is_empty() {
        w.line(format!("r.ensure_dims(&[{}], {})?;", lens.join(", "), m.elem.min()));
    }
    let into = |e: &str| match &m.elem {
        Elem::Prim(Primitive::String) => Some(format!("r.get_string_into({e})")),
        Elem::Struct { fixed: None, .. } => Some(format!("__nc::Decode::decode_body_into({e}, r)")),
        _ => None,
    };
    match m.dims.as_slice() {
        [] => {
            if let Some(x) = into(&format!("&mut {place}")) {
                w.line(format!("{x}?;"));
                return;
            }
        }
        [D::Var(_)] => {
            if let Some((t, _)) = m.elem.bulk() {
                if t == "u8" {
                    w.line(format!("r.get_bytes_into(&mut {place}, n0)?;"));
                } else {
                    w.line(format!("r.get_{t}_vec_into(&mut {place}, n0)?;"));
                }
                return;
            }
            if let Some(es) = m.elem.fixed().filter(|&es| es > 0) {
                w.line(format!("let bytes = r.take_array(n0, {es})?;"));
                let dec = elem_dec_at(&m.elem, "c", "0");
                w.line(match &m.elem {
                    Elem::Struct { path, .. } => format!(
                        "__nc::fixed::decode_chunks_shuffled_into::<{es}, _>(&mut {place}, bytes, n0, {path}::__NERVE_SHUFFLE, |c| {dec});"
                    ),
                    _ => format!("__nc::fixed::decode_chunks_into::<{es}, _>(&mut {place}, bytes, n0, |c| {dec});"),
                });
                return;
            }
            if let Some(x) = into("e") {
                let fresh = decode_level(m, 1);
                w.block("{", "}", |w| {
                    w.line(format!("let v = &mut {place};"));
                    w.line("v.truncate(n0);");
                    w.line("let have = v.len();");
                    w.line(format!("for e in v.iter_mut() {{ {x}?; }}"));
                    w.line("v.reserve_exact(n0 - have);");
                    w.line(format!("for _ in have..n0 {{ v.push({fresh}?); }}"));
                });
                return;
            }
        }
        [D::Fixed(_)] => {
            if let Some(x) = into("e") {
                w.line(format!("for e in {place}.iter_mut() {{ {x}?; }}"));
                return;
            }
        }
        _ => {}
    }
    w.line(format!("{place} = {}?;", decode_level(m, 0)));
}

/// An expression of type `Result<T, DecodeError>` decoding `m`'s dimensions from `level` on.
pub(super) fn decode_level(m: &M, level: usize) -> String {
    let dims = &m.dims[level..];
    if dims.is_empty() {
        return match &m.elem {
            Elem::Prim(Primitive::String) => "r.get_string()".into(),
            Elem::Prim(p) => format!("r.get_{}()", prim_rust(*p)),
            Elem::Enum { path } => format!("r.get_i32().map({path})"),
            Elem::Struct { path, fixed: Some(n), .. } => {
                format!("r.take_fixed::<{n}>().map({path}::__nerve_decode_fixed)")
            }
            Elem::Struct { path, .. } => format!("<{path} as __nc::Decode>::decode_body(r)"),
        };
    }
    let len = match dims[0] {
        D::Var(_) => format!("n{level}"),
        D::Fixed(n) => format!("{n}"),
    };
    let rest = &dims[1..];
    if all_fixed(rest) {
        if let Some((t, suffix)) = m.elem.bulk() {
            if rest.is_empty() {
                if let D::Var(_) = dims[0] {
                    return if t == "u8" {
                        format!("r.get_bytes({len}).map(<[u8]>::to_vec)")
                    } else {
                        format!("r.get_{t}_vec({len})")
                    };
                }
            }
            if all_fixed(dims) {
                return format!(
                    "{{ let mut a = {}; r.fill_{t}({})?; {OK}(a) }}",
                    default_expr(dims, &m.elem),
                    flat("a", dims.len() - 1, true)
                );
            }
            // A variable outer dimension of fixed inner arrays: one take, then one pass per row.
            let inner = fixed_count(rest) * m.elem.fixed().unwrap_or(0);
            return format!(
                "{{ let bytes = r.take_array({len}, {inner})?; {OK}(__nc::fixed::chunks::<{inner}>(bytes).map(|c| {{ let mut a = {}; __nc::fixed::read_{suffix}(c, {}); a }}).collect::<{VEC}<_>>()) }}",
                default_expr(rest, &m.elem),
                flat("a", rest.len() - 1, true)
            );
        }
        if let Some(es) = m.elem.fixed().filter(|&es| es > 0) {
            let inner = fixed_count(rest) * es;
            let build = if rest.is_empty() {
                elem_dec_at(&m.elem, "c", "0")
            } else {
                nested_from_fn(rest, &m.elem, "c", "0", es)
            };
            return match dims[0] {
                D::Var(_) => match &m.elem {
                    Elem::Struct { path, .. } if rest.is_empty() => format!(
                        "{{ let bytes = r.take_array({len}, {inner})?; {OK}(__nc::fixed::decode_chunks_shuffled::<{inner}, _>(bytes, {len}, {path}::__NERVE_SHUFFLE, |c| {build})) }}"
                    ),
                    _ => format!(
                        "{{ let bytes = r.take_array({len}, {inner})?; {OK}(__nc::fixed::decode_chunks::<{inner}, _>(bytes, {len}, |c| {build})) }}"
                    ),
                },
                D::Fixed(n) => format!(
                    "{{ let bytes = r.take_array({n}, {inner})?; {OK}(::core::array::from_fn::<_, {n}, _>(|i| {{ let c = __nc::fixed::chunk::<{inner}>(bytes, i * {inner}); {build} }})) }}"
                ),
            };
        }
    }
    let inner = decode_level(m, level + 1);
    match dims[0] {
        D::Var(_) => {
            format!("{{ let mut v = {VEC}::with_capacity({len}); for _ in 0..{len} {{ v.push({inner}?); }} {OK}(v) }}")
        }
        D::Fixed(n) => format!("__nc::fixed::try_array::<_, {n}>(|| {inner}, || {})", default_expr(rest, &m.elem)),
    }
}
