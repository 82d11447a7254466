//! CSV through the transcoder: [`CsvShape`] is the columns a type's messages have needed so far (a column per leaf
//! field, a variable-length array as long as the longest seen, a byte array as one cell of hex), grown by
//! [`Transcoder::csv_merge`] and written row by row by [`Transcoder::csv_row`], both straight from the bytes.
//!
//! Cells: integers and enums as numbers, booleans `true`/`false`, floats as Nerve's float text (`NaN`, `inf`,
//! `-inf` when not finite), strings quoted only when they hold `,`, `"`, CR or LF (RFC 4180), byte arrays as
//! lowercase hex; a cell past the end of a shorter array is empty.

use std::sync::Arc;

use nerve_codec::Reader;

use super::num::{push_comma_f32_text, push_f64_text, push_hex, push_int};
use super::plan::{Elem, MemberPlan, Op};
use super::{decode_err, lens, too_deep, Counts, Transcoder, Walk, SKIP, VALUE};
use crate::dynamic::registry::RegistryError;
use crate::dynamic::{DynError, DynErrorKind, MAX_EMPTY_ELEMENTS};
use crate::model::{Primitive, Struct};

/// The columns a type's messages need (see the module docs); starts empty and grows with each message merged.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CsvShape {
    root: Node,
    /// Set once merged with a type whose messages all have one shape: merging more of them changes nothing.
    settled_for: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Default)]
enum Node {
    #[default]
    Leaf,
    Struct(Vec<(Arc<str>, Node)>),
    Array(Vec<Node>),
}

impl CsvShape {
    /// A shape no message has been merged into (one unnamed column).
    pub fn new() -> CsvShape {
        CsvShape::default()
    }

    /// The column names, by field path: `pose.position[0]`, `ranges[17]`, `m[1][2]`.
    pub fn columns(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.root.columns("", &mut out);
        out
    }

    /// Grows this shape by `other`, a shape of the same type's messages: the result is the shape both sets of
    /// messages merged into one would have (merging only ever adds columns), so messages can be merged in parts on
    /// several threads and the parts' shapes joined.
    pub fn absorb(&mut self, other: CsvShape) {
        self.root.absorb(other.root);
        self.settled_for = self.settled_for.or(other.settled_for);
    }

    /// Whether this shape has every column `other` has ([`CsvShape::absorb`] would change nothing): a row made with
    /// it has a cell for every one of `other`'s messages' values.
    pub fn covers(&self, other: &CsvShape) -> bool {
        self.root.covers(&other.root)
    }
}

impl Node {
    fn absorb(&mut self, other: Node) {
        match (self, other) {
            (_, Node::Leaf) => {}
            (Node::Struct(a), Node::Struct(b)) => {
                for ((_, x), (_, y)) in a.iter_mut().zip(b) {
                    x.absorb(y);
                }
            }
            (Node::Array(a), Node::Array(b)) => {
                let mut b = b.into_iter();
                for (x, y) in a.iter_mut().zip(&mut b) {
                    x.absorb(y);
                }
                a.extend(b);
            }
            // A leaf (nothing merged yet) takes the other's columns; two kinds (not of one type) the later's, as a
            // merge would make it.
            (me, o) => *me = o,
        }
    }

    /// Whether absorbing `other` would leave this node as it is.
    fn covers(&self, other: &Node) -> bool {
        match (self, other) {
            (_, Node::Leaf) => true,
            (Node::Struct(a), Node::Struct(b)) => a.iter().zip(b).all(|((_, x), (_, y))| x.covers(y)),
            (Node::Array(a), Node::Array(b)) => b.len() <= a.len() && a.iter().zip(b).all(|(x, y)| x.covers(y)),
            _ => false,
        }
    }

    fn columns(&self, prefix: &str, out: &mut Vec<String>) {
        match self {
            Node::Leaf => out.push(prefix.to_owned()),
            Node::Struct(fields) => {
                for (name, shape) in fields {
                    let p = if prefix.is_empty() { name.to_string() } else { format!("{prefix}.{name}") };
                    shape.columns(&p, out);
                }
            }
            Node::Array(elems) => {
                for (i, shape) in elems.iter().enumerate() {
                    shape.columns(&format!("{prefix}[{i}]"), out);
                }
            }
        }
    }

