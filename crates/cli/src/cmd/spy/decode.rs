//! What `nerve spy` knows about types: a message's type from its fingerprint (through `nerve_types`' registry
//! of the `--types` files), decoding with the dynamic codec, and the decoded value as an indented tree whose arrays
//! are summarised (length, first values, min/max) rather than printed whole.

use std::collections::HashMap;
use std::sync::Arc;

use nerve_types::dynamic::{StructValue, Value};
use nerve_types::{Layout, MemberType, Registry, TypeName};

use super::stats::fingerprint_of;

/// Arrays up to this long are shown whole.
const SHOW_WHOLE: usize = 8;
/// Longer arrays show this many first values, then `…`.
const HEAD: usize = 3;
/// Elements shown of an array of structs (each is a subtree).
const STRUCT_ELEMS: usize = 3;
/// Rows shown of a multi-dimensional array.
const SUB_ARRAYS: usize = 8;
/// Characters shown of a string (of a string inside an array: [`ARRAY_STRING_CHARS`]).
const STRING_CHARS: usize = 60;
const ARRAY_STRING_CHARS: usize = 20;
/// Bytes shown (in hex) of a byte array.
const HEX_BYTES: usize = 16;
/// A tree never grows past this many lines.
const MAX_LINES: usize = 2000;

/// A type as the spy shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeInfo {
    /// The full name; when several loaded types share the fingerprint, all of them joined with ` | `.
    pub label: String,
    /// The types with this fingerprint, in load order (the first is the one decoded with).
    pub names: Vec<TypeName>,
    /// The fewest bytes a message of this type takes, fingerprint included: anything shorter is a decode error.
    pub min_len: usize,
}

/// The loaded types, by fingerprint.
#[derive(Debug, Default)]
pub struct Types {
    registry: Option<Registry>,
    by_fingerprint: HashMap<u64, Arc<TypeInfo>>,
}

/// A message, decoded as far as the types allow.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    /// Fewer than 8 bytes.
    NoFingerprint,
    /// No loaded type has the fingerprint.
    Unknown(u64),
    /// Decoded.
    Value(Arc<TypeInfo>, Value),
    /// The fingerprint is known but the bytes are not that type: a decode error.
    Error(Arc<TypeInfo>, String),
}

impl Types {
    /// Indexes the registry's structs by fingerprint; with `None`, every type is unknown.
    pub fn new(registry: Option<Registry>) -> Types {
        let mut by_fingerprint = HashMap::new();
        if let Some(reg) = &registry {
            let layout = Layout::new(reg.schema());
            for s in &reg.schema().structs {
                by_fingerprint.entry(s.fingerprint).or_insert_with(|| {
                    let names: Vec<TypeName> = reg.candidates(s.fingerprint).iter().map(|c| c.name.clone()).collect();
                    let label = names.iter().map(TypeName::full).collect::<Vec<_>>().join(" | ");
                    Arc::new(TypeInfo { label, names, min_len: 8usize.saturating_add(layout.min_size(&s.name)) })
                });
            }
        }
        Types { registry, by_fingerprint }
    }

    /// The type with this fingerprint.
    pub fn info(&self, fingerprint: u64) -> Option<&Arc<TypeInfo>> {
        self.by_fingerprint.get(&fingerprint)
    }

    /// How many distinct fingerprints are known.
    pub fn len(&self) -> usize {
        self.by_fingerprint.len()
    }

    /// Decodes a whole message (as the first candidate, when several types share its fingerprint).
    pub fn decode(&self, data: &[u8]) -> Decoded {
        let Some(fp) = fingerprint_of(data) else { return Decoded::NoFingerprint };
        let (Some(info), Some(reg)) = (self.info(fp), &self.registry) else { return Decoded::Unknown(fp) };
        match reg.decode_as(&info.names[0], data) {
            Ok(v) => Decoded::Value(Arc::clone(info), v),
            Err(e) => Decoded::Error(Arc::clone(info), e.to_string()),
        }
    }

