//! A type's `.lcm` definition written back out from the checked model: the text a Nerve MCAP carries in its schema
//! records (and its `nerve.lcm` metadata), so that the file says what its messages are without the `.lcm` files.
//!
//! The text is one self-contained input for `nerve_types::check`: the type first, then every struct and enum it
//! uses, each declared with its full dotted name (`struct pkg.name_t { ... }`) and every member type written in full,
//! so no `package` line is needed and no type is declared twice. Fingerprints are computed from names, member names,
//! primitive type names and array sizes as written, all of which the text keeps, so the types it declares have the
//! fingerprints of the originals.

use std::collections::HashSet;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nerve_types::check::{check, Source};
use nerve_types::{Dim, MemberType, Registry, Schema, Struct, TypeName};

use crate::mcap::{read_schemas, TypeDef, TypeDefs, LCM_ENCODING, LCM_METADATA};
use crate::LogError;

/// A recorder's type lookup over `registry`: each type's `.lcm` definition, by fingerprint.
pub fn type_defs(registry: Registry) -> TypeDefs {
    Arc::new(move |fp| {
        registry.lookup(fp).map(|st| TypeDef { name: st.name.full(), lcm: lcm_definition(registry.schema(), st) })
    })
}

/// The types an MCAP file carries: its `lcm` schemas (a recording) and its `nerve.lcm` metadata (an export for
/// Foxglove); `None` when it carries none. A definition that does not check is an error naming its type.
pub fn registry_from_mcap(path: &Path) -> Result<Option<Registry>, LogError> {
    let (schemas, metadata) = read_schemas(path)?;
    let mut texts: Vec<(String, String)> = schemas
        .into_iter()
        .filter(|s| s.encoding == LCM_ENCODING)
        .map(|s| (s.name, String::from_utf8_lossy(&s.data).into_owned()))
        .collect();
    for (name, entries) in metadata {
        if name == LCM_METADATA {
            texts.extend(entries);
        }
    }
    if texts.is_empty() {
        return Ok(None);
    }
    let mut merged = Schema::default();
    for (name, text) in texts {
        let source = Source { path: PathBuf::from(format!("{}:{name}", path.display())), text };
        let checked = check(&[source], &[]).map_err(|d| LogError::Mcap {
            path: Some(path.to_path_buf()),
            reason: format!("the definition of '{name}' it carries does not check: {d}"),
        })?;
        for st in checked.schema.structs {
            if merged.struct_named(&st.name).is_none() {
                merged.structs.push(st);
            }
        }
        for en in checked.schema.enums {
            if merged.enum_named(&en.name).is_none() {
                merged.enums.push(en);
            }
        }
    }
    Ok(Some(Registry::new(merged)))
}

/// The `.lcm` text of `st` and every type it uses (in `schema`).
pub fn lcm_definition(schema: &Schema, st: &Struct) -> String {
    let mut out = String::new();
    let mut done: HashSet<TypeName> = HashSet::new();
    let mut todo = vec![st.name.clone()];
    while let Some(name) = todo.pop() {
        if !done.insert(name.clone()) {
            continue;
        }
        if let Some(s) = schema.struct_named(&name) {
            write_struct(&mut out, s);
            for m in s.members.iter().rev() {
                match &m.ty {
                    MemberType::Struct(n) | MemberType::Enum(n) if !done.contains(n) => todo.push(n.clone()),
                    _ => {}
                }
            }
        } else if let Some(e) = schema.enum_named(&name) {
            let _ = writeln!(out, "enum {} {{", e.name.full());
            for (i, v) in e.values.iter().enumerate() {
                let sep = if i + 1 < e.values.len() { "," } else { "" };
                let _ = writeln!(out, "    {} = {}{sep}", v.name, v.value);
            }
            out.push_str("}\n\n");
        }
    }
    out
}

fn write_struct(out: &mut String, s: &Struct) {
    let _ = writeln!(out, "struct {} {{", s.name.full());
    for c in &s.consts {
        let _ = writeln!(out, "    const {} {} = {};", c.ty.lcm_name(), c.name, c.text);
    }
    for m in &s.members {
        let ty = match &m.ty {
            MemberType::Primitive(p) => p.lcm_name().to_owned(),
            MemberType::Struct(n) | MemberType::Enum(n) => n.full(),
        };
        let _ = write!(out, "    {ty} {}", m.name);
        for d in &m.dims {
            match d {
                Dim::Fixed { const_name: Some(c), .. } => {
                    let _ = write!(out, "[{c}]");
                }
                Dim::Fixed { hash_text, .. } => {
                    let _ = write!(out, "[{hash_text}]");
                }
                Dim::Variable { member } => {
                    let _ = write!(out, "[{member}]");
                }
            }
        }
        out.push_str(";\n");
    }
    out.push_str("}\n\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use nerve_types::check::{check, Source};

    fn schema(text: &str) -> Schema {
        check(&[Source { path: "t.lcm".into(), text: text.into() }], &[]).unwrap().schema
    }

    #[test]
    fn definitions_check_again_to_the_same_fingerprints() {
        let s = schema(
            "package a; struct vec_t { const int32_t N = 0x3; double v[N]; }
             struct pose_t { int64_t utime; vec_t pos; int32_t n; b.blob_t blobs[n][2]; const double K = 1.5e3; }
             package b; struct blob_t { byte data[4]; string name; boolean ok; }",
        );
        let pose = s.struct_named(&TypeName::parse("a.pose_t")).unwrap();
        let text = lcm_definition(&s, pose);
        let again = schema(&text);
        assert!(text.starts_with("struct a.pose_t {"), "{text}");
        assert_eq!(again.structs.len(), 3, "{text}");
        for st in &s.structs {
            let other = again.struct_named(&st.name).unwrap_or_else(|| panic!("{} missing:\n{text}", st.name.full()));
            assert_eq!(other.fingerprint, st.fingerprint, "{}:\n{text}", st.name.full());
        }
    }
}
