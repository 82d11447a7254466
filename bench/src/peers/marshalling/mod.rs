//! The marshalling suite's codecs: Nerve's Rust and C, real LCM C (`csys`), flatbuffers, bincode and the memcpy
//! floor (`others`); the Python ones run in python/marshalling.py. Each returns its metrics for a case, or `Err("unavailable: why")` when it could not be
//! built here (build.rs records the reason).

use crate::data::Case;
use crate::harness::timing::Config;
/// The venv, for the suites that run the Python codecs (the harness finds it).
pub(crate) use crate::harness::venv;

pub mod csys;
pub mod java;
#[cfg(has_nerve_rust)]
pub mod nerve_rust;
pub mod others;

/// The five metrics of PolySync's serialization paper.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Metric {
    /// In-memory form to a preallocated buffer.
    Encode,
    /// Buffer to the in-memory form (allocations included, freed after).
    Decode,
    /// Decode and sum every numeric value.
    Full,
    /// Read msg_info.guid.
    Fixed,
    /// Read the middle point's position[1].
    Var,
}

/// Every metric, in column order.
pub const METRICS: [Metric; 5] = [Metric::Encode, Metric::Decode, Metric::Full, Metric::Fixed, Metric::Var];

impl Metric {
    /// The name in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Encode => "encode",
            Metric::Decode => "decode",
            Metric::Full => "full_projection",
            Metric::Fixed => "fixed_field",
            Metric::Var => "variable_region",
        }
    }
    pub(crate) fn header(self) -> &'static str {
        match self {
            Metric::Encode => "encode",
            Metric::Decode => "decode",
            Metric::Full => "full proj.",
            Metric::Fixed => "fixed field",
            Metric::Var => "var. region",
        }
    }
    pub(crate) fn from_name(s: &str) -> Option<Metric> {
        METRICS.into_iter().find(|m| m.name() == s)
    }
}

/// One measured cell.
#[derive(Debug, Clone)]
pub enum Cell {
    /// Median nanoseconds per operation.
    Ns(f64),
    /// The metric does not apply to this system, and why.
    Na(String),
}

/// A verification failure: the bench must not time systems that disagree. Prints and exits with status 3.
pub fn mismatch(system: &str, case: &str, what: &str) -> ! {
    let _ = std::io::Write::flush(&mut std::io::stdout());
    eprintln!("nerve-bench marshalling: VERIFICATION FAILED: {system} on {case}: {what}");
    eprintln!("nerve-bench marshalling: aborting (no figures are printed for systems that disagree)");
    std::process::exit(3);
}

type Outcome = Result<Vec<(Metric, Cell)>, String>;

/// Nerve's generated Rust: structs for encode/decode, views for the projections.
pub fn nerve_rust(case: &Case, cfg: &Config) -> Outcome {
    #[cfg(has_nerve_rust)]
    {
        Ok(nerve_rust::run(case, cfg))
    }
    #[cfg(not(has_nerve_rust))]
    {
        let _ = (case, cfg);
        Err(env!("BENCH_STATUS_NERVE_RUST").to_string())
    }
}

/// Nerve's generated Rust, allocation-free decode (`Message::decode_into` reusing the held value's memory).
pub fn nerve_rust_reuse(case: &Case, cfg: &Config) -> Outcome {
    #[cfg(has_nerve_rust)]
    {
        Ok(nerve_rust::run_reuse(case, cfg))
    }
    #[cfg(not(has_nerve_rust))]
    {
        let _ = (case, cfg);
        Err(env!("BENCH_STATUS_NERVE_RUST").to_string())
    }
}

/// Nerve's generated C, allocation-free decode (`pkg_T_decode_arena`).
pub fn nerve_c_arena(case: &Case, cfg: &Config) -> Outcome {
    #[cfg(has_nerve_c)]
    {
        csys::run_arena("nerve-c (arena)", &csys::nervec::api(), case, cfg)
    }
    #[cfg(not(has_nerve_c))]
    {
        let _ = (case, cfg);
        Err(env!("BENCH_STATUS_NERVE_C").to_string())
    }
}

/// Nerve's generated C.
pub fn nerve_c(case: &Case, cfg: &Config) -> Outcome {
    #[cfg(has_nerve_c)]
    {
        Ok(csys::run("nerve-c", &csys::nervec::api(), case, cfg))
    }
    #[cfg(not(has_nerve_c))]
    {
        let _ = (case, cfg);
        Err(env!("BENCH_STATUS_NERVE_C").to_string())
    }
}

/// The real LCM C (lcm-gen 1.5.3 from the PyPI wheel).
pub fn lcm_c(case: &Case, cfg: &Config) -> Outcome {
    #[cfg(has_lcm_c)]
    {
        Ok(csys::run("lcm-c", &csys::lcmc::api(), case, cfg))
    }
    #[cfg(not(has_lcm_c))]
    {
        let _ = (case, cfg);
        Err(env!("BENCH_STATUS_LCM_C").to_string())
    }
}

/// FlatBuffers (flatc at build time).
pub fn flatbuffers(case: &Case, cfg: &Config) -> Outcome {
    #[cfg(has_flatbuffers)]
    {
        Ok(others::flatbuffers(case, cfg))
    }
    #[cfg(not(has_flatbuffers))]
    {
        let _ = (case, cfg);
        Err(env!("BENCH_STATUS_FLATBUFFERS").to_string())
    }
}
