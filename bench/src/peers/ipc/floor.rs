//! The two floors of the latency suite, over one shared page of slots (a file mapped by every process):
//!
//! - `futex`: the sender copies the message into the next slot, publishes the new count (a 32-bit word) and calls
//!   `FUTEX_WAKE` on it every time; a receiver with nothing new sleeps in `FUTEX_WAIT` on the count. The cheapest
//!   way a sleeping process can learn of a message: what a waiting reader pays at least.
//! - `spin`: the same page, no system call: the receiver spins on the count (the cache line's transfer between CPUs
//!   is all that is left). The polling floor.
//!
//! Layout: the count at byte 0 (a cache line of its own), then [`SLOTS`] slots of [`SIZE`] bytes, each written and
//! read as eight 64-bit atomics. A receiver that falls more than `SLOTS - 1` messages behind skips ahead and counts
//! the skipped messages as missed; a slot overwritten while it was read (checked seqlock-style) is missed too.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

use super::sys::{futex_wait, futex_wake_all, Mapping};
use super::{Got, IpcError, Rx, Tx, SIZE};
use crate::harness::clock::mono_ns;

/// Slots in the ring.
pub const SLOTS: u32 = 512;
const HEADER: usize = 64;
const LEN: usize = HEADER + SLOTS as usize * SIZE;
const WORDS: usize = SIZE / 8;

struct Page(Mapping);

impl Page {
    fn count(&self) -> &AtomicU32 {
        self.0.atomic_u32(0)
    }

    fn word(&self, slot: u32, i: usize) -> &AtomicU64 {
        self.0.atomic_u64(HEADER + slot as usize * SIZE + i * 8)
    }
}

/// A floor's receiver.
pub struct FloorRx {
    page: Page,
    wait: bool,
    /// The count up to which this receiver has read.
    next: u32,
    missed: u64,
}

impl FloorRx {
    /// Maps (creating if need be) the page at `path`; `wait`: sleep on the futex, else spin.
    pub fn open(path: &str, wait: bool) -> Result<FloorRx, IpcError> {
        let page = Page(Mapping::open(path.as_ref(), LEN, true)?);
        let next = page.count().load(Ordering::Acquire);
        Ok(FloorRx { page, wait, next, missed: 0 })
    }
}

impl Rx for FloorRx {
    fn recv(&mut self, buf: &mut [u8; SIZE], deadline_ns: u64) -> Result<Got, IpcError> {
        let mut spins: u32 = 0;
        loop {
            let c = self.page.count().load(Ordering::Acquire);
            if c != self.next {
                let behind = c.wrapping_sub(self.next);
                if behind >= SLOTS {
                    let skip = behind - SLOTS / 2;
                    self.missed += u64::from(skip);
                    self.next = self.next.wrapping_add(skip);
                }
                let slot = self.next % SLOTS;
                for i in 0..WORDS {
                    buf[i * 8..i * 8 + 8]
                        .copy_from_slice(&self.page.word(slot, i).load(Ordering::Relaxed).to_le_bytes());
                }
                // Seqlock check: the writer fences (Release) before it writes a slot, so if any word above came from
                // a later lap, this load sees the count that lap started from.
                fence(Ordering::Acquire);
                let c2 = self.page.count().load(Ordering::Relaxed);
                self.next = self.next.wrapping_add(1);
                if c2.wrapping_sub(self.next.wrapping_sub(1)) >= SLOTS {
                    self.missed += 1;
                    continue;
                }
                return Ok(Got::Msg);
            }
            if self.wait {
                let left_ms = deadline_ns.saturating_sub(mono_ns()) / 1_000_000;
                if left_ms == 0 {
                    return Ok(Got::Idle);
                }
                futex_wait(self.page.count(), c, left_ms.min(50));
            } else {
                std::hint::spin_loop();
                spins = spins.wrapping_add(1);
                if spins & 4095 == 0 && mono_ns() >= deadline_ns {
                    return Ok(Got::Idle);
                }
            }
        }
    }

    fn missed(&self) -> u64 {
        self.missed
    }
}

/// A floor's sender (the only writer of its page).
pub struct FloorTx {
    page: Page,
    wake: bool,
}

impl FloorTx {
    /// Maps the page the receivers made at `path`; `wake`: call `FUTEX_WAKE` after every message.
    pub fn open(path: &str, wake: bool) -> Result<FloorTx, IpcError> {
        Ok(FloorTx { page: Page(Mapping::open(path.as_ref(), LEN, false)?), wake })
    }
}

impl Tx for FloorTx {
    fn send(&mut self, msg: &[u8; SIZE]) -> Result<(), IpcError> {
        let c = self.page.count().load(Ordering::Relaxed);
        let slot = c % SLOTS;
        fence(Ordering::Release);
        for i in 0..WORDS {
            let mut w = [0u8; 8];
            w.copy_from_slice(&msg[i * 8..i * 8 + 8]);
            self.page.word(slot, i).store(u64::from_le_bytes(w), Ordering::Relaxed);
        }
        self.page.count().store(c.wrapping_add(1), Ordering::Release);
        if self.wake {
            futex_wake_all(self.page.count());
        }
        Ok(())
    }
}
