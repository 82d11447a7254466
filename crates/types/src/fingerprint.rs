//! Fingerprints, exactly as lcm-gen 1.5.3 computes them (spec sections 1.6, 2.1 and 2.2).
//!
//! The arithmetic is deliberately LCM's: a signed 64-bit value, an arithmetic right shift, and bytes added as
//! x86-64's signed `char`. Changing any of it changes every fingerprint.

use std::collections::HashMap;

use crate::model::{Dim, Enum, MemberType, Schema, Struct, TypeName};

fn update(v: i64, c: i8) -> i64 {
    ((v << 8) ^ (v >> 55)).wrapping_add(c as i64)
}

fn update_str(mut v: i64, s: &str) -> i64 {
    v = update(v, s.len() as u8 as i8);
    for &b in s.as_bytes() {
        v = update(v, b as i8);
    }
    v
}

/// K(T): the hash of one struct's declaration, without the types it contains.
pub fn base_hash(st: &Struct) -> u64 {
    let mut v: i64 = 0x12345678;
    for m in &st.members {
        v = update_str(v, &m.name);
        if let MemberType::Primitive(p) = &m.ty {
            v = update_str(v, p.lcm_name());
        }
        v = update(v, m.dims.len() as u8 as i8);
        for d in &m.dims {
            v = update(v, if matches!(d, Dim::Fixed { .. }) { 0 } else { 1 });
            v = update_str(v, d.hash_text());
        }
    }
    v as u64
}

/// The hash of an enum, which is also what it adds to a struct that contains it.
pub fn enum_hash(e: &Enum) -> u64 {
    update_str(0x87654321, &e.name.name) as u64
}

/// The fingerprint computation gave up: the type graph has so many distinct recursive paths that following them
/// all (as LCM's definition requires) would not finish in reasonable time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooComplex {
    /// The struct whose fingerprint could not be computed.
    pub name: TypeName,
}

/// How many steps the fingerprint computation may take in all before it gives up.
const STEP_BUDGET: usize = 5_000_000;

/// Computes every struct's base hash and fingerprint and every enum's hash, in place.
///
/// Member types must already be resolved (`check` does that); a name that resolves to nothing adds 0.
pub fn assign(schema: &mut Schema) -> Result<(), TooComplex> {
    for e in &mut schema.enums {
        e.hash = enum_hash(e);
    }
    for s in &mut schema.structs {
        s.base_hash = base_hash(s);
    }
    let mut walk = Walk::new(schema);
    let mut fingerprints = Vec::with_capacity(schema.structs.len());
    for i in 0..schema.structs.len() {
        match walk.fingerprint(i, &mut Vec::new()) {
            Some(f) => fingerprints.push(f),
            None => return Err(TooComplex { name: schema.structs[i].name.clone() }),
        }
    }
    for (s, f) in schema.structs.iter_mut().zip(fingerprints) {
        s.fingerprint = f;
    }
    Ok(())
}

/// The state of the recursive F(T) computation.
///
/// F(T, path) depends only on the part of the path that T can reach, so results are memoised on (T, that part):
/// without this a diamond-shaped graph of nested types takes exponential time.
struct Walk<'a> {
    schema: &'a Schema,
    /// Per struct: the structs each member refers to (None for primitives), and the enum hashes added.
    children: Vec<Vec<usize>>,
    enum_sum: Vec<u64>,
    /// Per struct: every struct reachable from it, itself included if it is on a cycle.
    reach: Vec<Vec<bool>>,
    memo: HashMap<(usize, Vec<usize>), u64>,
    steps: usize,
}

impl<'a> Walk<'a> {
    fn new(schema: &'a Schema) -> Walk<'a> {
        let index: HashMap<&TypeName, usize> = schema.structs.iter().enumerate().map(|(i, s)| (&s.name, i)).collect();
        let enums: HashMap<&TypeName, u64> = schema.enums.iter().map(|e| (&e.name, e.hash)).collect();
        let mut children = Vec::new();
        let mut enum_sum = Vec::new();
        for s in &schema.structs {
            let mut kids = Vec::new();
            let mut sum = 0u64;
            for m in &s.members {
                match &m.ty {
                    MemberType::Primitive(_) => {}
                    MemberType::Enum(name) => sum = sum.wrapping_add(enums.get(name).copied().unwrap_or(0)),
                    MemberType::Struct(name) => kids.extend(index.get(name).copied()),
                }
            }
            children.push(kids);
            enum_sum.push(sum);
        }
        let n = schema.structs.len();
        let reach = (0..n)
            .map(|start| {
                let mut seen = vec![false; n];
                let mut stack: Vec<usize> = children[start].clone();
                while let Some(j) = stack.pop() {
                    if !seen[j] {
                        seen[j] = true;
                        stack.extend(children[j].iter().copied());
                    }
                }
                seen
            })
            .collect();
        Walk { schema, children, enum_sum, reach, memo: HashMap::new(), steps: 0 }
    }

    fn fingerprint(&mut self, i: usize, path: &mut Vec<usize>) -> Option<u64> {
        if path.contains(&i) {
            return Some(0);
        }
        self.steps += 1;
        if self.steps > STEP_BUDGET {
            return None;
        }
        let mut relevant: Vec<usize> = path.iter().copied().filter(|&p| self.reach[i][p]).collect();
        relevant.sort_unstable();
        let key = (i, relevant);
        if let Some(&f) = self.memo.get(&key) {
            return Some(f);
        }
        let mut h = self.schema.structs[i].base_hash.wrapping_add(self.enum_sum[i]);
        path.push(i);
        for k in 0..self.children[i].len() {
            let j = self.children[i][k];
            h = h.wrapping_add(self.fingerprint(j, path)?);
        }
        path.pop();
        let f = h.rotate_left(1);
        self.memo.insert(key, f);
        Some(f)
    }
}
