//! A typed message given as JSON (`nerve pub --type T --json VALUE`): the type found by its full or short name,
//! the members left out filled with the zero values a fresh message has, a skeleton to fill
//! (`nerve pub --type T --template`), and errors that say where in the JSON they are (the member path, or the
//! line and column of a syntax error).
//!
//! The filling happens here, on the JSON, so that the codec underneath stays strict (a log export or a binding
//! that reads JSON must not invent values); the codec still checks every value given and infers count members
//! from the arrays given.

use std::collections::{BTreeMap, HashSet};

use nerve_types::dynamic::DynError;
use nerve_types::model::{Dim, MemberType, Primitive, Struct};
use nerve_types::{Registry, TypeName};
use serde_json::value::RawValue;

use super::exit::reject;

/// The type called `given`: a full name, or a short name that exactly one loaded type has. Otherwise an error
/// (status 1) naming the candidates.
pub fn resolve_type<'r>(registry: &'r Registry, given: &str) -> anyhow::Result<&'r Struct> {
    if let Some(st) = registry.by_name(&TypeName::parse(given)) {
        return Ok(st);
    }
    let structs = &registry.schema().structs;
    if !given.contains('.') {
        let same: Vec<&Struct> = structs.iter().filter(|s| s.name.name == given).collect();
        match same.as_slice() {
            [one] => return Ok(one),
            [] => {}
            many => {
                let names: Vec<String> = many.iter().map(|s| s.name.full()).collect();
                return Err(reject(format!("type '{given}' is in several packages: {}; name one", names.join(", "))));
            }
        }
    }
    let mut near: Vec<(usize, String)> = structs
        .iter()
        .map(|s| s.name.full())
        .map(|full| {
            let short = full.rsplit('.').next().unwrap_or(&full).to_owned();
            (edit_distance(given, &full).min(edit_distance(given, &short)), full)
        })
        .filter(|(d, _)| *d <= 3)
        .collect();
    near.sort();
    let hint = match near.first() {
        Some((_, name)) => format!("; did you mean {name}?"),
        None if structs.is_empty() => " (no types were loaded)".to_owned(),
        None => {
            let mut all: Vec<String> = structs.iter().map(|s| s.name.full()).collect();
            all.sort();
            let more = if all.len() > 10 { ", …" } else { "" };
            all.truncate(10);
            format!("; the types are: {}{more}", all.join(", "))
        }
    };
    Err(reject(format!("type '{given}' not found in the --types directories{hint}")))
}

/// Levenshtein distance in characters (names are short; a library for this would be more than the function).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// A JSON value being built, members kept in declaration order.
enum Json {
    Object(Vec<(String, Json)>),
    Array(Vec<Json>),
    /// JSON text as it is written.
    Text(String),
}

impl Json {
    fn write(&self, out: &mut String, indent: Option<usize>) {
        let (open_sep, sep, close_sep) = match indent {
            Some(n) => (
                format!("\n{}", "  ".repeat(n + 1)),
                format!(",\n{}", "  ".repeat(n + 1)),
                format!("\n{}", "  ".repeat(n)),
            ),
            None => (String::new(), ", ".to_owned(), String::new()),
        };
        let inner = indent.map(|n| n + 1);
        match self {
            Json::Text(t) => out.push_str(t),
            Json::Array(items) if items.is_empty() => out.push_str("[]"),
            // Arrays of numbers stay on one line: a skeleton of a float[180] is one line, not 180.
            Json::Array(items) if items.iter().all(|i| matches!(i, Json::Text(_))) => {
                out.push('[');
                for (k, item) in items.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    item.write(out, None);
                }
                out.push(']');
            }
            Json::Array(items) => {
                out.push('[');
                out.push_str(&open_sep);
                for (k, item) in items.iter().enumerate() {
                    if k > 0 {
                        out.push_str(&sep);
                    }
                    item.write(out, inner);
                }
                out.push_str(&close_sep);
                out.push(']');
            }
            Json::Object(members) if members.is_empty() => out.push_str("{}"),
            Json::Object(members) => {
                out.push('{');
                out.push_str(&open_sep);
                for (k, (name, value)) in members.iter().enumerate() {
                    if k > 0 {
                        out.push_str(&sep);
                    }
                    out.push_str(&serde_json::to_string(name).expect("a string serialises"));
                    out.push_str(": ");
                    value.write(out, inner);
                }
                out.push_str(&close_sep);
                out.push('}');
            }
        }
    }
}

