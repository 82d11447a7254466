//! Helpers shared by the integration tests: a private temporary channel directory that removes itself, and
//! self-checking payloads (writer id, counter, checksum) so a torn or mixed-up message is detected.

#![allow(dead_code)]

use std::path::Path;

/// A fresh directory under the system temp dir, removed (with its channels) when dropped.
pub struct TestDir(tempfile::TempDir);

impl TestDir {
    pub fn new(tag: &str) -> TestDir {
        TestDir(tempfile::Builder::new().prefix(&format!("nerve-shm-{tag}-")).tempdir().unwrap())
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

/// FNV-1a over the bytes.
pub fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// A payload of `len` bytes (at least 24): writer id, counter, filler derived from both, and a checksum at the end.
pub fn payload(writer: u64, counter: u64, len: usize) -> Vec<u8> {
    let mut p = vec![0u8; len];
    fill_payload(&mut p, writer, counter);
    p
}

/// Writes a [`payload`] into `p` in place (into a loaned frame, say).
pub fn fill_payload(p: &mut [u8], writer: u64, counter: u64) {
    let len = p.len();
    assert!(len >= 24);
    p[..8].copy_from_slice(&writer.to_le_bytes());
    p[8..16].copy_from_slice(&counter.to_le_bytes());
    let mut x = writer.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ counter ^ 1;
    for b in &mut p[16..len - 8] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    let sum = checksum(&p[..len - 8]);
    p[len - 8..].copy_from_slice(&sum.to_le_bytes());
}

/// Checks a payload made by [`payload`]; returns (writer, counter) if it is intact.
pub fn check_payload(p: &[u8]) -> Option<(u64, u64)> {
    if p.len() < 24 {
        return None;
    }
    let (body, sum) = p.split_at(p.len() - 8);
    if checksum(body) != u64::from_le_bytes(sum.try_into().unwrap()) {
        return None;
    }
    let writer = u64::from_le_bytes(p[..8].try_into().unwrap());
    let counter = u64::from_le_bytes(p[8..16].try_into().unwrap());
    (payload(writer, counter, p.len()) == p).then_some((writer, counter))
}
