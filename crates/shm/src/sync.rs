//! The atomics, fences and writer lock the protocol uses: std's and `lock`'s process-shared lock normally, loom's
//! under `--cfg loom`, so the same protocol code (`ring`) is model-checked by `tests/loom.rs`.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};

/// The writer lock that lives in the header: a futex word naming its holder, whose death the kernel reports.
#[cfg(not(loom))]
pub(crate) use crate::lock::WriterLock;

/// The writer lock under loom: a loom mutex whose state says whether its last owner "died" holding it, so the
/// recovery path (`REC`) is model-checked too.
#[cfg(loom)]
pub(crate) type WriterLock = loom::sync::Mutex<LoomLockState>;

/// What the loom writer lock protects: whether the last owner died holding it (a simulated kill).
#[cfg(loom)]
#[derive(Debug, Default)]
pub(crate) struct LoomLockState {
    pub(crate) owner_died: bool,
}
