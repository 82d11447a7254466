//! A check the `mcap` crate's linear reader lacks (0.26.0, the newest release): in an uncompressed chunk, a record
//! whose length runs past the end of the chunk's records makes it subtract past zero (`compressed_remaining` in
//! `linear_reader.rs`): a panic in a build with overflow checks, and in one without, a wrapped count after which
//! records past the chunk are read as if inside it. The fuzzer found it (`fuzz/corpus/mcap_reader/regress_*`).
//!
//! [`ChunkBounds`] sees the file's bytes in order as they are handed to the reader and refuses such a chunk before
//! the reader is told the bytes arrived, so the reader never reaches the subtraction. It buffers nothing but the
//! header it is reading (at most 32 bytes). Compressed chunks need no help: the crate bounds their records by the
//! decompressed size. Everything else malformed is left to the crate, which reports it.

use mcap::records::op;

/// Follows a file's top-level records and the records of its uncompressed chunks (see the module docs).
#[derive(Debug)]
pub(super) struct ChunkBounds {
    step: Step,
    /// The bytes of the header being gathered, and how many it needs.
    head: [u8; 32],
    gathered: usize,
    /// Bytes to pass over before the next step.
    skip: u64,
    /// Bytes left in the chunk record being read, and in its records section.
    chunk_left: u64,
    records_left: u64,
    /// Bytes seen so far: where a refused record starts.
    offset: u64,
}

/// What the next gathered (or skipped) bytes are.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    /// The file's magic, passed over.
    Magic,
    /// A top-level record's opcode and length.
    RecordHeader,
    /// A chunk's times, size, CRC and compression name length.
    ChunkFixed,
    /// An uncompressed chunk's records length.
    RecordsLength,
    /// A record's opcode and length, inside an uncompressed chunk.
    InnerHeader,
    /// The footer has been seen: what follows is the end magic, which the crate checks.
    Done,
}

const MAGIC_LEN: u64 = 8;
const OPCODE_LEN: usize = 1 + 8;
const CHUNK_FIXED: usize = 8 + 8 + 8 + 4 + 4;

impl ChunkBounds {
    pub(super) fn new() -> ChunkBounds {
        ChunkBounds {
            step: Step::Magic,
            head: [0; 32],
            gathered: 0,
            skip: MAGIC_LEN,
            chunk_left: 0,
            records_left: 0,
            offset: 0,
        }
    }

    /// Takes the next bytes of the file; an error for an uncompressed chunk one of whose records runs past the
    /// chunk's records.
    pub(super) fn check(&mut self, mut bytes: &[u8]) -> Result<(), String> {
        while !bytes.is_empty() && self.step != Step::Done {
            if self.skip > 0 {
                let n = self.skip.min(bytes.len() as u64);
                self.skip -= n;
                self.offset += n;
                bytes = &bytes[n as usize..];
                if self.skip == 0 {
                    self.after_skip();
                }
                continue;
            }
            let need = self.need();
            let n = (need - self.gathered).min(bytes.len());
            self.head[self.gathered..self.gathered + n].copy_from_slice(&bytes[..n]);
            self.gathered += n;
            self.offset += n as u64;
            bytes = &bytes[n..];
            if self.gathered == need {
                self.gathered = 0;
                self.on_header()?;
            }
        }
        Ok(())
    }

    fn need(&self) -> usize {
        match self.step {
            Step::RecordHeader | Step::InnerHeader => OPCODE_LEN,
            Step::ChunkFixed => CHUNK_FIXED,
            Step::RecordsLength => 8,
            Step::Magic | Step::Done => 0,
        }
    }

