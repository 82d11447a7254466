//! [`json_schema`]: a JSON Schema (draft 2020-12) for an LCM type, describing the JSON the MCAP exporter writes.
//!
//! Shaped for Foxglove, whose JSON-schema reader follows only `type`, `properties`, `items` and `contentEncoding`
//! (no `$ref`, no nested arrays): nested structs are written out in place; a multi-dimensional array is one flat
//! array in row-major order (its dimensions are in the `description`); a `byte` array is a base64 string
//! (`contentEncoding: base64`, which Foxglove shows as bytes). A recursive type cannot be written out in place
//! forever, so where a struct would contain itself the schema has an open object (`"type": "object", "properties":
//! {}`, which Foxglove accepts) that also carries a `$ref` to the full definition under `$defs`, which validators
//! follow. Floats are `number`s; JSON has no NaN or infinity, so the exporter writes those as `null`, which this
//! schema does not allow (a validator rejects such a message; Foxglove shows the field as empty).

use std::collections::BTreeSet;

use nerve_types::dynamic::json_string;
use nerve_types::{Dim, Member, MemberType, Primitive, Schema, Struct, TypeName};

/// How many struct bodies one schema writes out in place before it refers to `$defs` instead (a type that
/// contains many copies of deep types would otherwise grow exponentially).
const INLINE_BUDGET: usize = 4096;

/// The JSON Schema of `ty`'s JSON form in MCAP exports.
pub fn json_schema(schema: &Schema, ty: &Struct) -> String {
    let mut g = Gen { schema, defs_needed: BTreeSet::new(), budget: INLINE_BUDGET };
    let mut out = String::new();
    let mut path = vec![ty.name.clone()];
    let body = g.object(ty, &mut path);
    out.push_str("{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",");
    out.push_str(&format!("\"$id\":{},", json_string(&format!("lcm:{}", ty.name.full()))));
    out.push_str(&body[1..body.len() - 1]);
    // Definitions for the types referred to by $ref, each written out once (they may refer to each other).
    let mut done: BTreeSet<TypeName> = BTreeSet::new();
    let mut defs = Vec::new();
    while let Some(name) = g.defs_needed.iter().find(|n| !done.contains(*n)).cloned() {
        done.insert(name.clone());
        if let Some(st) = schema.struct_named(&name) {
            let mut path = vec![name.clone()];
            g.budget = 0; // inside $defs, every struct is a $ref: each definition is written once
            let body = g.object(st, &mut path);
            defs.push(format!("{}:{}", json_string(&name.full()), body));
        }
    }
    if !defs.is_empty() {
        out.push_str(",\"$defs\":{");
        out.push_str(&defs.join(","));
        out.push('}');
    }
    out.push('}');
    out
}

struct Gen<'s> {
    schema: &'s Schema,
    defs_needed: BTreeSet<TypeName>,
    budget: usize,
}

