//! The marshalling suite's codecs: Nerve's Rust and C, real LCM C (`csys`), flatbuffers, bincode and the memcpy
//! floor (`others`); the Python ones run in python/marshalling.py. Each returns its metrics for a case, or `Err("unavailable: why")` when it could not be
//! built here (build.rs records the reason).

use crate::data::Case;
use crate::harness::timing::Config;
use crate::suites::marshalling::{Cell, Metric};

pub mod csys;
pub mod java;
#[cfg(has_nerve_rust)]
pub mod nerve_rust;
pub mod others;

type Outcome = Result<Vec<(Metric, Cell)>, String>;

/// The venv that scripts/setup made (the real LCM, the `nerve` package, the Python peers): `NERVE_VENV`, else the one
/// build.rs found.
pub fn venv() -> std::path::PathBuf {
    std::env::var_os("NERVE_VENV").map(Into::into).unwrap_or_else(|| env!("BENCH_VENV").into())
}

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
