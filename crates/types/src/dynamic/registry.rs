//! [`Registry`]: which type a message is, from the fingerprint in its first 8 bytes, and its decoded value.
//!
//! # Types that share a fingerprint
//!
//! A fingerprint covers member names, primitive types and dimensions, but not the struct's own name or package
//! (spec 2.1), so a type copied into a second package, or renamed, keeps its fingerprint. The registry keeps every
//! candidate and does not guess: [`Registry::lookup`] answers only for a fingerprint that one type has,
//! [`Registry::candidates`] lists them all, [`Registry::decode`] reports [`RegistryError::Ambiguous`] with their
//! names, and [`Registry::decode_as`] decodes as the one the caller picks. Such candidates read the same bytes the
//! same way (the fingerprint pins their structure); only the names differ, which is why choosing is left to the
//! user. [`Registry::load_dirs`] also reports each shared fingerprint as a warning.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use nerve_codec::fingerprint_of;

use super::{Ctx, DynError, Tables, Value};
use crate::check::{check, Source};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::layout::Layout;
use crate::model::{Schema, Span, Struct, TypeName};

/// How deep below each directory `.lcm` files are looked for.
const MAX_DIR_DEPTH: usize = 16;

/// Types by fingerprint, with the dynamic codec over them.
#[derive(Debug, Clone)]
pub struct Registry {
    schema: Schema,
    layout: Layout,
    tables: Tables,
    by_fingerprint: HashMap<u64, Vec<usize>>,
}

/// Why [`Registry::decode`] could not decode a message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryError {
    /// Fewer than 8 bytes: there is no fingerprint.
    TooShort {
        /// The message's length.
        len: usize,
    },
    /// No known type has this fingerprint.
    Unknown {
        /// The fingerprint.
        fingerprint: u64,
    },
    /// Several types have this fingerprint (see the module docs); decode with [`Registry::decode_as`].
    Ambiguous {
        /// The fingerprint.
        fingerprint: u64,
        /// The candidates' full names, in load order.
        names: Vec<String>,
    },
    /// The type is known but the bytes do not decode as it.
    Decode(DynError),
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryError::TooShort { len } => {
                write!(f, "message of {len} bytes has no 8-byte fingerprint")
            }
            RegistryError::Unknown { fingerprint } => {
                write!(f, "no known type has fingerprint 0x{fingerprint:016x}")
            }
            RegistryError::Ambiguous { fingerprint, names } => {
                write!(f, "fingerprint 0x{fingerprint:016x} is shared by {}", names.join(", "))
            }
            RegistryError::Decode(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RegistryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RegistryError::Decode(e) => Some(e),
            _ => None,
        }
    }
}

impl From<DynError> for RegistryError {
    fn from(e: DynError) -> RegistryError {
        RegistryError::Decode(e)
    }
}

impl Registry {
    /// A registry of every struct in `schema`.
    pub fn new(schema: Schema) -> Registry {
        let layout = Layout::new(&schema);
        let tables = Tables::new(&schema);
        let mut by_fingerprint: HashMap<u64, Vec<usize>> = HashMap::new();
        for (i, s) in schema.structs.iter().enumerate() {
            by_fingerprint.entry(s.fingerprint).or_default().push(i);
        }
        Registry { schema, layout, tables, by_fingerprint }
    }

    /// Parses every `.lcm` file below `dirs` (a file given directly is taken too) into a registry.
    ///
    /// Files are read in sorted path order. A file with errors is left out with its diagnostics, and so is a file
    /// that then refers to a type only a left-out file declared, so that one bad file does not hide every other
    /// type. The diagnostics returned are every error that made a file be left out, every warning, and a warning
    /// for each fingerprint that several types share. Callers that want all-or-nothing check
    /// [`Diagnostics::has_errors`].
    pub fn load_dirs(dirs: &[PathBuf]) -> (Registry, Diagnostics) {
        let mut files = Vec::new();
        let mut diags = Vec::new();
        for d in dirs {
            if d.is_file() {
                files.push(d.clone());
            } else if d.is_dir() {
                lcm_files_under(d, 0, &mut files, &mut diags);
            } else {
                diags.push(Diagnostic::file_error(d.clone(), "no such file or directory"));
            }
        }
        files.sort();
        files.dedup();
        let mut sources = Vec::new();
        for f in files {
            match Source::read(&f) {
                Ok(s) => sources.push(s),
                Err(d) => diags.push(d),
            }
        }
        // Leave out the files with errors until the rest checks; each round removes at least one file.
        let schema = loop {
            match check(&sources, &[]) {
                Ok(checked) => {
                    diags.extend(checked.warnings);
                    break checked.schema;
                }
                Err(Diagnostics(found)) => {
                    let bad: Vec<PathBuf> =
                        found.iter().filter(|d| d.is_error()).map(|d| d.span.file.clone()).collect();
                    let before = sources.len();
                    sources.retain(|s| !bad.contains(&s.path));
                    for d in found.into_iter().filter(Diagnostic::is_error) {
                        if !diags.contains(&d) {
                            diags.push(d);
                        }
                    }
                    if sources.len() == before {
                        // An error not tied to one input file: nothing more can be left out.
                        sources.clear();
                    }
                }
            }
        };
        let registry = Registry::new(schema);
        for (fp, idx) in registry.shared_fingerprints() {
            let names: Vec<String> = idx.iter().map(|&i| registry.schema.structs[i].name.full()).collect();
            let first = &registry.schema.structs[idx[0]];
            let msg = format!(
                "fingerprint 0x{fp:016x} is shared by {}: messages with it are reported as ambiguous (decode_as picks one)",
                names.join(", ")
            );
            diags.push(Diagnostic::warning(first.span.clone(), msg));
        }
        (registry, Diagnostics(diags))
    }

