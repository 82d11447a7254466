//! Per-type plans for the transcoder, compiled once from the checked schema: for each struct its members in wire
//! order, each with its element kind (primitive, enum, struct by index), its dimensions (fixed, or the slot of the
//! earlier integer member that gives the length), its JSON key already escaped, and the least encoded size of one
//! element (for the count checks the tree decoder makes).

use std::collections::HashMap;
use std::sync::Arc;

use super::num::push_json_str;
use crate::layout::Layout;
use crate::model::{Dim, MemberType, Primitive, Schema, TypeName};

/// What one element of a member is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Elem {
    Prim(Primitive),
    /// A (deprecated) enum: an int32 on the wire, its value in the text.
    Enum,
    /// A struct of the schema, by index.
    Struct(usize),
    /// A struct the schema does not have (the tree decoder reports it when it gets there).
    Unknown(String),
}

/// Where one dimension's length comes from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DimPlan {
    Fixed(usize),
    /// An earlier integer member of the same struct, by count slot.
    Count {
        slot: usize,
        member: String,
    },
    /// A count member that is not an earlier integer scalar: the tree decoder reports it missing.
    Missing {
        member: String,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct MemberPlan {
    pub(crate) name: Arc<str>,
    /// `"name":`, escaped as the tree path escapes it.
    pub(crate) key: Box<[u8]>,
    pub(crate) elem: Elem,
    /// The least encoded size of one element (as `Layout::elem_min_size`).
    pub(crate) elem_min: usize,
    pub(crate) dims: Box<[DimPlan]>,
    /// Where this member's value is kept when later members use it as a count.
    pub(crate) count_slot: Option<usize>,
}

impl MemberPlan {
    /// Whether this is a `byte` array (written as bytes, not as numbers one by one).
    pub(crate) fn is_byte_array(&self) -> bool {
        !self.dims.is_empty() && self.elem == Elem::Prim(Primitive::Byte)
    }
}

#[derive(Debug, Clone)]
pub(crate) struct StructPlan {
    /// The full name (the root of error paths), escaped as a JSON string too.
    pub(crate) full: String,
    pub(crate) full_json: Box<[u8]>,
    pub(crate) fingerprint: u64,
    pub(crate) members: Box<[MemberPlan]>,
    pub(crate) count_slots: usize,
    /// No message of this type can have a different CSV shape from another: no variable dimension (other than
    /// the last of a byte array, which is one cell) in it or in the structs it holds, and no recursion.
    pub(crate) fixed_shape: bool,
    /// For a struct whose every message is the same number of bytes, none of which can be wrong (primitives other
    /// than strings, enums, such structs, in arrays of fixed non-zero lengths): that size, and how many levels
    /// below the struct's own the tree decoder's depth checks reach. Reading past one needs only a length check.
    pub(crate) plain: Option<(usize, usize)>,
    /// For a plain struct of not too many parts, its JSON as a program: `[VALUE form, FLAT form]`.
    pub(crate) ops: Option<[Box<[Op]>; 2]>,
    /// For a plain struct of not too many parts, its CSV cells (every column of its one shape) as a program of
    /// `Run`, `Enums` and `Hex` steps, each value a cell after a comma.
    pub(crate) csv_ops: Option<Box<[Op]>>,
}

/// One step of writing a plain struct's JSON straight from its bytes: every value is at a fixed place, so the text
/// is literal pieces between runs of values.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// Literal text of at most 24 bytes (braces, keys, brackets, commas), and its length.
    Short([u8; 24], u8),
    /// Longer literal text.
    Lit(Box<[u8]>),
    /// `n` values of a primitive (not a string), comma-separated.
    Run(Primitive, usize),
    /// `n` enum values, comma-separated.
    Enums(usize),
    /// `n` bytes as base64 (a FLAT byte array; the quotes are literal).
    Base64(usize),
    /// `n` bytes as one CSV cell of hex, after a comma (a byte array's last dimension).
    Hex(usize),
}

/// The most steps a plain struct's program may have (beyond, the walk writes it).
const MAX_OPS: usize = 4096;

/// Builds a program, merging adjacent literal text.
struct Program {
    ops: Vec<Op>,
    lit: Vec<u8>,
}

impl Program {
    fn lit(&mut self, b: &[u8]) {
        self.lit.extend_from_slice(b);
    }
    fn op(&mut self, op: Op) -> Option<()> {
        self.end_lit();
        self.ops.push(op);
        (self.ops.len() <= MAX_OPS).then_some(())
    }
    fn end_lit(&mut self) {
        if !self.lit.is_empty() {
            let lit = std::mem::take(&mut self.lit);
            self.ops.push(if lit.len() <= 24 {
                let mut a = [0u8; 24];
                a[..lit.len()].copy_from_slice(&lit);
                Op::Short(a, lit.len() as u8)
            } else {
                Op::Lit(lit.into())
            });
        }
    }
}

