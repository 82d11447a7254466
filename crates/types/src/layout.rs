//! Encoded sizes known from the declarations alone: which types have a fixed encoded size, and the least number of
//! bytes any value of a type takes. Generators use the first for constant-time views and bulk copies; decoders use
//! the second to reject a count before allocating for it.

use std::collections::HashMap;

use crate::model::{Dim, Member, MemberType, Primitive, Schema, TypeName};

/// Encoded sizes of every struct in a schema.
#[derive(Debug, Clone)]
pub struct Layout {
    fixed: HashMap<TypeName, Option<usize>>,
    min: HashMap<TypeName, usize>,
}

/// Bytes one element of `ty` takes at the least (a string takes at least its length and NUL).
fn min_elem(ty: &MemberType, min: &HashMap<TypeName, usize>) -> usize {
    match ty {
        MemberType::Primitive(Primitive::String) => 5,
        MemberType::Primitive(p) => p.wire_size().expect("non-string primitives have a size"),
        MemberType::Enum(_) => 4,
        MemberType::Struct(n) => min.get(n).copied().unwrap_or(0),
    }
}

impl Layout {
    /// Computes the sizes for every struct in `schema`.
    pub fn new(schema: &Schema) -> Layout {
        // Least sizes: iterate to a fixed point from 0, which also settles recursive types (whose recursive
        // members are in variable arrays that may be empty, so they add nothing to the least size).
        let mut min: HashMap<TypeName, usize> = schema.structs.iter().map(|s| (s.name.clone(), 0)).collect();
        for _ in 0..=schema.structs.len() {
            let mut changed = false;
            for s in &schema.structs {
                let size = s.members.iter().map(|m| member_min(m, &min)).fold(0usize, usize::saturating_add);
                if min.get(&s.name) != Some(&size) {
                    min.insert(s.name.clone(), size);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let mut fixed = HashMap::new();
        for s in &schema.structs {
            fixed_size(schema, &s.name, &mut fixed, &mut Vec::new());
        }
        Layout { fixed, min }
    }

    /// The encoded body size of `name` if every value has the same size (no strings, no variable arrays, no
    /// recursion), else `None`.
    pub fn fixed_size(&self, name: &TypeName) -> Option<usize> {
        self.fixed.get(name).copied().flatten()
    }

    /// The fewest bytes any body of `name` takes.
    pub fn min_size(&self, name: &TypeName) -> usize {
        self.min.get(name).copied().unwrap_or(0)
    }

    /// The fixed encoded size of one element of a member's type, if it has one.
    pub fn elem_fixed_size(&self, ty: &MemberType) -> Option<usize> {
        match ty {
            MemberType::Primitive(p) => p.wire_size(),
            MemberType::Enum(_) => Some(4),
            MemberType::Struct(n) => self.fixed_size(n),
        }
    }

    /// The fewest bytes one element of a member's type takes.
    pub fn elem_min_size(&self, ty: &MemberType) -> usize {
        min_elem(ty, &self.min)
    }

    /// The fixed encoded size of a whole member (all its elements), if it has one.
    pub fn member_fixed_size(&self, m: &Member) -> Option<usize> {
        let elem = self.elem_fixed_size(&m.ty)?;
        m.dims.iter().try_fold(elem, |acc, d| match d {
            Dim::Fixed { len, .. } => acc.checked_mul(*len),
            Dim::Variable { .. } => None,
        })
    }
}

fn member_min(m: &Member, min: &HashMap<TypeName, usize>) -> usize {
    let elem = min_elem(&m.ty, min);
    m.dims.iter().fold(elem, |acc, d| match d {
        Dim::Fixed { len, .. } => acc.saturating_mul(*len),
        Dim::Variable { .. } => 0,
    })
}

fn fixed_size(
    schema: &Schema,
    name: &TypeName,
    memo: &mut HashMap<TypeName, Option<usize>>,
    path: &mut Vec<TypeName>,
) -> Option<usize> {
    if let Some(v) = memo.get(name) {
        return *v;
    }
    if path.contains(name) {
        return None;
    }
    let st = schema.struct_named(name)?;
    path.push(name.clone());
    let mut total = Some(0usize);
    for m in &st.members {
        let elem = match &m.ty {
            MemberType::Primitive(p) => p.wire_size(),
            MemberType::Enum(_) => Some(4),
            MemberType::Struct(n) => fixed_size(schema, n, memo, path),
        };
        let size = m.dims.iter().try_fold(elem, |acc, d| match (acc, d) {
            (Some(a), Dim::Fixed { len, .. }) => Some(a.checked_mul(*len)),
            _ => None,
        });
        total = match (total, size.flatten()) {
            (Some(t), Some(s)) => t.checked_add(s),
            _ => None,
        };
    }
    path.pop();
    memo.insert(name.clone(), total);
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{check, Source};

    fn layout(text: &str) -> (Schema, Layout) {
        let c = check(&[Source { path: "t.lcm".into(), text: text.into() }], &[]).unwrap();
        let l = Layout::new(&c.schema);
        (c.schema, l)
    }

    #[test]
    fn sizes() {
        let (_, l) = layout(
            "struct p_t { float position[3]; byte intensity; }
             struct l_t { int64_t t; int32_t n; p_t points[n]; string s; }
             struct node_t { int32_t n; node_t c[n]; }",
        );
        assert_eq!(l.fixed_size(&TypeName::parse("p_t")), Some(13));
        assert_eq!(l.fixed_size(&TypeName::parse("l_t")), None);
        assert_eq!(l.min_size(&TypeName::parse("l_t")), 8 + 4 + 5);
        assert_eq!(l.fixed_size(&TypeName::parse("node_t")), None);
        assert_eq!(l.min_size(&TypeName::parse("node_t")), 4);
    }
}
