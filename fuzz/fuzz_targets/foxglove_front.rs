//! Fuzzes what the Foxglove server's front does with bytes it did not make: a client's HTTP request head (parsed
//! before the SDK sees the connection) and a byte stream split into WebSocket frames for a client's newest-wins
//! queue. Neither may panic; a head is only ever handed to the SDK if it asks for a WebSocket upgrade; the frames
//! written out are bytes of the input (frames are dropped, never invented or grown).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&messages, rest)) = data.split_first() else { return };
    let decision = nerve_foxglove::fuzzing::request_head(rest);
    if decision == "WebSocket" {
        let lower = String::from_utf8_lossy(rest).to_ascii_lowercase();
        assert!(lower.contains("upgrade") && lower.contains("websocket"), "{decision} for {lower:?}");
    }
    let written = nerve_foxglove::fuzzing::split_frames(rest, usize::from(messages % 8));
    assert!(written.len() <= rest.len(), "{} bytes written from {}", written.len(), rest.len());
});
