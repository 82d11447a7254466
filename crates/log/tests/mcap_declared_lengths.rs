//! MCAP records whose strings and maps claim more bytes than the record holds (a 4 GB metadata name in a record
//! of ten bytes), and records of an uncompressed chunk that run past its end, both found by the fuzzer, are
//! refused with an error naming what is wrong (no panic), and nothing asks the allocator for what they claim. Its own test binary: the allocator that records the largest request serves it alone.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Cursor;
use std::sync::atomic::{AtomicUsize, Ordering};

use nerve_log::mcap::McapReader;
use nerve_log::LogError;

/// The system allocator, keeping the largest size asked of it.
struct LargestRequest;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed unchanged to the system allocator, which upholds GlobalAlloc's contract. The one
// unsafe here: a test allocator can only be written this way.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for LargestRequest {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's layout, as GlobalAlloc::alloc requires.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        // SAFETY: `ptr` came from this allocator with `layout`, as GlobalAlloc::realloc requires.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: LargestRequest = LargestRequest;

fn record(op: u8, body: &[u8]) -> Vec<u8> {
    let mut r = vec![op];
    r.extend_from_slice(&(body.len() as u64).to_le_bytes());
    r.extend_from_slice(body);
    r
}

fn string(s: &[u8]) -> Vec<u8> {
    let mut b = (s.len() as u32).to_le_bytes().to_vec();
    b.extend_from_slice(s);
    b
}

/// Reads `file` to its end or first error: the error's text, or `None` for a clean end.
fn read_to_error(file: Vec<u8>) -> Option<String> {
    let len = file.len() as u64;
    let mut r = McapReader::from_reader(Cursor::new(file), len);
    loop {
        match r.next_event() {
            Ok(Some(_)) => {}
            Ok(None) => return None,
            Err(e) => {
                assert!(matches!(e, LogError::Mcap { .. }), "{e:?}");
                return Some(e.to_string());
            }
        }
    }
}

#[test]
fn lengths_past_their_record_are_refused_without_allocating_them() {
    let magic = b"\x89MCAP0\r\n".to_vec();
    let huge = 0xF6FF_FFFEu32.to_le_bytes();
    let mut cases: Vec<(&str, Vec<u8>, &str)> = Vec::new();

    // The fuzzer's input, as it found it: an empty record of opcode 0, then metadata whose name claims 4 GB.
    let found = [
        137, 77, 67, 65, 80, 48, 13, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 10, 0, 0, 0, 0, 0, 0, 0, 254, 255, 255, 246, 0,
        0, 39, 0, 0, 4,
    ];
    cases.push(("the fuzzer's metadata name", found.to_vec(), "metadata record claims 4143972350 bytes for its name"));

    let mut body = string(b"calibration");
    body.extend_from_slice(&huge);
    cases.push(("a metadata map", [magic.clone(), record(0x0C, &body)].concat(), "for its metadata"));

    // A map whose byte length fits but whose key claims 4 GB.
    let mut body = string(b"calibration");
    body.extend_from_slice(&12u32.to_le_bytes());
    body.extend_from_slice(&huge);
    body.extend_from_slice(&[0; 8]);
    cases.push(("a metadata key", [magic.clone(), record(0x0C, &body)].concat(), "for its metadata"));

    let mut body = vec![1, 0, 0, 0];
    body.extend_from_slice(&huge);
    cases.push(("a channel topic", [magic.clone(), record(0x04, &body)].concat(), "channel record claims"));

    let mut body = vec![1, 0];
    body.extend(string(b"pose_t"));
    body.extend(string(b"lcm"));
    body.extend_from_slice(&huge);
    cases.push(("schema data", [magic.clone(), record(0x03, &body)].concat(), "for its data"));

    cases.push(("a schema cut in its id", [magic.clone(), record(0x03, &[1])].concat(), "for its ids"));

    // The fuzzer's second find: an uncompressed chunk whose record claims more than the chunk's records hold
    // (the `mcap` crate's reader subtracted past zero on it).
    let found = include_bytes!("../../../fuzz/corpus/mcap_reader/regress_uncompressed_chunk_record_past_its_end");
    cases.push(("a chunk's record past its end", found.to_vec(), "records run past its end"));

    for (what, file, expected) in cases {
        LARGEST.store(0, Ordering::Relaxed);
        let err = read_to_error(file).unwrap_or_else(|| panic!("{what}: read to a clean end"));
        let largest = LARGEST.load(Ordering::Relaxed);
        assert!(err.contains(expected), "{what}: {err}");
        assert!(largest < 1 << 20, "{what}: asked the allocator for {largest} bytes");
    }
}

#[test]
fn well_formed_records_with_strings_and_maps_still_read() {
    // A channel whose metadata map holds one pair, then a message on it: the walk accepts what the crate reads.
    let mut f = b"\x89MCAP0\r\n".to_vec();
    f.extend(record(0x01, &[0; 8]));
    let mut ch = vec![1, 0, 0, 0];
    ch.extend(string(b"POSE"));
    ch.extend(string(b"lcm"));
    let pair = [string(b"k"), string(b"v")].concat();
    ch.extend_from_slice(&(pair.len() as u32).to_le_bytes());
    ch.extend(pair);
    f.extend(record(0x04, &ch));
    let mut msg = vec![1, 0];
    msg.extend_from_slice(&[0; 20]);
    msg.extend_from_slice(b"payload");
    f.extend(record(0x05, &msg));
    let len = f.len() as u64;
    let mut r = McapReader::from_reader(Cursor::new(f), len);
    let e = r.next_event().unwrap().expect("the message");
    assert_eq!((e.channel_bytes, e.data), (&b"POSE"[..], &b"payload"[..]));
}