    /// The value as indented lines (two spaces a level), arrays summarised.
    pub fn tree(&self, value: &Value) -> Vec<String> {
        let mut w = TreeWriter { reg: self.registry.as_ref(), out: Vec::new() };
        match value {
            Value::Struct(sv) => w.fields(sv, 0),
            other => {
                let text = w.scalar(other);
                w.push(0, text);
            }
        }
        w.out
    }
}

struct TreeWriter<'a> {
    reg: Option<&'a Registry>,
    out: Vec<String>,
}

impl TreeWriter<'_> {
    fn push(&mut self, depth: usize, text: String) {
        match self.out.len() {
            n if n < MAX_LINES => self.out.push(format!("{}{text}", "  ".repeat(depth))),
            n if n == MAX_LINES => self.out.push(format!("… (more than {MAX_LINES} lines)")),
            _ => {}
        }
    }

    fn fields(&mut self, sv: &StructValue, depth: usize) {
        let decl = self.reg.and_then(|r| r.by_name(&TypeName::parse(&sv.ty)));
        for (name, v) in &sv.fields {
            let elem = decl.and_then(|d| d.member(name)).map(|m| &m.ty);
            self.member(name, elem, v, depth);
        }
    }

    fn member(&mut self, label: &str, elem: Option<&MemberType>, v: &Value, depth: usize) {
        match v {
            Value::Struct(sv) => {
                self.push(depth, format!("{label}: {}", sv.ty));
                self.fields(sv, depth + 1);
            }
            Value::Array(_) | Value::Bytes(_) => self.array(label, elem, v, depth),
            scalar => {
                let text = self.scalar(scalar);
                self.push(depth, format!("{label}: {text}"));
            }
        }
    }

    fn array(&mut self, label: &str, elem: Option<&MemberType>, v: &Value, depth: usize) {
        let ty = format!("{}{}", elem_name(elem, v), dims(v));
        if let Some(summary) = self.summary(v) {
            self.push(depth, format!("{label}: {ty} {summary}"));
            return;
        }
        let Value::Array(items) = v else { return };
        self.push(depth, format!("{label}: {ty}"));
        let shown = if matches!(items.first(), Some(Value::Struct(_))) { STRUCT_ELEMS } else { SUB_ARRAYS };
        for (i, e) in items.iter().take(shown).enumerate() {
            self.member(&format!("[{i}]"), elem, e, depth + 1);
        }
        if items.len() > shown {
            self.push(depth + 1, format!("… {} more", items.len() - shown));
        }
    }

    /// One line for an array of scalars or bytes; `None` for arrays of structs or of arrays.
    fn summary(&self, v: &Value) -> Option<String> {
        let items = match v {
            Value::Bytes(b) => {
                let hex: Vec<String> = b.iter().take(HEX_BYTES).map(|x| format!("{x:02x}")).collect();
                let more = if b.len() > HEX_BYTES { " …" } else { "" };
                return Some(if b.is_empty() { "[]".into() } else { format!("{}{more}", hex.join(" ")) });
            }
            Value::Array(items) => items,
            _ => return None,
        };
        match items.first() {
            None => return Some("[]".into()),
            Some(Value::Struct(_) | Value::Array(_) | Value::Bytes(_)) => return None,
            Some(_) => {}
        }
        let whole = items.len() <= SHOW_WHOLE;
        let shown: Vec<String> = items
            .iter()
            .take(if whole { SHOW_WHOLE } else { HEAD })
            .map(|x| match x {
                Value::String(s) => quoted(s, ARRAY_STRING_CHARS),
                other => self.scalar(other),
            })
            .collect();
        let mut text = format!("[{}{}]", shown.join(", "), if whole { "" } else { ", …" });
        if !whole {
            if let Some((lo, hi)) = min_max(items) {
                text.push_str(&format!(" min {} max {}", self.scalar(lo), self.scalar(hi)));
            } else if matches!(items[0], Value::Boolean(_)) {
                let t = items.iter().filter(|x| matches!(x, Value::Boolean(true))).count();
                text.push_str(&format!(" {t} true"));
            }
        }
        Some(text)
    }

    fn scalar(&self, v: &Value) -> String {
        match v {
            Value::Int8(x) => x.to_string(),
            Value::Int16(x) => x.to_string(),
            Value::Int32(x) => x.to_string(),
            Value::Int64(x) => x.to_string(),
            Value::Byte(x) => x.to_string(),
            // Debug: the shortest text that reads back to the same bits, always with a `.` or an exponent.
            Value::Float(x) => format!("{x:?}"),
            Value::Double(x) => format!("{x:?}"),
            Value::Boolean(x) => x.to_string(),
            Value::String(s) => quoted(s, STRING_CHARS),
            Value::Enum(e) => {
                let name = self
                    .reg
                    .and_then(|r| r.schema().enum_named(&TypeName::parse(&e.ty)))
                    .and_then(|d| d.values.iter().find(|x| x.value == e.value));
                match name {
                    Some(n) => format!("{} ({})", n.name, e.value),
                    None => e.value.to_string(),
                }
            }
            other => other.kind_name(),
        }
    }
}