    fn shared_fingerprints(&self) -> Vec<(u64, &[usize])> {
        let mut v: Vec<(u64, &[usize])> =
            self.by_fingerprint.iter().filter(|(_, i)| i.len() > 1).map(|(fp, i)| (*fp, i.as_slice())).collect();
        v.sort_by_key(|(_, i)| i[0]);
        v
    }

    fn ctx(&self) -> Ctx<'_> {
        Ctx { schema: &self.schema, layout: &self.layout, tables: &self.tables }
    }

    /// The schema the registry was built from.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The struct with this fingerprint, if exactly one has it (`None` if none does or several do).
    pub fn lookup(&self, fingerprint: u64) -> Option<&Struct> {
        match self.by_fingerprint.get(&fingerprint).map(Vec::as_slice) {
            Some([one]) => Some(&self.schema.structs[*one]),
            _ => None,
        }
    }

    /// Every struct with this fingerprint, in load order.
    pub fn candidates(&self, fingerprint: u64) -> Vec<&Struct> {
        self.by_fingerprint
            .get(&fingerprint)
            .map(|v| v.iter().map(|&i| &self.schema.structs[i]).collect())
            .unwrap_or_default()
    }

    /// The struct called `name`.
    pub fn by_name(&self, name: &TypeName) -> Option<&Struct> {
        self.ctx().struct_index(name).map(|i| &self.schema.structs[i])
    }

    /// Identifies a message by its first 8 bytes and decodes it.
    pub fn decode(&self, bytes: &[u8]) -> Result<(&Struct, Value), RegistryError> {
        let fingerprint = fingerprint_of(bytes).ok_or(RegistryError::TooShort { len: bytes.len() })?;
        let idx = self.by_fingerprint.get(&fingerprint).ok_or(RegistryError::Unknown { fingerprint })?;
        match idx.as_slice() {
            [one] => {
                let st = &self.schema.structs[*one];
                Ok((st, self.ctx().decode(&st.name, bytes)?))
            }
            many => Err(RegistryError::Ambiguous {
                fingerprint,
                names: many.iter().map(|&i| self.schema.structs[i].name.full()).collect(),
            }),
        }
    }

    /// Decodes a message as the type called `name` (checking the fingerprint).
    pub fn decode_as(&self, name: &TypeName, bytes: &[u8]) -> Result<Value, DynError> {
        self.ctx().decode(name, bytes)
    }

    /// Encodes `value` as a message of type `name`.
    pub fn encode(&self, name: &TypeName, value: &Value) -> Result<Vec<u8>, DynError> {
        self.ctx().encode(name, value)
    }

    /// Reads JSON text as a value of type `name` (see [`super::from_json`]).
    pub fn from_json(&self, name: &TypeName, text: &str) -> Result<Value, DynError> {
        self.ctx().read_json(name, text)
    }
}

/// Every `.lcm` file under `dir`, to a bounded depth, not following symbolic links to directories (no cycles).
fn lcm_files_under(dir: &Path, depth: usize, out: &mut Vec<PathBuf>, diags: &mut Vec<Diagnostic>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            diags.push(Diagnostic::file_error(dir.to_path_buf(), format!("cannot read directory: {e}")));
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_dir() {
            if depth < MAX_DIR_DEPTH {
                lcm_files_under(&path, depth + 1, out, diags);
            } else {
                let msg = format!("not searched: more than {MAX_DIR_DEPTH} directories deep");
                diags.push(Diagnostic::warning(Span { file: path, line: 0, col: 0 }, msg));
            }
        } else if path.extension().is_some_and(|e| e == "lcm") {
            out.push(path);
        }
    }
}