    fn u64_at(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.head[at..at + 8].try_into().expect("eight bytes"))
    }

    fn after_skip(&mut self) {
        self.step = match self.step {
            Step::InnerHeader if self.records_left > 0 => Step::InnerHeader,
            Step::InnerHeader if self.chunk_left > 0 => {
                // The chunk's padding after its records.
                self.skip = std::mem::take(&mut self.chunk_left);
                Step::RecordHeader
            }
            _ => Step::RecordHeader,
        };
    }

    /// Acts on a gathered header.
    fn on_header(&mut self) -> Result<(), String> {
        match self.step {
            Step::RecordHeader => {
                let (opcode, len) = (self.head[0], self.u64_at(1));
                if opcode == op::FOOTER {
                    self.step = Step::Done;
                } else if opcode == op::CHUNK && len >= (CHUNK_FIXED + 8) as u64 {
                    self.chunk_left = len;
                    self.step = Step::ChunkFixed;
                } else {
                    // Not a chunk (or one too short for its header, which the crate refuses).
                    self.skip_then(len, Step::RecordHeader);
                }
            }
            Step::ChunkFixed => {
                self.chunk_left -= CHUNK_FIXED as u64;
                let name_len = u32::from_le_bytes(self.head[28..32].try_into().expect("four bytes"));
                if name_len == 0 {
                    self.step = Step::RecordsLength;
                } else {
                    // Compressed (or claiming a name longer than the chunk, which the crate refuses).
                    let rest = std::mem::take(&mut self.chunk_left);
                    self.skip_then(rest, Step::RecordHeader);
                }
            }
            Step::RecordsLength => {
                self.chunk_left -= 8;
                self.records_left = self.u64_at(0);
                if self.records_left > self.chunk_left {
                    // The crate refuses a records section longer than its chunk.
                    let rest = std::mem::take(&mut self.chunk_left);
                    self.skip_then(rest, Step::RecordHeader);
                } else if self.records_left == 0 {
                    let rest = std::mem::take(&mut self.chunk_left);
                    self.skip_then(rest, Step::RecordHeader);
                } else {
                    self.check_room(OPCODE_LEN as u64, "the first record's opcode and length")?;
                    self.step = Step::InnerHeader;
                }
            }
            Step::InnerHeader => {
                let (opcode, len) = (self.head[0], self.u64_at(1));
                let whole = len.saturating_add(OPCODE_LEN as u64);
                self.check_room(whole, &format!("a record of opcode {opcode:#04x} and {len} bytes"))?;
                self.records_left -= whole;
                self.chunk_left -= whole;
                if self.records_left > 0 {
                    self.check_room(OPCODE_LEN as u64, "the next record's opcode and length")?;
                }
                self.skip = len;
                if len == 0 {
                    self.after_skip();
                }
            }
            Step::Magic | Step::Done => {}
        }
        Ok(())
    }

    fn skip_then(&mut self, n: u64, step: Step) {
        self.step = step;
        self.skip = n;
    }

    /// An error unless `n` bytes fit in what is left of the chunk's records.
    fn check_room(&self, n: u64, what: &str) -> Result<(), String> {
        if n <= self.records_left {
            return Ok(());
        }
        Err(format!(
            "an uncompressed chunk's records run past its end at byte {}: {what} with {} bytes of records left",
            self.offset, self.records_left
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(opcode: u8, body: &[u8]) -> Vec<u8> {
        let mut r = vec![opcode];
        r.extend_from_slice(&(body.len() as u64).to_le_bytes());
        r.extend_from_slice(body);
        r
    }

    /// An uncompressed chunk around `records` (whose length field says `records_len`), with `padding` after.
    fn chunk(records: &[u8], records_len: u64, padding: usize) -> Vec<u8> {
        let mut body = vec![0u8; 24];
        body.extend_from_slice(&0u32.to_le_bytes());
        body.extend_from_slice(&0u32.to_le_bytes());
        body.extend_from_slice(&records_len.to_le_bytes());
        body.extend_from_slice(records);
        body.extend(std::iter::repeat_n(0, padding));
        record(op::CHUNK, &body)
    }

    /// Checks `file` fed in pieces of `piece` bytes.
    fn check_in_pieces(file: &[u8], piece: usize) -> Result<(), String> {
        let mut b = ChunkBounds::new();
        file.chunks(piece).try_for_each(|p| b.check(p))
    }

    fn file(records: &[Vec<u8>]) -> Vec<u8> {
        let mut f = b"\x89MCAP0\r\n".to_vec();
        records.iter().for_each(|r| f.extend(r));
        f
    }

    #[test]
    fn well_formed_chunks_pass_however_the_bytes_arrive() {
        let inner = [record(op::MESSAGE, &[7; 30]), record(op::MESSAGE, &[]), record(op::CHANNEL, &[1; 5])].concat();
        let f = file(&[
            record(op::HEADER, &[0; 8]),
            chunk(&inner, inner.len() as u64, 3),
            chunk(&[], 0, 0),
            record(op::FOOTER, &[0; 20]),
            b"\x89MCAP0\r\n trailing".to_vec(),
        ]);
        for piece in [1, 2, 7, 9, 64, f.len()] {
            assert_eq!(check_in_pieces(&f, piece), Ok(()), "pieces of {piece}");
        }
    }

    #[test]
    fn a_record_past_its_chunks_records_is_refused_however_the_bytes_arrive() {
        let mut long = record(op::MESSAGE, &[7; 30]);
        long[1..9].copy_from_slice(&31u64.to_le_bytes());
        let cases = [
            ("a record one byte past", [record(op::MESSAGE, &[1; 4]), long].concat()),
            ("a header cut by the end", vec![op::MESSAGE, 0, 0]),
        ];
        for (what, inner) in cases {
            let f = file(&[record(op::HEADER, &[0; 8]), chunk(&inner, inner.len() as u64, 40)]);
            for piece in [1, 5, 9, f.len()] {
                let err = check_in_pieces(&f, piece).expect_err(what);
                assert!(err.contains("run past its end"), "{what}: {err}");
            }
        }
    }

    #[test]
    fn compressed_chunks_and_other_records_are_left_to_the_crate() {
        let mut body = vec![0u8; 24];
        body.extend_from_slice(&0u32.to_le_bytes());
        body.extend_from_slice(&4u32.to_le_bytes());
        body.extend_from_slice(b"zstd");
        body.extend_from_slice(&5u64.to_le_bytes());
        body.extend_from_slice(&[0xff; 5]);
        let f = file(&[record(op::CHUNK, &body), record(op::MESSAGE, &[0; 3]), record(op::CHUNK, &[0; 4])]);
        assert_eq!(check_in_pieces(&f, 3), Ok(()));
    }
}
