//! The benchmark suites, one module each, named as `nerve-bench SUITE` names them (bench/README.md has a section
//! per suite). Each runs Nerve against its peers (`crate::peers`) in the same run, with the shared measurement code
//! of `crate::harness`.

pub mod echo;
pub mod foxglove;
pub mod intraprocess;
pub mod latency;
pub mod log;
pub mod marshalling;
pub mod scale;
pub mod zenoh;
