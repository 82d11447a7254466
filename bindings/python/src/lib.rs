//! `nerve._native`: the extension module of the `nerve` Python package (PyO3, built by maturin).
//!
//! # Brief overview
//!
//! Four parts, one file each, all reached through the pure-Python package `nerve` (bindings/python/python/nerve),
//! which re-exports them with type stubs:
//!
//! - `codec`: the native codec that the code `nerve gen -p` writes uses when it imports (`nerve_lcm.py` finds it as
//!   `nerve._native`); a fast path behind the generated pure-Python codec, never a second semantics.
//! - `channel`: `Channel`, Nerve's shared-memory channels (nerve-shm) from Python: create / open / remove / list,
//!   `put`, `get` (next or newest, polling or waiting, with the missed count) and `Loan`, a frame written in place
//!   through a writable buffer and committed. Linux only, as nerve-shm is: elsewhere `not_linux` stands in, whose
//!   constructors raise `ChannelError` naming the transports that work.
//! - `bus`: `Bus` and `Subscription`, nerve-bus from Python (every provider by URL; `publish`, `subscribe` with
//!   LCM's `handler(channel, data)`, `handle`, `handle_timeout`, `fileno`), on which `nerve.lcm.LCM` is built.
//! - `log`: `EventLog` and `Event`, LCM event logs read and written through nerve-log (iteration, seek by offset and
//!   by time, damage skipped and reported), on which `nerve.lcm.EventLog` (LCM's Python API) is built.
//!
//! # The key design decision: bad input is a Python exception
//!
//! Everything that comes from Python - argument types, channel files, log files - is checked and refused with a
//! Python exception (`ValueError`, `TypeError`, `OSError` and its subclasses, `nerve.ChannelError`,
//! `nerve.LogDamageError`); no Rust panic crosses into the interpreter (PyO3 turns one into `PanicException`, and
//! none is expected: the libraries return typed errors). Waiting and large copies run with the GIL released, so
//! other Python threads keep running; waits wake every `SIGNAL_SLICE` to let Ctrl-C through.

#![allow(unsafe_code)]
#![allow(clippy::missing_safety_doc)]

mod bus;
// The one place that differs between systems: nerve-shm's channels exist on Linux only; elsewhere `not_linux`
// gives the same names, each refusing with the bus's own error for shm://.
#[cfg(target_os = "linux")]
mod channel;
#[cfg(not(target_os = "linux"))]
#[path = "not_linux.rs"]
mod channel;
mod codec;
mod log;

use pyo3::prelude::*;

pyo3::create_exception!(
    nerve,
    ChannelError,
    pyo3::exceptions::PyOSError,
    "A shared-memory channel file that is not a channel (foreign, of another version, truncated or corrupt), a \
     channel whose sizes differ from those asked for, or a failed channel operation."
);
pyo3::create_exception!(
    nerve,
    LogDamageError,
    pyo3::exceptions::PyValueError,
    "A damaged region in an event log read with strict=True: the offset, what was wrong and how many bytes."
);

#[pymodule]
#[pyo3(name = "_native")]
fn native_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    codec::init(m)?;
    m.add("ChannelError", m.py().get_type::<ChannelError>())?;
    m.add("LogDamageError", m.py().get_type::<LogDamageError>())?;
    bus::register(m)?;
    channel::register(m)?;
    log::register(m)?;
    Ok(())
}