    /// Empty cells for every column of this node.
    fn empties(&self, out: &mut Vec<u8>) {
        match self {
            Node::Leaf => out.push(b','),
            Node::Struct(fields) => fields.iter().for_each(|(_, n)| n.empties(out)),
            Node::Array(elems) => elems.iter().for_each(|n| n.empties(out)),
        }
    }
}

/// A CSV field, quoted when it needs to be (RFC 4180).
fn push_text(out: &mut Vec<u8>, s: &[u8]) {
    if s.iter().any(|&c| matches!(c, b',' | b'"' | b'\n' | b'\r')) {
        out.push(b'"');
        for &c in s {
            if c == b'"' {
                out.push(b'"');
            }
            out.push(c);
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(s);
    }
}

#[cold]
fn push_non_finite(out: &mut Vec<u8>, x: f64) {
    out.extend_from_slice(if x.is_nan() {
        b"NaN"
    } else if x > 0.0 {
        b"inf"
    } else {
        b"-inf"
    });
}

/// A `float`'s cell after a comma.
#[inline]
fn comma_cell_f32(out: &mut Vec<u8>, x: f32) {
    if x.is_finite() {
        push_comma_f32_text(out, x);
    } else {
        out.push(b',');
        push_non_finite(out, f64::from(x));
    }
}

#[inline]
fn cell_f64(out: &mut Vec<u8>, x: f64) {
    if x.is_finite() {
        push_f64_text(out, x);
    } else {
        push_non_finite(out, x);
    }
}

/// One scalar as a cell (with its leading comma when `write`); an integer's value is returned for count members.
#[inline]
fn scalar_cell(p: Primitive, r: &mut Reader<'_>, out: &mut Vec<u8>, write: bool) -> Result<i64, DynError> {
    macro_rules! int {
        ($get:ident) => {{
            let v = r.$get().map_err(decode_err)?;
            if write {
                out.push(b',');
                push_int(out, v);
            }
            Ok(i64::from(v))
        }};
    }
    match p {
        Primitive::Int8 => int!(get_i8),
        Primitive::Int16 => int!(get_i16),
        Primitive::Int32 => int!(get_i32),
        Primitive::Int64 => int!(get_i64),
        Primitive::Byte => int!(get_u8),
        Primitive::Float => {
            let v = r.get_f32().map_err(decode_err)?;
            if write {
                comma_cell_f32(out, v);
            }
            Ok(0)
        }
        Primitive::Double => {
            let v = r.get_f64().map_err(decode_err)?;
            if write {
                out.push(b',');
                cell_f64(out, v);
            }
            Ok(0)
        }
        Primitive::Boolean => {
            let v = r.get_bool().map_err(decode_err)?;
            if write {
                out.extend_from_slice(if v { b",true" } else { b",false" });
            }
            Ok(0)
        }
        Primitive::String => {
            let s = r.get_str().map_err(decode_err)?;
            if write {
                out.push(b',');
                push_text(out, s.as_bytes());
            }
            Ok(0)
        }
    }
}

/// What comes next on the wire: one element of a member's type, or an array level with its remaining lengths.
#[derive(Clone, Copy)]
enum Item<'p> {
    Elem(&'p Elem),
    Array(&'p MemberPlan, &'p [usize]),
}

impl Item<'_> {
    /// A byte array's last dimension: one cell of hex.
    fn is_bytes(&self) -> bool {
        matches!(self, Item::Array(m, [_]) if m.elem == Elem::Prim(Primitive::Byte))
    }
}

