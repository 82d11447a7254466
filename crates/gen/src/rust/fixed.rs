//! Fixed-size members and types: encoding and decoding at constant offsets, the byte shuffle, encoded sizes.

use super::*;

/// `__nerve_encode_fixed` / `__nerve_decode_fixed` for a struct of fixed encoded size.
pub(super) fn emit_fixed_fns(
    w: &mut CodeWriter,
    members: &[M],
    plan: &StructPlan,
    size: usize,
    unsafe_ok: bool,
) -> Result<(), GenError> {
    w.line("/// The encoded body size (fixed for this type).");
    w.line("#[doc(hidden)]");
    w.line(format!("pub const __NERVE_SIZE: usize = {size};"));
    w.line("/// Encodes the body into exactly its size (used for arrays of this type; no checks needed).");
    w.line("#[doc(hidden)]");
    w.line("#[inline(always)]");
    w.block(format!("pub fn __nerve_encode_fixed(&self, b: &mut [u8; {size}]) {{"), "}", |w| {
        let mut o = 0;
        for m in members {
            encode_fixed_member(w, m, &format!("self.{}", m.ident), "b", o);
            o += m.fixed.unwrap_or(0);
        }
    });
    emit_shuffle(w, members, plan, size, unsafe_ok);
    w.line("/// Decodes the body from exactly its size (used for arrays of this type; no checks needed).");
    w.line("#[doc(hidden)]");
    w.line("#[inline(always)]");
    w.block(format!("pub fn __nerve_decode_fixed(b: &[u8; {size}]) -> Self {{"), "}", |w| {
        let mut o = 0;
        let mut fields = Vec::new();
        for m in members {
            fields.push(format!("{}: {}", m.ident, decode_fixed_member(m, "b", o)));
            o += m.fixed.unwrap_or(0);
        }
        if fields.is_empty() {
            w.line("Self {}");
        } else {
            w.block("Self {", "}", |w| {
                for f in &fields {
                    w.line(format!("{f},"));
                }
            });
        }
    });
    Ok(())
}

/// `__NERVE_SHUFFLE`: how an array of this fixed-size type decodes one element per byte shuffle
/// (`nerve_codec::fixed::Shuffle`). `Some` only when every member is a number or a fixed array of numbers (any
/// bytes are then a valid value, the `unsafe` constructor's condition) and both sizes fit in 16 bytes (checked by
/// the constructor, at compile time, against the struct's real layout from `offset_of!`), and the code may contain
/// `unsafe` (`--rust-no-unsafe`).
pub(super) fn emit_shuffle(w: &mut CodeWriter, members: &[M], plan: &StructPlan, size: usize, unsafe_ok: bool) {
    w.line("/// How arrays of this type decode with one byte shuffle per element (`None`: member by member).");
    w.line("#[doc(hidden)]");
    let ty = "::core::option::Option<__nc::fixed::Shuffle<Self>>";
    // Rust, unlike C, has no shuffle for booleans: a `bool` holding any byte but 0 or 1 is undefined behaviour.
    // An empty struct has nothing to shuffle.
    let shuffle = plan.shuffle.as_ref().filter(|sh| unsafe_ok && !sh.fields.is_empty() && !sh.has_bool);
    let Some(shuffle) = shuffle else {
        w.line(format!("pub const __NERVE_SHUFFLE: {ty} = ::core::option::Option::None;"));
        return;
    };
    let fields: Vec<String> = shuffle
        .fields
        .iter()
        .map(|f| {
            format!(
                "__nc::fixed::Field::new(::core::mem::offset_of!(Self, {}), {}, {}, {})",
                members[f.member].ident, f.offset, f.elem_size, f.count
            )
        })
        .collect();
    w.line("#[allow(unsafe_code)]");
    w.line(format!("pub const __NERVE_SHUFFLE: {ty} ="));
    w.line(
        "    // SAFETY: every member is an integer or a float, or a fixed array of them (any bytes are a valid value),",
    );
    w.line("    // and each field is a member's offset_of! with the member's size.");
    w.line(format!("    unsafe {{ __nc::fixed::Shuffle::new({size}, &[{}]) }};", fields.join(", ")));
}

/// Reads one fixed-size element at byte offset `at` (an expression) of `b`.
pub(super) fn elem_dec_at(elem: &Elem, b: &str, at: &str) -> String {
    match elem {
        Elem::Prim(Primitive::Int8) => format!("({b}[{at}] as i8)"),
        Elem::Prim(Primitive::Byte) => format!("{b}[{at}]"),
        Elem::Prim(Primitive::Boolean) => format!("({b}[{at}] != 0)"),
        Elem::Prim(p) => {
            let n = p.wire_size().unwrap_or(0);
            format!("{}::from_be_bytes(__nc::fixed::at::<{n}>({b}, {at}))", prim_rust(*p))
        }
        Elem::Enum { path } => {
            format!("{path}(i32::from_be_bytes(__nc::fixed::at::<4>({b}, {at})))")
        }
        Elem::Struct { path, fixed, .. } => {
            format!("{path}::__nerve_decode_fixed(__nc::fixed::chunk::<{}>({b}, {at}))", fixed.unwrap_or(0))
        }
    }
}