/// The zero value of one element of `ty`.
fn zero_element(registry: &Registry, ty: &MemberType) -> Json {
    match ty {
        MemberType::Primitive(Primitive::String) => Json::Text("\"\"".into()),
        MemberType::Primitive(Primitive::Boolean) => Json::Text("false".into()),
        MemberType::Primitive(Primitive::Float | Primitive::Double) => Json::Text("0.0".into()),
        MemberType::Primitive(_) | MemberType::Enum(_) => Json::Text("0".into()),
        MemberType::Struct(name) => match registry.by_name(name) {
            Some(st) => fill(registry, st, None),
            None => Json::Object(Vec::new()),
        },
    }
}

/// The zero value of an array with `dims` of `ty`: fixed dimensions full of zeros, variable ones empty.
fn zero_array(registry: &Registry, ty: &MemberType, dims: &[Dim]) -> Json {
    match dims.split_first() {
        None => zero_element(registry, ty),
        Some((Dim::Fixed { len, .. }, rest)) => {
            Json::Array((0..*len).map(|_| zero_array(registry, ty, rest)).collect())
        }
        Some((Dim::Variable { .. }, _)) => Json::Array(Vec::new()),
    }
}

/// A JSON object's members, each value as the user wrote it.
type Members<'j> = BTreeMap<String, &'j RawValue>;

/// `st`'s value: the members `given` has as given (structs within filled in turn), the others zero. A count
/// member left out while an array it sizes is given is left out for the codec to infer from that array.
fn fill(registry: &Registry, st: &Struct, given: Option<&Members<'_>>) -> Json {
    let sized_by_given: HashSet<&str> = st
        .members
        .iter()
        .filter(|m| given.is_some_and(|g| g.contains_key(&m.name)))
        .flat_map(|m| m.dims.iter())
        .filter_map(|d| match d {
            Dim::Variable { member } => Some(member.as_str()),
            Dim::Fixed { .. } => None,
        })
        .collect();
    let mut out = Vec::new();
    for m in &st.members {
        let value = match given.and_then(|g| g.get(&m.name)) {
            Some(v) => fill_given(registry, &m.ty, m.dims.len(), v),
            None if sized_by_given.contains(m.name.as_str()) => continue,
            None => zero_array(registry, &m.ty, &m.dims),
        };
        out.push((m.name.clone(), value));
    }
    // Members the type does not have stay, so that the codec names them.
    if let Some(g) = given {
        for (k, v) in g {
            if st.member(k).is_none() {
                out.push((k.to_owned(), Json::Text(v.get().to_owned())));
            }
        }
    }
    Json::Object(out)
}

/// A value the user gave for a member of `ty` with `depth` array dimensions: structs in it are filled, everything
/// else is passed on as written (the codec checks it).
fn fill_given(registry: &Registry, ty: &MemberType, depth: usize, v: &RawValue) -> Json {
    let as_written = || Json::Text(v.get().to_owned());
    let MemberType::Struct(name) = ty else { return as_written() };
    if depth == 0 {
        match (registry.by_name(name), serde_json::from_str::<Members<'_>>(v.get())) {
            (Some(st), Ok(members)) => fill(registry, st, Some(&members)),
            _ => as_written(),
        }
    } else {
        match serde_json::from_str::<Vec<&RawValue>>(v.get()) {
            Ok(items) => Json::Array(items.iter().map(|i| fill_given(registry, ty, depth - 1, i)).collect()),
            Err(_) => as_written(),
        }
    }
}

/// The JSON skeleton of `st`: every member with the value a fresh message has, in declaration order, indented.
pub fn template(registry: &Registry, st: &Struct) -> String {
    let mut out = String::new();
    fill(registry, st, None).write(&mut out, Some(0));
    out
}

/// Encodes the JSON text `json` as a message of type `st`, members left out taking zero values. Errors are status
/// 1 and say where: a syntax error by line and column, a wrong value by its member path.
pub fn encode(registry: &Registry, st: &Struct, json: &str) -> anyhow::Result<Vec<u8>> {
    let whole: &RawValue = serde_json::from_str(json).map_err(|e| reject(format!("--json: not valid JSON: {e}")))?;
    let Ok(members) = serde_json::from_str::<Members<'_>>(whole.get()) else {
        return Err(reject(format!("--json: a {} is a JSON object {{...}}, not {}", st.name, whole.get())));
    };
    let mut filled = String::new();
    fill(registry, st, Some(&members)).write(&mut filled, None);
    let value = registry.from_json(&st.name, &filled).map_err(|e| reject(format!("--json: {}", by_path(&e))))?;
    registry.encode(&st.name, &value).map_err(|e| reject(format!("--json: {}", by_path(&e))))
}

/// An error by its member path and what is wrong, without the byte offset (which is into the filled-in text, not
/// what the user wrote).
fn by_path(e: &DynError) -> String {
    let path = e.path_string();
    if path.is_empty() {
        e.kind().to_string()
    } else {
        format!("{path}: {}", e.kind())
    }
}