impl Walk<'_> {
    /// Reads past an item, checking it as the tree decoder would.
    fn skip_item(&self, item: Item<'_>, r: &mut Reader<'_>, depth: usize, budget: &mut usize) -> Result<i64, DynError> {
        let mut none = Vec::new();
        match item {
            Item::Elem(e) => self.elem::<SKIP>(e, r, depth, budget, &mut none),
            Item::Array(m, lens) => self.array::<SKIP>(m, lens, r, depth, budget, &mut none).map(|()| 0),
        }
    }

    // -----------------------------------------------------------------------------------------------------------
    // Merging (the message is known to decode: `csv_merge` validates first)

    fn merge_item(
        &self,
        node: &mut Node,
        item: Item<'_>,
        r: &mut Reader<'_>,
        depth: usize,
        budget: &mut usize,
        grew: &mut bool,
    ) -> Result<i64, DynError> {
        match item {
            Item::Elem(Elem::Struct(si)) => self.merge_struct(node, *si, r, depth, budget, grew).map(|()| 0),
            Item::Array(m, lens) if !item.is_bytes() => {
                self.merge_array(node, m, lens, r, depth, budget, grew).map(|()| 0)
            }
            other => self.skip_item(other, r, depth, budget),
        }
    }

    fn merge_struct(
        &self,
        node: &mut Node,
        si: usize,
        r: &mut Reader<'_>,
        depth: usize,
        budget: &mut usize,
        grew: &mut bool,
    ) -> Result<(), DynError> {
        if depth > MAX_DEPTH_CHECK {
            return Err(too_deep(r));
        }
        let p = &self.plans.structs[si];
        if !matches!(node, Node::Struct(_)) {
            *node = Node::Struct(p.members.iter().map(|m| (m.name.clone(), Node::Leaf)).collect());
            *grew = true;
        }
        let Node::Struct(fields) = node else { return Ok(()) };
        let mut counts = Counts::new(p.count_slots);
        for (j, m) in p.members.iter().enumerate() {
            let mut spare = Node::Leaf;
            let field = fields.get_mut(j).map_or(&mut spare, |(_, n)| n);
            let r2 = if m.dims.is_empty() {
                self.merge_item(field, Item::Elem(&m.elem), r, depth + 1, budget, grew).map(|c| {
                    if let Some(k) = m.count_slot {
                        counts.set(k, c);
                    }
                })
            } else {
                let at = r.position();
                match lens(m, &counts) {
                    Ok(l) => {
                        self.merge_item(field, Item::Array(m, l.as_slice()), r, depth + 1, budget, grew).map(|_| ())
                    }
                    Err(e) => Err(e.with_offset(at)),
                }
            };
            r2.map_err(|e| e.in_field(&m.name))?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn merge_array(
        &self,
        node: &mut Node,
        m: &MemberPlan,
        lens: &[usize],
        r: &mut Reader<'_>,
        depth: usize,
        budget: &mut usize,
        grew: &mut bool,
    ) -> Result<(), DynError> {
        if depth > MAX_DEPTH_CHECK {
            return Err(too_deep(r));
        }
        let Some((&n, rest)) = lens.split_first() else {
            return self.merge_item(node, Item::Elem(&m.elem), r, depth, budget, grew).map(|_| ());
        };
        if !matches!(node, Node::Array(_)) {
            *node = Node::Array(Vec::new());
            *grew = true;
        }
        let Node::Array(elems) = node else { return Ok(()) };
        if let Elem::Prim(_) = m.elem {
            if rest.is_empty() {
                // Scalars: only the length matters.
                self.array::<SKIP>(m, lens, r, depth, budget, &mut Vec::new())?;
                if elems.len() < n {
                    elems.resize(n, Node::Leaf);
                    *grew = true;
                }
                return Ok(());
            }
        }
        check_elements(m, n, rest, r, budget)?;
        if elems.len() < n {
            elems.resize(n, Node::Leaf);
            *grew = true;
        }
        // A plain struct of one shape already merged at an index adds nothing there again: read past it.
        let settled = match (&m.elem, rest.is_empty()) {
            (Elem::Struct(si), true) if self.plans.structs[*si].fixed_shape => Some(*si),
            _ => None,
        };
        // The run of such elements at the front (every one, once a message as long has been merged) read past in
        // one step; if the bytes are short, the loop below reads them one by one and reports where.
        let mut first = 0;
        if let Some(si) = settled {
            let run = elems.iter().take(n).take_while(|e| matches!(e, Node::Struct(_))).count();
            if run > 0 && self.skip_plain(si, run, r, depth + 1) {
                first = run;
            }
        }
        for (i, elem) in elems.iter_mut().enumerate().take(n).skip(first) {
            let item = if rest.is_empty() { Item::Elem(&m.elem) } else { Item::Array(m, rest) };
            if let (Some(si), Node::Struct(_)) = (settled, &*elem) {
                // (Not plain, with strings in it, or not all there: walked past, not merged.)
                if !self.skip_plain(si, 1, r, depth + 1) {
                    self.skip_item(item, r, depth + 1, budget).map_err(|e| e.in_index(i))?;
                }
                continue;
            }
            self.merge_item(elem, item, r, depth + 1, budget, grew).map_err(|e| e.in_index(i))?;
        }
        Ok(())
    }

    // -----------------------------------------------------------------------------------------------------------
    // Rows

    /// Writes `item`'s cells as `node` lays them out (`None`: the item has no columns; it is only read).
    fn row_item(
        &self,
        node: Option<&Node>,
        item: Item<'_>,
        r: &mut Reader<'_>,
        depth: usize,
        budget: &mut usize,
        out: &mut Vec<u8>,
    ) -> Result<i64, DynError> {
        let Some(node) = node else { return self.skip_item(item, r, depth, budget) };
        match (node, item) {
            (Node::Leaf, Item::Elem(Elem::Prim(p))) => scalar_cell(*p, r, out, true),
            (Node::Leaf, Item::Elem(Elem::Enum)) => {
                let v = r.get_i32().map_err(decode_err)?;
                out.push(b',');
                push_int(out, v);
                Ok(0)
            }
            (Node::Leaf, Item::Array(m, lens)) if item.is_bytes() => {
                if depth > MAX_DEPTH_CHECK {
                    return Err(too_deep(r));
                }
                let bytes = r.get_bytes(lens[0]).map_err(decode_err)?;
                let _ = m;
                out.push(b',');
                push_hex(out, bytes);
                Ok(0)
            }
            (Node::Leaf, Item::Elem(Elem::Unknown(_))) => self.skip_item(item, r, depth, budget),
            (Node::Leaf, container) => {
                // A struct or an array where the shape has one column (not made by merging): its JSON, as text.
                let mut json = Vec::new();
                match container {
                    Item::Elem(e) => self.elem::<VALUE>(e, r, depth, budget, &mut json).map(|_| ())?,
                    Item::Array(m, lens) => self.array::<VALUE>(m, lens, r, depth, budget, &mut json)?,
                }
                out.push(b',');
                push_text(out, &json);
                Ok(0)
            }
            (Node::Struct(fields), Item::Elem(Elem::Struct(si))) => {
                self.row_struct(fields, *si, r, depth, budget, out).map(|()| 0)
            }
            (Node::Array(elems), Item::Array(m, lens)) if !item.is_bytes() => {
                self.row_array(elems, m, lens, r, depth, budget, out).map(|()| 0)
            }
            (other, item) => {
                let c = self.skip_item(item, r, depth, budget)?;
                other.empties(out);
                Ok(c)
            }
        }
    }

    fn row_struct(
        &self,
        fields: &[(Arc<str>, Node)],
        si: usize,
        r: &mut Reader<'_>,
        depth: usize,
        budget: &mut usize,
        out: &mut Vec<u8>,
    ) -> Result<(), DynError> {
        if depth > MAX_DEPTH_CHECK {
            return Err(too_deep(r));
        }
        let p = &self.plans.structs[si];
        let mut counts = Counts::new(p.count_slots);
        for (j, m) in p.members.iter().enumerate() {
            let node = fields.get(j).map(|(_, n)| n);
            let r2 = if m.dims.is_empty() {
                self.row_item(node, Item::Elem(&m.elem), r, depth + 1, budget, out).map(|c| {
                    if let Some(k) = m.count_slot {
                        counts.set(k, c);
                    }
                })
            } else {
                let at = r.position();
                match lens(m, &counts) {
                    Ok(l) => self.row_item(node, Item::Array(m, l.as_slice()), r, depth + 1, budget, out).map(|_| ()),
                    Err(e) => Err(e.with_offset(at)),
                }
            };
            r2.map_err(|e| e.in_field(&m.name))?;
        }
        for (_, n) in fields.iter().skip(p.members.len()) {
            n.empties(out);
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn row_array(
        &self,
        elems: &[Node],
        m: &MemberPlan,
        lens: &[usize],
        r: &mut Reader<'_>,
        depth: usize,
        budget: &mut usize,
        out: &mut Vec<u8>,
    ) -> Result<(), DynError> {
        if depth > MAX_DEPTH_CHECK {
            return Err(too_deep(r));
        }
        let Some((&n, rest)) = lens.split_first() else {
            let node = elems.first();
            return self.row_item(node, Item::Elem(&m.elem), r, depth, budget, out).map(|_| ());
        };
        if let Elem::Prim(p) = m.elem {
            if rest.is_empty() {
                return prim_cells(p, n, elems, r, out);
            }
        }
        if let (Elem::Struct(si), true) = (&m.elem, rest.is_empty()) {
            if self.plain_rows(*si, n, elems, r, depth, out) {
                return Ok(());
            }
        }
        check_elements(m, n, rest, r, budget)?;
        for i in 0..n {
            let item = if rest.is_empty() { Item::Elem(&m.elem) } else { Item::Array(m, rest) };
            self.row_item(elems.get(i), item, r, depth + 1, budget, out).map_err(|e| e.in_index(i))?;
        }
        for e in elems.iter().skip(n) {
            e.empties(out);
        }
        Ok(())
    }
}

impl Walk<'_> {
    /// Writes the cells of `n` plain structs `si` (array elements at `depth + 1`) by the struct's CSV program, if
    /// it has one, all of them are there, within the depth limit, and `elems` has a struct's columns for each:
    /// then nothing in them can be wrong, and each element's columns are every column of the struct's one shape
    /// (merging a message of a fixed-shape type makes all of them). Otherwise writes and reads nothing.
    fn plain_rows(
        &self,
        si: usize,
        n: usize,
        elems: &[Node],
        r: &mut Reader<'_>,
        depth: usize,
        out: &mut Vec<u8>,
    ) -> bool {
        let p = &self.plans.structs[si];
        let (Some(ops), Some((size, extra)), true) = (&p.csv_ops, p.plain, p.fixed_shape) else { return false };
        // (One level of margin over the walk's own checks.)
        if depth + 2 + extra > MAX_DEPTH_CHECK
            || elems.len() < n
            || !elems[..n].iter().all(|e| matches!(e, Node::Struct(_)))
        {
            return false;
        }
        let mut ahead = r.clone();
        let Some(data) = size.checked_mul(n).and_then(|len| ahead.take(len).ok()) else { return false };
        let start = out.len();
        if data.chunks_exact(size).all(|one| run_csv_ops(ops, one, out)) {
            for e in &elems[n..] {
                e.empties(out);
            }
            *r = ahead;
            true
        } else {
            out.truncate(start);
            false
        }
    }
}

/// Runs a plain struct's CSV program over its bytes (exactly its size). `false` if the program and the bytes
/// disagree, which the plans rule out; the caller then takes the walk.
fn run_csv_ops(ops: &[Op], data: &[u8], out: &mut Vec<u8>) -> bool {
    macro_rules! each {
        ($bytes:expr, $size:expr, $t:ty, $cell:expr) => {{
            for c in $bytes.chunks_exact($size) {
                out.push(b',');
                $cell(&mut *out, <$t>::from_be_bytes(c.try_into().expect("exact chunks")));
            }
        }};
    }
    // (The comma in the same copy as the text.)
    macro_rules! each_comma {
        ($bytes:expr, $size:expr, $t:ty, $cell:expr) => {{
            for c in $bytes.chunks_exact($size) {
                $cell(&mut *out, <$t>::from_be_bytes(c.try_into().expect("exact chunks")));
            }
        }};
    }
    let mut pos = 0usize;
    for op in ops {
        let (p, n) = match op {
            Op::Run(p, n) => (*p, *n),
            Op::Enums(n) => (Primitive::Int32, *n),
            Op::Hex(n) => {
                let Some(bytes) = data.get(pos..pos + n) else { return false };
                pos += n;
                out.push(b',');
                push_hex(out, bytes);
                continue;
            }
            Op::Short(..) | Op::Lit(_) | Op::Base64(_) => return false,
        };
        let Some(size) = p.wire_size() else { return false };
        let Some(bytes) = size.checked_mul(n).and_then(|len| data.get(pos..pos + len)) else { return false };
        pos += bytes.len();
        match p {
            Primitive::Int8 => each!(bytes, 1, i8, push_int::<i8>),
            Primitive::Int16 => each!(bytes, 2, i16, push_int::<i16>),
            Primitive::Int32 => each!(bytes, 4, i32, push_int::<i32>),
            Primitive::Int64 => each!(bytes, 8, i64, push_int::<i64>),
            Primitive::Byte => each!(bytes, 1, u8, push_int::<u8>),
            Primitive::Float => each_comma!(bytes, 4, f32, comma_cell_f32),
            Primitive::Double => each!(bytes, 8, f64, cell_f64),
            Primitive::Boolean => {
                for &b in bytes {
                    out.extend_from_slice(if b != 0 { b",true" } else { b",false" });
                }
            }
            Primitive::String => return false,
        }
    }
    pos == data.len()
}

/// The depth limit (named here so the checks read as the tree decoder's).
const MAX_DEPTH_CHECK: usize = crate::dynamic::MAX_DEPTH;

/// The tree decoder's check before `n` elements that are not primitive scalars.
fn check_elements(
    m: &MemberPlan,
    n: usize,
    rest: &[usize],
    r: &Reader<'_>,
    budget: &mut usize,
) -> Result<(), DynError> {
    let sub_min = rest.iter().fold(m.elem_min, |a, &l| a.saturating_mul(l));
    if sub_min == 0 {
        if n > *budget {
            return Err(DynError::new(
                DynErrorKind::TooManyEmptyElements { limit: MAX_EMPTY_ELEMENTS },
                Some(r.position()),
            ));
        }
        *budget -= n;
        Ok(())
    } else {
        r.ensure_elements(n, sub_min).map_err(decode_err)
    }
}

/// The cells of the last dimension of a primitive array (not `byte`: that is one hex cell), laid out by `elems`.
fn prim_cells(p: Primitive, n: usize, elems: &[Node], r: &mut Reader<'_>, out: &mut Vec<u8>) -> Result<(), DynError> {
    macro_rules! bulk {
        ($size:expr, $t:ty, $cell:expr) => {{
            let bytes = r.take_array(n, $size).map_err(decode_err)?;
            for (node, c) in elems.iter().zip(bytes.chunks_exact($size)) {
                if let Node::Leaf = node {
                    out.push(b',');
                    $cell(&mut *out, <$t>::from_be_bytes(c.try_into().expect("exact chunks")));
                } else {
                    node.empties(out);
                }
            }
        }};
    }
    // (The comma in the same copy as the text.)
    macro_rules! bulk_comma {
        ($size:expr, $t:ty, $cell:expr) => {{
            let bytes = r.take_array(n, $size).map_err(decode_err)?;
            for (node, c) in elems.iter().zip(bytes.chunks_exact($size)) {
                if let Node::Leaf = node {
                    $cell(&mut *out, <$t>::from_be_bytes(c.try_into().expect("exact chunks")));
                } else {
                    node.empties(out);
                }
            }
        }};
    }
    match p {
        Primitive::Int8 => bulk!(1, i8, push_int::<i8>),
        Primitive::Int16 => bulk!(2, i16, push_int::<i16>),
        Primitive::Int32 => bulk!(4, i32, push_int::<i32>),
        Primitive::Int64 => bulk!(8, i64, push_int::<i64>),
        Primitive::Byte => bulk!(1, u8, push_int::<u8>),
        Primitive::Float => bulk_comma!(4, f32, comma_cell_f32),
        Primitive::Double => bulk!(8, f64, cell_f64),
        Primitive::Boolean => {
            let bytes = r.take_array(n, 1).map_err(decode_err)?;
            for (node, &b) in elems.iter().zip(bytes) {
                if let Node::Leaf = node {
                    out.extend_from_slice(if b != 0 { b",true" } else { b",false" });
                } else {
                    node.empties(out);
                }
            }
        }
        Primitive::String => {
            r.ensure_elements(n, 5).map_err(decode_err)?;
            for i in 0..n {
                let node = elems.get(i);
                let s = r.get_str().map_err(|e| decode_err(e).in_index(i))?;
                match node {
                    Some(Node::Leaf) => {
                        out.push(b',');
                        push_text(out, s.as_bytes());
                    }
                    Some(other) => other.empties(out),
                    None => {}
                }
            }
        }
    }
    for e in elems.iter().skip(n) {
        e.empties(out);
    }
    Ok(())
}

impl Transcoder {
    /// Grows `shape` with the columns the message in `bytes` needs, if it decodes (checked first, so a message that
    /// does not decode changes nothing): the type, or [`Registry::decode`](crate::Registry::decode)'s error.
    pub fn csv_merge<'s>(&'s self, bytes: &[u8], shape: &mut CsvShape) -> Result<&'s Struct, RegistryError> {
        self.csv_merge_grew(bytes, shape).map(|(st, _)| st)
    }

    /// [`Transcoder::csv_merge`], and whether `shape` grew (its columns are not what they were): a row made with
    /// the shape as it was would lack cells this message has.
    pub fn csv_merge_grew<'s>(
        &'s self,
        bytes: &[u8],
        shape: &mut CsvShape,
    ) -> Result<(&'s Struct, bool), RegistryError> {
        let (st, si) =
            self.run(bytes, |w, si, r, budget| w.structure::<SKIP>(si, r, 1, budget, &mut Vec::new()).map(|()| si))?;
        if shape.settled_for == Some(si) {
            return Ok((st, false));
        }
        let mut grew = false;
        self.run(bytes, |w, si, r, budget| w.merge_struct(&mut shape.root, si, r, 1, budget, &mut grew))?;
        if self.plans.structs[si].fixed_shape {
            shape.settled_for = Some(si);
        }
        Ok((st, grew))
    }

    /// Appends the message's cells in `shape`'s column order, each after a comma (empty past the end of a shorter
    /// array; anything the shape has no column for is left out). On error `out` is left as it was and the error is
    /// [`Registry::decode`](crate::Registry::decode)'s.
    pub fn csv_row<'s>(
        &'s self,
        bytes: &[u8],
        shape: &CsvShape,
        out: &mut Vec<u8>,
    ) -> Result<&'s Struct, RegistryError> {
        let start = out.len();
        let res = self.run(bytes, |w, si, r, budget| match &shape.root {
            Node::Struct(fields) => w.row_struct(fields, si, r, 1, budget, out),
            Node::Leaf => {
                // Never merged: the whole message is one cell of JSON.
                let mut json = Vec::new();
                w.structure::<VALUE>(si, r, 1, budget, &mut json)?;
                out.push(b',');
                push_text(out, &json);
                Ok(())
            }
            Node::Array(elems) => {
                w.structure::<SKIP>(si, r, 1, budget, &mut Vec::new())?;
                elems.iter().for_each(|e| e.empties(out));
                Ok(())
            }
        });
        match res {
            Ok((st, ())) => Ok(st),
            Err(e) => {
                out.truncate(start);
                // The errors are the tree decoder's; `validate` is the walk the tests hold to that.
                Err(self.validate(bytes).err().unwrap_or(e))
            }
        }
    }
}
