//! The rust generator (being written).

use crate::{GenError, GeneratedFile, Input, Options};

/// Generates rust code for every input type.
pub fn generate(input: &Input<'_>, _opts: &Options) -> Result<Vec<GeneratedFile>, GenError> {
    let span = input.structs().first().map(|s| s.span.clone()).unwrap_or_default();
    Err(GenError { span, language: "rust", message: "not written yet".into() })
}
