//! The systems the suites hold Nerve against, apart from the suites that run them: the marshalling suite's codecs
//! (real LCM C, Nerve's C and Rust, flatbuffers, bincode, a memcpy floor) and the latency suite's transports
//! (nerve-shm, Ach's API on it, the bus from Rust and C, iceoryx2, kernel IPC and the futex and spin floors). The
//! echo suite's peers are programs (csrc/, python/) that `crate::harness` starts.

pub mod ipc;
pub mod marshalling;
