//! Fuzzes the `.lcm` front end: any text must give a schema or diagnostics, never a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nerve_types::{check, Source};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let src = Source { path: "fuzz.lcm".into(), text: text.to_owned() };
    match check(&[src], &[]) {
        Ok(checked) => {
            // Every accepted schema has sizes and fingerprints; computing the layout must not panic either.
            let _ = nerve_types::Layout::new(&checked.schema);
        }
        Err(diags) => {
            assert!(diags.has_errors());
            let _ = diags.render();
        }
    }
});
