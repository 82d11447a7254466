//! Fuzzes the decoders and views that `nerve gen --rust` writes, on the generator's golden output
//! (crates/gen/test_data/rust/basic/out, kept current by nerve-gen's rust_golden test): fixed-size structs and arrays
//! of them, strings, var x const arrays, a long bool array, cross-package nesting and a recursive type.
//!
//! Any input must give a value or a `DecodeError`, never a panic, an over-read or a huge allocation. A value must
//! re-encode, decode back to the same encoding, and read the same through the view.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nerve_codec::json::WriteJson;
use nerve_codec::view::StructView;
use nerve_codec::{DecodeError, Message};

#[path = "../../crates/gen/test_data/rust/basic/out/mod.rs"]
#[allow(dead_code)]
mod lcmtypes;

use lcmtypes::demo::{NodeT, NodeTView, PointT, PointTView, ScanT, ScanTView};
use lcmtypes::other::{UsesT, UsesTView};
use lcmtypes::root::{BareT, BareTView};

fn check<'a, T: Message + WriteJson, V: StructView<'a> + WriteJson>(
    data: &'a [u8],
    view: fn(&'a [u8]) -> Result<V, DecodeError>,
) {
    let viewed = view(data).and_then(|v| Ok((v.to_json()?, v.body_len()?)));
    let Ok(msg) = T::decode(data) else { return };
    let bytes = msg.encode().expect("a decoded value re-encodes");
    assert_eq!(bytes.len(), msg.encoded_size());
    let again = T::decode(&bytes).expect("a re-encoded value decodes");
    assert_eq!(again.encode().expect("re-encodes"), bytes);
    let (json, len) = viewed.expect("the view reads what the decoder accepted");
    assert_eq!(json, msg.to_json().expect("values always print"));
    assert!(8 + len <= data.len());
}

fuzz_target!(|input: &[u8]| {
    let Some((&which, rest)) = input.split_first() else { return };
    // Half the time put the right fingerprint in front, so the bodies get fuzzed rather than the check.
    let fp = match which % 5 {
        0 => PointT::FINGERPRINT,
        1 => ScanT::FINGERPRINT,
        2 => NodeT::FINGERPRINT,
        3 => UsesT::FINGERPRINT,
        _ => BareT::FINGERPRINT,
    };
    let mut owned;
    let data = if which & 0x80 != 0 {
        owned = fp.to_be_bytes().to_vec();
        owned.extend_from_slice(rest);
        &owned[..]
    } else {
        rest
    };
    match which % 5 {
        0 => check::<PointT, _>(data, PointTView::new),
        1 => check::<ScanT, _>(data, ScanTView::new),
        2 => check::<NodeT, _>(data, NodeTView::new),
        3 => check::<UsesT, _>(data, UsesTView::new),
        _ => check::<BareT, _>(data, BareTView::new),
    }
});