fn quoted(s: &str, max: usize) -> String {
    let mut chars = s.chars();
    let head: String = chars.by_ref().take(max).collect();
    if chars.next().is_some() {
        format!("{head:?}… ({} chars)", s.chars().count())
    } else {
        format!("{head:?}")
    }
}

/// The least and greatest element of a numeric array (NaN ignored); `None` for other arrays.
fn min_max(items: &[Value]) -> Option<(&Value, &Value)> {
    if items[0].as_i64().is_some() {
        let lo = items.iter().min_by_key(|x| x.as_i64())?;
        let hi = items.iter().max_by_key(|x| x.as_i64())?;
        return Some((lo, hi));
    }
    let as_f64 = |x: &Value| match x {
        Value::Float(f) => Some(f64::from(*f)),
        Value::Double(d) => Some(*d),
        Value::Enum(e) => Some(f64::from(e.value)),
        _ => None,
    };
    as_f64(&items[0])?;
    let numbers = || items.iter().filter_map(|x| as_f64(x).filter(|f| !f.is_nan()).map(|f| (f, x)));
    let lo = numbers().min_by(|a, b| a.0.total_cmp(&b.0))?.1;
    let hi = numbers().max_by(|a, b| a.0.total_cmp(&b.0))?.1;
    Some((lo, hi))
}

/// The element type's name, from the declaration, else from the first element.
fn elem_name(elem: Option<&MemberType>, v: &Value) -> String {
    match elem {
        Some(MemberType::Primitive(p)) => p.lcm_name().to_owned(),
        Some(MemberType::Struct(n) | MemberType::Enum(n)) => n.full(),
        None => {
            let mut leaf = v;
            while let Value::Array(items) = leaf {
                match items.first() {
                    Some(first) => leaf = first,
                    None => return "?".into(),
                }
            }
            match leaf {
                Value::Bytes(_) => "byte".into(),
                Value::Struct(s) => s.ty.to_string(),
                Value::Enum(e) => e.ty.to_string(),
                other => other.kind_name(),
            }
        }
    }
}

