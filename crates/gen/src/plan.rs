//! What every generator needs to know about a struct's encoding, computed once from the checked types: the kind of
//! each member's element, its fixed size and count, the runs of consecutive fixed-size members that are
//! bounds-checked once, and whether arrays of the struct can be decoded with one byte shuffle per element. The
//! backends turn a [`StructPlan`] into text; none of them classifies members on its own, so that a new backend
//! cannot disagree with the others about the wire format.

use nerve_types::{Dim, Layout, Member, MemberType, Primitive, Struct};

/// How one element of a member is marshalled, whatever the language.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Elem {
    /// A primitive other than string.
    Prim(Primitive),
    /// A string.
    Str,
    /// An enum (an int32 on the wire).
    Enum,
    /// A struct, with its encoded size if every value has the same one, and the fewest bytes it takes (which
    /// struct is the backend's to name, from the member's type).
    Struct { fixed: Option<usize>, min: usize },
}

impl Elem {
    /// Classifies an element type.
    pub(crate) fn of(layout: &Layout, ty: &MemberType) -> Elem {
        match ty {
            MemberType::Primitive(Primitive::String) => Elem::Str,
            MemberType::Primitive(p) => Elem::Prim(*p),
            MemberType::Enum(_) => Elem::Enum,
            MemberType::Struct(n) => Elem::Struct { fixed: layout.fixed_size(n), min: layout.min_size(n) },
        }
    }

    /// The encoded size of one element, if fixed.
    pub(crate) fn fixed(&self) -> Option<usize> {
        match self {
            Elem::Prim(p) => p.wire_size(),
            Elem::Str => None,
            Elem::Enum => Some(4),
            Elem::Struct { fixed, .. } => *fixed,
        }
    }

    /// The fewest bytes one element takes (a string: its length and its terminating zero).
    pub(crate) fn min(&self) -> usize {
        match self {
            Elem::Str => 5,
            Elem::Struct { min, .. } => *min,
            _ => self.fixed().unwrap_or(0),
        }
    }
}

/// One member of a struct, classified.
pub(crate) struct MemberPlan {
    /// Its element kind.
    pub elem: Elem,
    /// The encoded size of the whole member, if fixed (every dimension fixed and a fixed-size element).
    pub fixed: Option<usize>,
    /// The product of its fixed dimensions (1 for a scalar; variable dimensions count as 1).
    pub fixed_count: usize,
}

/// A run of consecutive fixed-size members (with their total encoded size), or one variable-size member.
pub(crate) enum Seg<'m, T> {
    /// Members of fixed size, bounds-checked once for all of them.
    Run(&'m [T], usize),
    /// A member whose size depends on its value.
    Var(&'m T),
}

/// One member of a struct whose arrays decode with one byte shuffle per element.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ShuffleField {
    /// Its index among the struct's members.
    pub member: usize,
    /// Its offset in the encoded body.
    pub offset: usize,
    /// The wire size of one of its numbers.
    pub elem_size: usize,
    /// How many numbers it holds.
    pub count: usize,
}

/// The byte shuffle an array of a small fixed-size struct can take: every member a number, a boolean or a fixed
/// array of them, and the encoded body at most 16 bytes (one SSE register). Each backend adds its own conditions.
pub(crate) struct Shuffle {
    /// The members in order.
    pub fields: Vec<ShuffleField>,
    /// Whether any member is a boolean (whose in-memory representation not every language lets any byte fill).
    pub has_bool: bool,
}

/// The plan of one struct.
pub(crate) struct StructPlan {
    /// The members in declaration order.
    pub members: Vec<MemberPlan>,
    /// The encoded body size if every value has the same one.
    pub fixed: Option<usize>,
    /// The fewest bytes a body takes.
    pub min: usize,
    /// Where the members' runs and variable members are, by member index.
    runs: Vec<(std::ops::Range<usize>, Option<usize>)>,
    /// Set when arrays of this struct may decode by byte shuffle.
    pub shuffle: Option<Shuffle>,
}

impl StructPlan {
    /// Plans `s`.
    pub(crate) fn new(layout: &Layout, s: &Struct) -> StructPlan {
        let members: Vec<MemberPlan> = s
            .members
            .iter()
            .map(|m| MemberPlan {
                elem: Elem::of(layout, &m.ty),
                fixed: layout.member_fixed_size(m),
                fixed_count: fixed_count(m),
            })
            .collect();
        let mut runs: Vec<(std::ops::Range<usize>, Option<usize>)> = Vec::new();
        for (i, m) in members.iter().enumerate() {
            match (m.fixed, runs.last_mut()) {
                (Some(n), Some((r, Some(total)))) => {
                    r.end = i + 1;
                    *total += n;
                }
                (Some(n), _) => runs.push((i..i + 1, Some(n))),
                (None, _) => runs.push((i..i + 1, None)),
            }
        }
        let fixed = layout.fixed_size(&s.name);
        let shuffle = fixed.filter(|&size| size <= 16).and_then(|_| shuffle(&members));
        StructPlan { members, fixed, min: layout.min_size(&s.name), runs, shuffle }
    }

    /// The runs of fixed-size members and the variable members between them, over the backend's own view of the
    /// members (`items[i]` stands for member `i`).
    pub(crate) fn segments<'m, T>(&self, items: &'m [T]) -> Vec<Seg<'m, T>> {
        assert_eq!(items.len(), self.members.len(), "one item per member");
        self.runs
            .iter()
            .map(|(r, size)| match size {
                Some(size) => Seg::Run(&items[r.clone()], *size),
                None => Seg::Var(&items[r.start]),
            })
            .collect()
    }

    /// The offset of each member in the encoded body, for every member up to and including the first one of
    /// variable size (those after it have none).
    pub(crate) fn const_offsets(&self) -> Vec<Option<usize>> {
        let mut out = Vec::new();
        let mut off = Some(0usize);
        for m in &self.members {
            out.push(off);
            off = off.zip(m.fixed).map(|(o, sz)| o + sz);
        }
        out
    }
}

/// The product of a member's fixed dimensions (1 for a scalar; variable dimensions count as 1): the element
/// count of a member whose dimensions are all fixed.
pub(crate) fn fixed_count(m: &Member) -> usize {
    m.dims.iter().map(|d| if let Dim::Fixed { len, .. } = d { *len } else { 1 }).product()
}

fn shuffle(members: &[MemberPlan]) -> Option<Shuffle> {
    let mut fields = Vec::new();
    let mut has_bool = false;
    let mut offset = 0;
    for (i, m) in members.iter().enumerate() {
        let (Elem::Prim(p), Some(bytes)) = (m.elem, m.fixed) else { return None };
        has_bool |= p == Primitive::Boolean;
        let elem_size = p.wire_size()?;
        fields.push(ShuffleField { member: i, offset, elem_size, count: m.fixed_count });
        offset += bytes;
    }
    Some(Shuffle { fields, has_bool })
}
