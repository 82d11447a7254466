//! Code generators: a checked [`nerve_types::Schema`] in, source files for Rust, C, C++, Python, Java and Go out.
//!
//! # Brief overview
//!
//! Each language has one module with a `generate` function that takes an [`Input`] (the checked types and their
//! [`nerve_types::Layout`]) and that language's options, and returns [`GeneratedFile`]s: paths relative to the
//! output directory and their text. Nothing here writes files; the `nerve gen` command does. Every emitter writes
//! through the one indenting [`writer::CodeWriter`], and the small runtime each language needs (a Rust crate, one C
//! header, one C++ header, one Python module) is emitted next to the generated code or, for Rust, named as a
//! dependency.
//!
//! # Design
//!
//! The generators read only the checked model, never tokens, so what the parser accepts and what the generators
//! emit cannot drift apart. Names that the target language cannot use (a keyword, a character it does not allow)
//! are reported as [`GenError`]s instead of producing code that does not compile.

#![deny(missing_docs)]

use std::collections::HashSet;
use std::fmt;
use std::path::PathBuf;

use nerve_types::{Checked, Enum, Layout, MemberType, Schema, Span, Struct, TypeName};

pub mod writer;

/// What the generators work from: the checked types and their sizes.
pub struct Input<'a> {
    /// The checked schema (input types first, then those found on the include path).
    pub checked: &'a Checked,
    /// Encoded sizes of every struct.
    pub layout: Layout,
}

impl<'a> Input<'a> {
    /// Prepares the input for the generators.
    pub fn new(checked: &'a Checked) -> Input<'a> {
        Input { checked, layout: Layout::new(&checked.schema) }
    }

    /// The structs to generate code for: those declared in the input files.
    pub fn structs(&self) -> &'a [Struct] {
        &self.checked.schema.structs[..self.checked.input_structs]
    }

    /// The enums to generate code for: those declared in the input files.
    pub fn enums(&self) -> &'a [Enum] {
        &self.checked.schema.enums[..self.checked.input_enums]
    }
}

/// One generated file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// Where it goes, relative to the language's output directory.
    pub path: PathBuf,
    /// Its text.
    pub contents: String,
}

/// Why code could not be generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenError {
    /// The declaration at fault.
    pub span: Span,
    /// The target language.
    pub language: &'static str,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for GenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: error: {} (generating {})",
            self.span.file.display(),
            self.span.line,
            self.span.col,
            self.message,
            self.language
        )
    }
}

impl std::error::Error for GenError {}

pub mod c;
pub mod cpp;
pub mod go;
pub mod java;
mod plan;
pub mod python;
pub mod rust;
pub mod rust_include;

/// Options shared by the generators (each reads the ones that concern it).
#[derive(Debug, Clone)]
pub struct Options {
    /// Put in front of every package (`--package-prefix`, as in lcm-gen); does not change fingerprints.
    pub package_prefix: String,
    /// Python: write `__init__.py` files for packages (lcm-gen's default; `--python-no-init` turns it off).
    pub python_init: bool,
    /// Python: numpy arrays for primitive arrays, tuples for small fixed ones and lazily decoded arrays of
    /// fixed-size structs (`--python-numpy`); otherwise (the default) lcm-gen's lists, tuples and bytes.
    pub python_numpy: bool,
    /// Rust: whether generated code may contain `unsafe` (the one-shuffle-per-element decode of arrays of small
    /// numeric structs, `__NERVE_SHUFFLE`). Off (`--rust-no-unsafe`) for crates that `#![forbid(unsafe_code)]`,
    /// which no `#[allow]` can lift: such arrays then decode member by member.
    pub rust_unsafe: bool,
    /// C: generate lcm-gen's `_publish`, `_subscribe`, `_unsubscribe`, `_subscription_set_queue_capacity` and the
    /// `_subscription_t` / `_handler_t` types against `<lcm/lcm.h>` (lcm-gen's default; `--c-no-pubsub` leaves them
    /// out, and the generated C then needs no LCM header or library at all).
    pub c_pubsub: bool,
    /// Go: lcm-gen's `--go-*` options.
    pub go: go::GoOptions,
    /// Java: what follows the class name in every class declaration (`--jdecl`, lcm-gen's default
    /// `implements lcm.lcm.LCMEncodable`).
    pub java_decl: String,
    /// Java: the package of types that have none (`--jdefaultpkg`, lcm-gen's default `lcmtypes`).
    pub java_default_package: String,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            package_prefix: String::new(),
            python_init: true,
            python_numpy: false,
            rust_unsafe: true,
            c_pubsub: true,
            go: go::GoOptions::default(),
            java_decl: "implements lcm.lcm.LCMEncodable".to_owned(),
            java_default_package: "lcmtypes".to_owned(),
        }
    }
}

/// Structs that reach themselves through their members.
pub(crate) fn recursive_types(schema: &Schema) -> HashSet<TypeName> {
    let mut out = HashSet::new();
    for s in &schema.structs {
        let mut seen = HashSet::new();
        let mut stack: Vec<&TypeName> = struct_refs(s, false);
        while let Some(n) = stack.pop() {
            if n == &s.name {
                out.insert(s.name.clone());
                break;
            }
            if seen.insert(n.clone()) {
                if let Some(t) = schema.struct_named(n) {
                    stack.extend(struct_refs(t, false));
                }
            }
        }
    }
    out
}

/// The struct types `s`'s members name (`only_fixed`: of members whose dimensions are all fixed).
pub(crate) fn struct_refs(s: &Struct, only_fixed: bool) -> Vec<&TypeName> {
    s.members
        .iter()
        .filter(|m| !only_fixed || m.all_dims_fixed())
        .filter_map(|m| if let MemberType::Struct(n) = &m.ty { Some(n) } else { None })
        .collect()
}