/// The plans of every struct of a schema, with the index by name the tree decoder uses (the first struct of a
/// name) and by fingerprint.
#[derive(Debug, Clone)]
pub(crate) struct Plans {
    pub(crate) structs: Vec<StructPlan>,
    pub(crate) by_name: HashMap<TypeName, usize>,
}

fn is_integer(p: Primitive) -> bool {
    matches!(p, Primitive::Int8 | Primitive::Int16 | Primitive::Int32 | Primitive::Int64 | Primitive::Byte)
}

impl Plans {
    pub(crate) fn new(schema: &Schema) -> Plans {
        let layout = Layout::new(schema);
        let mut by_name = HashMap::new();
        for (i, s) in schema.structs.iter().enumerate() {
            by_name.entry(s.name.clone()).or_insert(i);
        }
        let mut structs = Vec::with_capacity(schema.structs.len());
        for s in &schema.structs {
            // Count slots: members that a later member's dimension names, when they are integer scalars.
            let mut slots: HashMap<&str, usize> = HashMap::new();
            let mut members = Vec::with_capacity(s.members.len());
            for (j, m) in s.members.iter().enumerate() {
                let elem = match &m.ty {
                    MemberType::Primitive(p) => Elem::Prim(*p),
                    MemberType::Enum(_) => Elem::Enum,
                    MemberType::Struct(n) => match by_name.get(n) {
                        Some(&i) => Elem::Struct(i),
                        None => Elem::Unknown(n.full()),
                    },
                };
                let dims = m
                    .dims
                    .iter()
                    .map(|d| match d {
                        Dim::Fixed { len, .. } => DimPlan::Fixed(*len),
                        Dim::Variable { member } => {
                            // The tree decoder looks the count up among the members already decoded, by name, and
                            // takes it only if it is an integer.
                            let earlier = s.members[..j].iter().find(|e| e.name == *member);
                            match earlier {
                                Some(e) if e.dims.is_empty() && e.ty.primitive().is_some_and(is_integer) => {
                                    let n = slots.len();
                                    let slot = *slots.entry(e.name.as_str()).or_insert(n);
                                    DimPlan::Count { slot, member: member.clone() }
                                }
                                _ => DimPlan::Missing { member: member.clone() },
                            }
                        }
                    })
                    .collect();
                let mut key = Vec::new();
                push_json_str(&mut key, &m.name);
                key.push(b':');
                members.push(MemberPlan {
                    name: Arc::from(m.name.as_str()),
                    key: key.into(),
                    elem,
                    elem_min: layout.elem_min_size(&m.ty),
                    dims,
                    count_slot: None,
                });
            }
            for m in &mut members {
                m.count_slot = slots.get(&*m.name).copied();
            }
            let full = s.name.full();
            let mut full_json = Vec::new();
            push_json_str(&mut full_json, &full);
            structs.push(StructPlan {
                full,
                full_json: full_json.into(),
                fingerprint: s.fingerprint,
                count_slots: slots.len(),
                members: members.into(),
                fixed_shape: false,
                plain: None,
                ops: None,
                csv_ops: None,
            });
        }
        let mut plans = Plans { structs, by_name };
        for i in 0..plans.structs.len() {
            let fixed = plans.shape_is_fixed(i, &mut Vec::new());
            plans.structs[i].fixed_shape = fixed;
            let plain = plans.plain(i, &mut Vec::new());
            plans.structs[i].plain = plain;
        }
        for i in 0..plans.structs.len() {
            if plans.structs[i].plain.is_some() {
                let value = plans.program(i, false);
                let flat = plans.program(i, true);
                if let (Some(v), Some(f)) = (value, flat) {
                    plans.structs[i].ops = Some([v, f]);
                }
                plans.structs[i].csv_ops = plans.csv_program(i);
            }
        }
        plans
    }

    /// The JSON program of a plain struct (`None` past [`MAX_OPS`] steps).
    fn program(&self, si: usize, flat: bool) -> Option<Box<[Op]>> {
        let mut p = Program { ops: Vec::new(), lit: Vec::new() };
        self.program_struct(si, flat, &mut p)?;
        p.end_lit();
        (p.ops.len() <= MAX_OPS).then(|| p.ops.into())
    }

    /// A plain struct's CSV cells in wire order, as the walk (`row_struct`) writes them for the struct's one shape:
    /// a cell per value, one of hex per last dimension of a byte array.
    fn csv_program(&self, si: usize) -> Option<Box<[Op]>> {
        let mut p = Program { ops: Vec::new(), lit: Vec::new() };
        self.csv_struct(si, &mut p)?;
        (p.ops.len() <= MAX_OPS).then(|| p.ops.into())
    }

