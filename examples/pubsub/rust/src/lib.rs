//! The example's types: `examples/types/*.lcm`, generated at build time by nerve-gen (see build.rs).

/// Generated LCM types, one module per package (`lcmtypes::exlcm::LaserT`, ...).
pub mod lcmtypes {
    include!(concat!(env!("OUT_DIR"), "/lcmtypes.rs"));
}