impl Gen<'_> {
    fn object(&mut self, st: &Struct, path: &mut Vec<TypeName>) -> String {
        let mut props = Vec::new();
        for m in &st.members {
            props.push(format!("{}:{}", json_string(&m.name), self.member(m, path)));
        }
        let required: Vec<String> = st.members.iter().map(|m| json_string(&m.name)).collect();
        let mut desc = format!("LCM type {} (fingerprint 0x{:016x})", st.name.full(), st.fingerprint);
        if let Some(doc) = &st.doc {
            desc.push_str(": ");
            desc.push_str(doc.trim());
        }
        format!(
            "{{\"type\":\"object\",\"title\":{},\"description\":{},\"properties\":{{{}}},\"required\":[{}],\"additionalProperties\":false}}",
            json_string(&st.name.full()),
            json_string(&desc),
            props.join(","),
            required.join(",")
        )
    }

    fn member(&mut self, m: &Member, path: &mut Vec<TypeName>) -> String {
        if m.dims.is_empty() {
            return self.element(&m.ty, path);
        }
        let fixed: Option<usize> = m.dims.iter().try_fold(1usize, |acc, d| match d {
            Dim::Fixed { len, .. } => acc.checked_mul(*len),
            Dim::Variable { .. } => None,
        });
        let dims_text: Vec<String> = m
            .dims
            .iter()
            .map(|d| match d {
                Dim::Fixed { len, .. } => len.to_string(),
                Dim::Variable { member } => member.clone(),
            })
            .collect();
        let shape = format!("[{}]", dims_text.join("]["));
        if m.ty == MemberType::Primitive(Primitive::Byte) {
            let desc = format!("byte{shape}, base64, row-major");
            return format!(
                "{{\"type\":\"string\",\"contentEncoding\":\"base64\",\"description\":{}}}",
                json_string(&desc)
            );
        }
        let mut s = format!("{{\"type\":\"array\",\"items\":{}", self.element(&m.ty, path));
        if m.dims.len() > 1 {
            s.push_str(&format!(",\"description\":{}", json_string(&format!("{shape}, flattened row-major"))));
        }
        if let Some(n) = fixed {
            s.push_str(&format!(",\"minItems\":{n},\"maxItems\":{n}"));
        }
        s.push('}');
        s
    }

    fn element(&mut self, ty: &MemberType, path: &mut Vec<TypeName>) -> String {
        match ty {
            MemberType::Primitive(p) => primitive(*p).to_owned(),
            MemberType::Enum(_) => "{\"type\":\"integer\",\"minimum\":-2147483648,\"maximum\":2147483647}".to_owned(),
            MemberType::Struct(name) => {
                let st = self.schema.struct_named(name);
                match st {
                    Some(st) if !path.contains(name) && self.budget > 0 => {
                        self.budget -= 1;
                        path.push(name.clone());
                        let s = self.object(st, path);
                        path.pop();
                        s
                    }
                    _ => {
                        self.defs_needed.insert(name.clone());
                        format!(
                            "{{\"type\":\"object\",\"properties\":{{}},\"$ref\":{}}}",
                            json_string(&format!("#/$defs/{}", name.full()))
                        )
                    }
                }
            }
        }
    }
}

fn primitive(p: Primitive) -> &'static str {
    match p {
        Primitive::Int8 => "{\"type\":\"integer\",\"minimum\":-128,\"maximum\":127}",
        Primitive::Int16 => "{\"type\":\"integer\",\"minimum\":-32768,\"maximum\":32767}",
        Primitive::Int32 => "{\"type\":\"integer\",\"minimum\":-2147483648,\"maximum\":2147483647}",
        Primitive::Int64 => "{\"type\":\"integer\",\"minimum\":-9223372036854775808,\"maximum\":9223372036854775807}",
        Primitive::Float | Primitive::Double => "{\"type\":\"number\"}",
        Primitive::String => "{\"type\":\"string\"}",
        Primitive::Boolean => "{\"type\":\"boolean\"}",
        Primitive::Byte => "{\"type\":\"integer\",\"minimum\":0,\"maximum\":255}",
    }
}

/// The schema of messages written raw (no type decoded them).
pub const RAW_SCHEMA_NAME: &str = "nerve.undecoded";

/// The JSON Schema of [`RAW_SCHEMA_NAME`] messages (see [`message_json`](super::message_json)).
pub fn raw_schema() -> String {
    concat!(
        "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"$id\":\"lcm:nerve.undecoded\",",
        "\"type\":\"object\",\"title\":\"nerve.undecoded\",",
        "\"description\":\"A message no LCM type given to the export decoded: its bytes and why\",",
        "\"properties\":{\"fingerprint\":{\"type\":\"string\"},",
        "\"data\":{\"type\":\"string\",\"contentEncoding\":\"base64\"},\"error\":{\"type\":\"string\"}},",
        "\"required\":[\"fingerprint\",\"data\",\"error\"],\"additionalProperties\":false}"
    )
    .to_owned()
}
