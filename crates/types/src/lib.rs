//! The LCM type language: `.lcm` files in, a checked [`Schema`] with fingerprints out.
//!
//! # Brief overview
//!
//! [`load`] (or [`check`] for text already in memory) parses every file, checks each declaration and then the set
//! as a whole, and returns a [`Checked`] schema or every [`Diagnostic`] found. A [`Schema`] holds [`Struct`]s whose
//! [`Member`]s carry resolved types and [`Dim`]ensions, and each struct's fingerprint computed exactly as lcm-gen
//! 1.5.3 does. The [`dynamic`] module decodes any encoded message into a [`dynamic::Value`] tree given only the
//! schema, and [`Registry`] finds a type by fingerprint; the tools use both.
//!
//! ```
//! let src = nerve_types::Source { path: "laser_t.lcm".into(), text:
//!     "struct laser_t { int64_t utime; int32_t nranges; float ranges[nranges]; float rad0; float radstep; }".into() };
//! let checked = nerve_types::check(&[src], &[]).unwrap();
//! assert_eq!(checked.schema.structs[0].fingerprint, 0x18f48ab44e6fd954);
//! ```
//!
//! # Design
//!
//! Errors are collected, not thrown: the parser recovers at the next `;` or `}` so that one run reports every
//! problem as `file:line:col: error: message`. This crate reads only the files it is given (and the include path) and
//! knows nothing of code generation or transports.

#![deny(missing_docs)]

pub mod check;
pub mod diagnostic;
pub mod dynamic;
pub mod fingerprint;
pub mod layout;
mod lexer;
pub mod model;
mod parser;

pub use check::{check, load, Checked, Source};
pub use diagnostic::{Diagnostic, Diagnostics, Severity};
pub use layout::Layout;
pub use model::{
    Const, ConstValue, Dim, Enum, EnumValue, Member, MemberType, Primitive, Schema, Span, Struct, TypeName,
};
// The registry belongs to the dynamic codec, whose tables it holds; every tool names it from the root.
pub use dynamic::registry::{self, Registry};