/// Writes one fixed-size element `v` (a value for primitives and enums, a place for structs) at offset `at` of `b`.
pub(super) fn elem_enc_at(elem: &Elem, b: &str, at: &str, v: &str) -> String {
    match elem {
        Elem::Prim(Primitive::Int8) => format!("{b}[{at}] = {v} as u8;"),
        Elem::Prim(Primitive::Byte) => format!("{b}[{at}] = {v};"),
        Elem::Prim(Primitive::Boolean) => format!("{b}[{at}] = u8::from({v});"),
        Elem::Prim(p) => {
            let n = p.wire_size().unwrap_or(0);
            format!("*__nc::fixed::chunk_mut::<{n}>({b}, {at}) = {v}.to_be_bytes();")
        }
        Elem::Enum { .. } => {
            format!("*__nc::fixed::chunk_mut::<4>({b}, {at}) = {v}.0.to_be_bytes();")
        }
        Elem::Struct { fixed, .. } => {
            format!("{v}.__nerve_encode_fixed(__nc::fixed::chunk_mut::<{}>({b}, {at}));", fixed.unwrap_or(0))
        }
    }
}

/// Decodes a fixed-size member at constant offset `o` of chunk `b`.
pub(super) fn decode_fixed_member(m: &M, b: &str, o: usize) -> String {
    let es = m.elem.fixed().unwrap_or(0);
    if m.dims.is_empty() {
        return elem_dec_at(&m.elem, b, &o.to_string());
    }
    let total = m.fixed.unwrap_or(0);
    if let Some((_, suffix)) = m.elem.bulk() {
        if m.dims.len() == 1 && matches!(m.elem, Elem::Prim(Primitive::Byte)) {
            return format!("__nc::fixed::at::<{total}>({b}, {o})");
        }
        if let [D::Fixed(n @ 1..=SMALL_ARRAY)] = m.dims.as_slice() {
            // A short array (a position, a quaternion): one read per element at a constant offset, no loop.
            let items: Vec<String> = (0..*n).map(|i| elem_dec_at(&m.elem, b, &(o + i * es).to_string())).collect();
            return format!("[{}]", items.join(", "));
        }
        return format!(
            "{{ let mut a = {}; __nc::fixed::read_{suffix}(&{b}[{o}..{}], {}); a }}",
            default_expr(&m.dims, &m.elem),
            o + total,
            flat("a", m.dims.len() - 1, true)
        );
    }
    nested_from_fn(&m.dims, &m.elem, b, &o.to_string(), es)
}

/// Fixed arrays of primitives up to this length are read and written element by element at constant offsets
/// (unrolled) rather than by a bulk loop, which for two or three elements costs more than the work.
pub(super) const SMALL_ARRAY: usize = 8;

/// Nested `from_fn`s building a fixed multi-dimensional array of fixed-size elements from chunk `b` at `base`.
pub(super) fn nested_from_fn(dims: &[D], elem: &Elem, b: &str, base: &str, es: usize) -> String {
    fn go(dims: &[D], level: usize, elem: &Elem, b: &str, base: &str, es: usize) -> String {
        if level == dims.len() {
            let mut idx = Vec::new();
            for l in 0..dims.len() {
                let stride: usize = fixed_count(&dims[l + 1..]);
                idx.push(format!("i{l} * {stride}"));
            }
            let idx = if idx.is_empty() { "0".to_owned() } else { idx.join(" + ") };
            return elem_dec_at(elem, b, &format!("{base} + {es} * ({idx})"));
        }
        let n = fixed_count(&dims[level..level + 1]);
        format!("::core::array::from_fn::<_, {n}, _>(|i{level}| {})", go(dims, level + 1, elem, b, base, es))
    }
    go(dims, 0, elem, b, base, es)
}

/// Encodes a fixed-size member `place` at constant offset `o` of chunk `b`.
pub(super) fn encode_fixed_member(w: &mut CodeWriter, m: &M, place: &str, b: &str, o: usize) {
    if m.dims.is_empty() {
        w.line(elem_enc_at(&m.elem, b, &o.to_string(), place));
        return;
    }
    let total = m.fixed.unwrap_or(0);
    let es = m.elem.fixed().unwrap_or(0);
    let flat_place = flat(place, m.dims.len() - 1, false);
    if let Some((_, suffix)) = m.elem.bulk() {
        if matches!(m.elem, Elem::Prim(Primitive::Byte)) {
            w.line(format!("{b}[{o}..{}].copy_from_slice({flat_place});", o + total));
        } else if let [D::Fixed(n @ 1..=SMALL_ARRAY)] = m.dims.as_slice() {
            // A short array: one write per element at a constant offset, no loop.
            for i in 0..*n {
                w.line(elem_enc_at(&m.elem, b, &(o + i * es).to_string(), &format!("{place}[{i}]")));
            }
        } else {
            w.line(format!("__nc::fixed::write_{suffix}(&mut {b}[{o}..{}], {flat_place});", o + total));
        }
        return;
    }
    let pat = if matches!(m.elem, Elem::Struct { .. }) { "e" } else { "&e" };
    w.block(format!("for (i, {pat}) in {flat_place}.iter().enumerate() {{"), "}", |w| {
        w.line(elem_enc_at(&m.elem, b, &format!("{o} + {es} * i"), "e"));
    });
}

/// The encoded size of `place` (an array level or an element) as an expression.
pub(super) fn size_expr(dims: &[D], elem: &Elem, place: &str, level: usize) -> String {
    if let Some(es) = elem.fixed() {
        if all_fixed(dims) {
            return format!("{}", es * fixed_count(dims));
        }
        if all_fixed(&dims[1..]) {
            return format!("{place}.len() * {}", es * fixed_count(&dims[1..]));
        }
    }
    match dims.split_first() {
        None => match elem {
            Elem::Prim(Primitive::String) => format!("__nc::string_size(&{place})"),
            _ => format!("__nc::Encode::encoded_body_size(&{place})"),
        },
        Some((_, rest)) => {
            let e = format!("e{level}");
            format!("{place}.iter().map(|{e}| {}).sum::<usize>()", size_expr(rest, elem, &format!("(*{e})"), level + 1))
        }
    }
}
