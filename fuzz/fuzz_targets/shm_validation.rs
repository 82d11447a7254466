//! Fuzzes nerve-shm's validation of what it reads from a channel file. Two modes, by the first byte:
//! - even: the rest is a whole channel file, opened like any other: it must be refused with an error or opened, and
//!   an opened one checked (`Channel::check`), listed and read without a panic or an out-of-bounds access;
//! - odd: a valid channel (4 frames of 64 bytes, with checksums if bit 1 is set) holding 6 known messages is patched
//!   with the input's `(offset u16, length u8, bytes)` records, as another process scribbling over it would; then
//!   the check runs, readers get in every mode, and a writer puts (a patched lock word names a writer nobody runs:
//!   the put takes the lock over after one liveness check). On a channel with checksums every message a reader is
//!   handed must be one of the messages put, byte for byte. With bit 2 set, the file is also shrunk (to the input's
//!   last byte in 256ths of its length) under the open channel, as a neighbour's `truncate` would: the accesses that
//!   fault are repaired (the mapping reads zeros), and once the handle says it is damaged every put fails.
#![no_main]

use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;
use nerve_shm::{Channel, ChannelConfig, GetOutcome, ReadMode, Wait};

#[path = "common/scratch.rs"]
mod scratch;

fn dir() -> &'static PathBuf {
    scratch::scratch_dir("shm")
}

fn message(i: u8) -> Vec<u8> {
    vec![i; 8 + usize::from(i) * 7]
}

fn read_everything(channel: &Channel, known: Option<&[Vec<u8>]>) {
    let _ = channel.check();
    let _ = channel.stats();
    let mut buf = [0u8; 128];
    for mode in [ReadMode::Next, ReadMode::Newest] {
        let mut reader = channel.reader_from_oldest();
        for _ in 0..8 {
            match reader.get(&mut buf, mode, Wait::Poll) {
                Ok(GetOutcome::Message(info)) => {
                    if let Some(known) = known {
                        assert!(known.iter().any(|m| m[..] == buf[..info.len]), "scribbled bytes handed out as good");
                    }
                }
                Ok(GetOutcome::NothingNew) | Err(_) => break,
                Ok(_) => {}
            }
            let _ = reader.get_with(mode, Wait::Poll, |b| b.iter().map(|&x| u64::from(x)).sum::<u64>());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let path = dir().join("nerve-f");
    let _ = std::fs::remove_file(&path);
    if mode % 2 == 0 {
        std::fs::write(&path, rest).expect("writing the file");
        if let Ok(channel) = Channel::open("f", Some(dir())) {
            read_everything(&channel, None);
        }
        let _ = Channel::list(Some(dir()));
        let _ = std::fs::remove_file(&path);
        return;
    }
    let checksum = mode & 2 != 0;
    let channel = Channel::create("f", &ChannelConfig::new(4, 64).dir(dir()).checksum(checksum)).expect("a channel");
    let mut writer = channel.writer();
    let known: Vec<Vec<u8>> = (0..7).map(message).collect();
    for m in &known[..6] {
        writer.put(m).expect("a put on a fresh channel");
    }
    let file = std::fs::OpenOptions::new().write(true).open(&path).expect("the channel file");
    let len = file.metadata().expect("stat").len();
    let mut patches = rest;
    while patches.len() >= 3 {
        let offset = u64::from(u16::from_le_bytes([patches[0], patches[1]])) % len;
        let n = (usize::from(patches[2]) % 16).min(patches.len() - 3);
        let bytes = &patches[3..3 + n];
        let n = bytes.len().min((len - offset) as usize);
        file.write_at(&bytes[..n], offset).expect("a patch");
        patches = &patches[3 + n..];
    }
    if mode & 4 != 0 {
        let keep = u64::from(*rest.last().unwrap_or(&0));
        file.set_len(len * keep / 256).expect("shrinking the file");
    }
    read_everything(&channel, checksum.then_some(&known[..]));
    let put = writer.put(&known[6]);
    assert!(!channel.is_damaged() || put.is_err(), "a put on a damaged channel succeeded");
    read_everything(&channel, checksum.then_some(&known[..]));
    // The mapping stays valid after the file goes; the directory is left empty for the next run.
    let _ = std::fs::remove_file(&path);
});