/// The array's actual dimensions, e.g. `[3][4]` (LCM arrays are rectangular: the first element's are every one's).
fn dims(v: &Value) -> String {
    let mut out = String::new();
    let mut cur = v;
    loop {
        match cur {
            Value::Bytes(b) => return out + &format!("[{}]", b.len()),
            Value::Array(items) => {
                out.push_str(&format!("[{}]", items.len()));
                match items.first() {
                    Some(first @ (Value::Array(_) | Value::Bytes(_))) => cur = first,
                    _ => return out,
                }
            }
            _ => return out,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The seed types (examples/types) plus a few made up here for the corners.
    pub(crate) fn seed_types() -> Types {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/types");
        let (reg, diags) = Registry::load_dirs(&[dir]);
        assert!(!diags.has_errors(), "{}", diags.render());
        Types::new(Some(reg))
    }

    pub(crate) fn encode(types: &Types, ty: &str, json: &str) -> Vec<u8> {
        let reg = types.registry.as_ref().unwrap();
        let name = TypeName::parse(ty);
        reg.encode(&name, &reg.from_json(&name, json).unwrap()).unwrap()
    }

    fn tree_of(types: &Types, bytes: &[u8]) -> Vec<String> {
        match types.decode(bytes) {
            Decoded::Value(_, v) => types.tree(&v),
            other => panic!("did not decode: {other:?}"),
        }
    }

    /// A laser scan with 180 ranges 0.1, 0.2, ... 18.0.
    pub(crate) fn laser_json() -> String {
        let ranges: Vec<String> = (1..=180).map(|i| format!("{}", i as f32 / 10.0)).collect();
        format!(
            r#"{{"utime": 1700000000000000, "nranges": 180, "ranges": [{}], "rad0": -1.5707964, "radstep": 0.017453292}}"#,
            ranges.join(", ")
        )
    }

    #[test]
    fn laser_ranges_are_summarised() {
        let types = seed_types();
        let lines = tree_of(&types, &encode(&types, "exlcm.laser_t", &laser_json()));
        assert_eq!(
            lines,
            [
                "utime: 1700000000000000",
                "nranges: 180",
                "ranges: float[180] [0.1, 0.2, 0.3, …] min 0.1 max 18.0",
                "rad0: -1.5707964",
                "radstep: 0.017453292",
            ]
        );
    }

    #[test]
    fn image_bytes_are_length_and_first_bytes_in_hex() {
        let types = seed_types();
        let data: Vec<String> = (0..640u32).map(|i| (i % 256).to_string()).collect();
        let json = format!(
            r#"{{"utime": 5, "width": 32, "height": 20, "pixelformat": 1497715271, "size": 640, "data": [{}]}}"#,
            data.join(",")
        );
        let lines = tree_of(&types, &encode(&types, "exlcm.image_t", &json));
        assert_eq!(lines[5], "data: byte[640] 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f …");
        assert_eq!(lines[3], "pixelformat: 1497715271");
    }

    #[test]
    fn path_waypoints_nest_and_stop_after_three() {
        let types = seed_types();
        let wps: Vec<String> = (0..50).map(|i| format!(r#"{{"id": "wp{i}", "position": [{i}, {}]}}"#, -i)).collect();
        let json = format!(r#"{{"timestamp": 7, "num_waypoints": 50, "waypoints": [{}]}}"#, wps.join(","));
        let lines = tree_of(&types, &encode(&types, "exlcm.path_t", &json));
        assert_eq!(
            lines,
            [
                "timestamp: 7",
                "num_waypoints: 50",
                "waypoints: exlcm.waypoint_t[50]",
                "  [0]: exlcm.waypoint_t",
                "    id: \"wp0\"",
                "    position: float[2] [0.0, 0.0]",
                "  [1]: exlcm.waypoint_t",
                "    id: \"wp1\"",
                "    position: float[2] [1.0, -1.0]",
                "  [2]: exlcm.waypoint_t",
                "    id: \"wp2\"",
                "    position: float[2] [2.0, -2.0]",
                "  … 47 more",
            ]
        );
    }

    #[test]
    fn min_and_max_ignore_nan() {
        let types = seed_types();
        let json = r#"{"utime": 1, "ranges": ["NaN", 4, 2, "Infinity", 3, 1, 5, 6, 7], "rad0": 0, "radstep": 0}"#;
        let lines = tree_of(&types, &encode(&types, "exlcm.laser_t", json));
        assert_eq!(lines[2], "ranges: float[9] [NaN, 4.0, 2.0, …] min 1.0 max inf");
    }

    #[test]
    fn empty_arrays_still_name_their_type() {
        let types = seed_types();
        let lines = tree_of(&types, &encode(&types, "exlcm.path_t", r#"{"timestamp": 1, "waypoints": []}"#));
        assert_eq!(lines[2], "waypoints: exlcm.waypoint_t[0] []");
    }

    fn made_up() -> Types {
        let text = "package t; enum mode_t { IDLE=0, RUN=3 } struct all_t { string name; string names[12]; \
                    double m[3][4]; boolean flags[10]; int64_t big[9]; mode_t mode; double tiny; }";
        let src = nerve_types::Source { path: "t.lcm".into(), text: text.into() };
        let checked = nerve_types::check(&[src], &[]).unwrap();
        Types::new(Some(Registry::new(checked.schema)))
    }

    #[test]
    fn strings_matrices_booleans_and_enums() {
        let types = made_up();
        let long = "x".repeat(100);
        let names: Vec<String> = (0..12).map(|i| format!("\"name number {i} which is long\"")).collect();
        let m: Vec<String> = (0..3).map(|r| format!("[{r}, 1, 2, 3]")).collect();
        let json = format!(
            r#"{{"name": "{long}", "names": [{}], "m": [{}], "flags": [true, false, true, true, false, false, false, false, false, true],
                "big": [1, -9223372036854775808, 3, 9223372036854775807, 5, 6, 7, 8, 9], "mode": 3, "tiny": 1e-9}}"#,
            names.join(","),
            m.join(",")
        );
        let lines = tree_of(&types, &encode(&types, "t.all_t", &json));
        assert_eq!(
            lines,
            [
                format!("name: \"{}\"… (100 chars)", "x".repeat(60)).as_str(),
                "names: string[12] [\"name number 0 which \"… (27 chars), \"name number 1 which \"… (27 chars), \
                 \"name number 2 which \"… (27 chars), …]",
                "m: double[3][4]",
                "  [0]: double[4] [0.0, 1.0, 2.0, 3.0]",
                "  [1]: double[4] [1.0, 1.0, 2.0, 3.0]",
                "  [2]: double[4] [2.0, 1.0, 2.0, 3.0]",
                "flags: boolean[10] [true, false, true, …] 4 true",
                "big: int64_t[9] [1, -9223372036854775808, 3, …] min -9223372036854775808 max 9223372036854775807",
                "mode: RUN (3)",
                "tiny: 1e-9",
            ]
        );
    }

    #[test]
    fn unknown_short_and_corrupt_messages() {
        let types = seed_types();
        assert_eq!(types.decode(&[1, 2, 3]), Decoded::NoFingerprint);
        assert_eq!(types.decode(&[0; 12]), Decoded::Unknown(0));
        let mut bytes = encode(&types, "exlcm.laser_t", &laser_json());
        let info = types.info(fingerprint_of(&bytes).unwrap()).unwrap().clone();
        assert_eq!(info.label, "exlcm.laser_t");
        // utime 8 + nranges 4 + rad0 4 + radstep 4 after the fingerprint.
        assert_eq!(info.min_len, 28);
        bytes.truncate(100);
        assert!(matches!(types.decode(&bytes), Decoded::Error(i, _) if i.label == "exlcm.laser_t"));
    }

    #[test]
    fn shared_fingerprints_are_labelled_with_every_name() {
        let a = nerve_types::Source { path: "a.lcm".into(), text: "package a; struct p_t { int32_t x; }".into() };
        let b = nerve_types::Source { path: "b.lcm".into(), text: "package b; struct p_t { int32_t x; }".into() };
        let reg = Registry::new(nerve_types::check(&[a, b], &[]).unwrap().schema);
        let fp = reg.schema().structs[0].fingerprint;
        let types = Types::new(Some(reg));
        assert_eq!(types.info(fp).unwrap().label, "a.p_t | b.p_t");
        assert_eq!(types.len(), 1);
    }
}