    fn csv_struct(&self, si: usize, p: &mut Program) -> Option<()> {
        for m in self.structs[si].members.iter() {
            let mut total = 1usize;
            for d in m.dims.iter() {
                match d {
                    DimPlan::Fixed(n) => total = total.checked_mul(*n)?,
                    _ => return None,
                }
            }
            match (&m.elem, m.dims.last()) {
                (Elem::Prim(Primitive::Byte), Some(DimPlan::Fixed(last))) if *last > 0 => {
                    for _ in 0..total / last {
                        p.op(Op::Hex(*last))?;
                    }
                }
                (Elem::Prim(Primitive::String) | Elem::Unknown(_), _) => return None,
                (Elem::Prim(prim), _) => p.op(Op::Run(*prim, total))?,
                (Elem::Enum, _) => p.op(Op::Enums(total))?,
                (Elem::Struct(i), _) => {
                    for _ in 0..total {
                        self.csv_struct(*i, p)?;
                    }
                }
            }
        }
        Some(())
    }

    fn program_struct(&self, si: usize, flat: bool, p: &mut Program) -> Option<()> {
        p.lit(b"{");
        for (j, m) in self.structs[si].members.iter().enumerate() {
            if j > 0 {
                p.lit(b",");
            }
            p.lit(&m.key);
            let lens: Vec<usize> = m
                .dims
                .iter()
                .map(|d| match d {
                    DimPlan::Fixed(n) => Some(*n),
                    _ => None,
                })
                .collect::<Option<_>>()?;
            let total: usize = lens.iter().product();
            if lens.is_empty() {
                self.program_elems(&m.elem, 1, flat, p)?;
            } else if flat && m.elem == Elem::Prim(Primitive::Byte) {
                p.lit(b"\"");
                p.op(Op::Base64(total))?;
                p.lit(b"\"");
            } else if flat {
                p.lit(b"[");
                self.program_elems(&m.elem, total, flat, p)?;
                p.lit(b"]");
            } else {
                self.program_nested(&m.elem, &lens, p)?;
            }
        }
        p.lit(b"}");
        Some(())
    }

    /// `n` elements, comma-separated.
    fn program_elems(&self, e: &Elem, n: usize, flat: bool, p: &mut Program) -> Option<()> {
        match e {
            Elem::Prim(Primitive::String) | Elem::Unknown(_) => None,
            Elem::Prim(prim) => p.op(Op::Run(*prim, n)),
            Elem::Enum => p.op(Op::Enums(n)),
            Elem::Struct(i) => {
                for k in 0..n {
                    if k > 0 {
                        p.lit(b",");
                    }
                    self.program_struct(*i, flat, p)?;
                }
                Some(())
            }
        }
    }

    /// Nested arrays (the VALUE form) of the given lengths.
    fn program_nested(&self, e: &Elem, lens: &[usize], p: &mut Program) -> Option<()> {
        let (&n, rest) = lens.split_first()?;
        p.lit(b"[");
        if rest.is_empty() {
            self.program_elems(e, n, false, p)?;
        } else {
            for k in 0..n {
                if k > 0 {
                    p.lit(b",");
                }
                self.program_nested(e, rest, p)?;
            }
        }
        p.lit(b"]");
        Some(())
    }

    /// `(size, depth below)` of a plain struct (see [`StructPlan::plain`]).
    fn plain(&self, si: usize, path: &mut Vec<usize>) -> Option<(usize, usize)> {
        if path.contains(&si) {
            return None;
        }
        path.push(si);
        let mut size = 0usize;
        let mut extra = 0usize;
        for m in self.structs[si].members.iter() {
            let mut count = 1usize;
            for d in m.dims.iter() {
                match d {
                    DimPlan::Fixed(n) if *n > 0 => count = count.checked_mul(*n)?,
                    _ => {
                        path.pop();
                        return None;
                    }
                }
            }
            let (elem_size, elem_extra) = match &m.elem {
                Elem::Prim(Primitive::String) | Elem::Unknown(_) => (None, 0),
                Elem::Prim(p) => (p.wire_size(), 0),
                Elem::Enum => (Some(4), 0),
                Elem::Struct(i) => match self.plain(*i, path) {
                    Some((s, x)) => (Some(s), 1 + x),
                    None => (None, 0),
                },
            };
            let Some(elem_size) = elem_size else {
                path.pop();
                return None;
            };
            size = size.checked_add(elem_size.checked_mul(count)?)?;
            extra = extra.max(m.dims.len() + elem_extra);
        }
        path.pop();
        (size > 0).then_some((size, extra))
    }

    fn shape_is_fixed(&self, si: usize, path: &mut Vec<usize>) -> bool {
        if path.contains(&si) {
            return false;
        }
        path.push(si);
        let fixed = self.structs[si].members.iter().all(|m| {
            let n = m.dims.len();
            let dims_fixed =
                m.dims.iter().enumerate().all(|(k, d)| {
                    matches!(d, DimPlan::Fixed(_)) || (k + 1 == n && m.elem == Elem::Prim(Primitive::Byte))
                });
            dims_fixed
                && match m.elem {
                    Elem::Struct(i) => self.shape_is_fixed(i, path),
                    _ => true,
                }
        });
        path.pop();
        fixed
    }
}
