//! `nerve-soak`: Nerve's soak test (tests/soak/README.md), a pass/fail system test rather than a benchmark.
//!
//! ```text
//! nerve-soak [--minutes N] [--quick] [--json]
//! ```
//!
//! `nerve bench soak` runs this program. It exits 0 when every bar passed, 1 when some failed and 2 when the soak
//! could not run.

mod soak;
mod sys;

use std::process::ExitCode;

const USAGE: &str =
    "usage: nerve-soak [--minutes N] [--quick] [--json]\n\ninproc, shm and udpm at once for --minutes N \
(default 60; --quick: one minute) with processes killed, subscriptions and channels made and dropped: delivered, \
lost, memory, descriptors, shm files and latency per period, and PASS/FAIL bars\n\n  --quick  one minute (CI)\n  \
--json   one JSON object per line\n";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if let Some(code) = soak::hidden_role(&args) {
        return code;
    }
    let mut quick = false;
    let mut json = false;
    let mut minutes = None;
    let mut argv = args.into_iter().skip(1);
    while let Some(a) = argv.next() {
        match a.as_str() {
            "--minutes" => match argv.next().and_then(|m| m.parse::<u64>().ok()).filter(|m| *m >= 2) {
                Some(m) => minutes = Some(m),
                None => {
                    eprintln!("nerve-soak: --minutes takes a whole number of minutes, at least 2");
                    return ExitCode::from(2);
                }
            },
            "--quick" => quick = true,
            "--json" => json = true,
            "-h" | "--help" => {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => {
                eprint!("nerve-soak: unexpected argument {other:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    ExitCode::from(soak::run(quick, json, minutes) as u8)
}
