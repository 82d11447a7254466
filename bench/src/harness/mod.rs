//! The measurement code the suites share, so that Nerve and every peer are measured by one piece of code: child
//! processes started pinned and read line by line (`proc`), CLOCK_MONOTONIC and paced sleeps (`clock`), the timing
//! loop of the in-process suites (`timing`), Nerve's own roles of the echo and latency suites (`nerve`, hidden
//! subcommands of nerve-bench), the programs of the peers (LCM's C echo program built by build.rs, the Python
//! roles), latency statistics ([`Latencies`]) and the table or JSON output ([`Out`]).
//!
//! Every peer program prints the same lines as Nerve's roles, and the statistics are computed here from those lines,
//! so that no system is measured by code of its own.

pub(crate) mod clock;
mod nerve;
pub(crate) mod proc;
pub(crate) mod timing;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;

use proc::Program;

/// The echo suite's message size (LCM's paper).
pub const MSG_SIZE: usize = 800;

/// The multicast group of every measurement: not LCM's default, so that nothing else on the host mixes in; every
/// point also gets a port of its own.
pub const GROUP: &str = "239.255.76.99";

/// The hidden role subcommands (`nerve-bench echo-client ...`): `Some(exit code)` when `args[1]` is one.
pub fn hidden_role(args: &[String]) -> Option<ExitCode> {
    let role = args.get(1)?;
    if !["echo-client", "echo-source", "lat-recv", "lat-send"].contains(&role.as_str()) {
        return None;
    }
    Some(match nerve::run_role(role, &args[2..]) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nerve-bench {role}: {e}");
            ExitCode::from(3)
        }
    })
}

/// nerve's roles: this executable.
pub(crate) fn nerve_program() -> Result<Program, String> {
    Ok(Program {
        exe: own_exe()?,
        lead: Vec::new(),
        words: ["echo-client", "echo-source", "lat-recv", "lat-send"],
        env: Vec::new(),
    })
}

/// The venv that scripts/setup made (the real LCM, the `nerve` package, the Python peers): `NERVE_VENV`, else the one
/// build.rs found.
pub(crate) fn venv() -> std::path::PathBuf {
    std::env::var_os("NERVE_VENV").map(Into::into).unwrap_or_else(|| env!("BENCH_VENV").into())
}

/// The Python roles (bench/python/roles.py) on the `nerve` package, in the venv's Python; `module` is the bus they
/// use: `nerve` (nerve.Bus), `nerve.lcm` or `lcm` (the real LCM module).
pub(crate) fn python_program(module: &str) -> Result<Program, String> {
    let venv = venv();
    let python = venv.join("bin/python");
    if !python.exists() {
        return Err(format!("{} not found (run scripts/setup)", python.display()));
    }
    let script = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/python/roles.py"));
    Ok(Program {
        exe: python,
        lead: vec![script, PathBuf::from(format!("--module={module}"))],
        words: ["echo-client", "echo-source", "lat-recv", "lat-send"],
        env: Vec::new(),
    })
}

/// Which jar the Java roles (bench/java/Roles.java) run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Jar {
    /// LCM 1.5.3's own lcm.jar, from the wheel.
    Lcm,
    /// Nerve's lcm.jar (bindings/java) with its native half; `poll`: its receive thread spins on the bus
    /// (`-Dnerve.poll=true`) instead of sleeping in it.
    Nerve { poll: bool },
}

/// The Java roles on `jar`, in one JVM per role. Nerve's jar is an install of scripts/install-java (its PREFIX in
/// `NERVE_JAVA_PREFIX`), else the tree's own build: bindings/java/target/lcm.jar (Maven) and the libnerve_java.so of
/// this executable's profile (`cargo build --release -p nerve-java`), so the rows measure a release build.
pub(crate) fn java_program(jar: Jar) -> Result<Program, String> {
    let classes = PathBuf::from(env!("BENCH_JAVA_CLASSES"));
    if env!("BENCH_STATUS_JAVA") != "ok" || !classes.join("Roles.class").exists() {
        return Err(format!("the Java roles were not built ({})", env!("BENCH_STATUS_JAVA")));
    }
    let mut lead: Vec<PathBuf> = ["-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-cp"].map(PathBuf::from).into();
    match jar {
        Jar::Lcm => lead.push(format!("{}:{}", classes.display(), env!("BENCH_LCM_JAR")).into()),
        Jar::Nerve { poll } => {
            let (jar, lib) = match std::env::var_os("NERVE_JAVA_PREFIX") {
                Some(prefix) => {
                    let prefix = PathBuf::from(prefix);
                    (prefix.join("share/java/lcm.jar"), prefix.join("lib/libnerve_java.so"))
                }
                None => {
                    let exe = std::fs::canonicalize(own_exe()?).map_err(|e| format!("finding nerve-bench: {e}"))?;
                    let dir = exe.parent().ok_or("nerve-bench has no directory")?;
                    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
                    (root.join("bindings/java/target/lcm.jar"), dir.join("libnerve_java.so"))
                }
            };
            for f in [&jar, &lib] {
                if !f.exists() {
                    return Err(format!(
                        "{} not found (scripts/install-java PREFIX, then NERVE_JAVA_PREFIX=PREFIX; or \
                         cargo build --release -p nerve-java and mvn -f bindings/java/pom.xml package)",
                        f.display()
                    ));
                }
            }
            lead.push(format!("{}:{}", classes.display(), jar.display()).into());
            lead.push(format!("-Dnerve.jni.library={}", lib.display()).into());
            if poll {
                lead.push("-Dnerve.poll=true".into());
            }
        }
    }
    lead.push("Roles".into());
    Ok(Program {
        exe: "java".into(),
        lead,
        words: ["echo-client", "echo-source", "lat-recv", "lat-send"],
        env: Vec::new(),
    })
}

/// The Go latency roles (bench/go, on bindings/go's package over libnerve), built once per run with `go build`
/// against the libnerve.so beside this executable (`cargo build --release -p nerve`: the same profile as the
/// bench); `poll`: the package's receive goroutine spins on the bus (`Bus.SetPolling`). Latency roles only.
pub(crate) fn go_program(poll: bool) -> Result<Program, String> {
    static BUILT: std::sync::OnceLock<Result<(PathBuf, PathBuf), String>> = std::sync::OnceLock::new();
    let (exe, libdir) = BUILT.get_or_init(build_go_roles).clone()?;
    let lead = if poll { vec![PathBuf::from("-poll")] } else { Vec::new() };
    Ok(Program { exe, lead, words: ["-", "-", "lat-recv", "lat-send"], env: vec![("LD_LIBRARY_PATH".into(), libdir)] })
}

/// Builds bench/go into a directory of this run's own: the program, and the directory its libnerve.so.0 is in.
fn build_go_roles() -> Result<(PathBuf, PathBuf), String> {
    let exe = std::fs::canonicalize(own_exe()?).map_err(|e| format!("finding nerve-bench: {e}"))?;
    let lib = exe.parent().ok_or("nerve-bench has no directory")?.join("libnerve.so");
    if !lib.exists() {
        return Err(format!("{} not found (cargo build --release -p nerve)", lib.display()));
    }
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    // One directory per library, kept between runs (as lcm_on_nerve_program's); go build's cache makes a rebuild
    // quick, and each run builds to a file of its own and renames it into place, so concurrent runs do not clash.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&lib, &mut h);
    let dir = std::env::temp_dir().join(format!("nerve-bench-go-{:016x}", std::hash::Hasher::finish(&h)));
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    // libnerve's soname is libnerve.so.0 (scripts/install-c makes the same link).
    let link = dir.join("libnerve.so.0");
    match std::os::unix::fs::symlink(&lib, &link) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && std::fs::read_link(&link).ok() == Some(lib) => {}
        Err(e) => return Err(format!("linking {}: {e}", link.display())),
    }
    let pc = format!(
        "Name: nerve\nDescription: libnerve of this build\nVersion: 0.1.0\nLibs: -L{d} -lnerve\nCflags: -I{i}\n",
        d = dir.display(),
        i = root.join("bindings/c/nerve/include").display()
    );
    let pc_dir = dir.join(format!("pc-{}", std::process::id()));
    std::fs::create_dir_all(&pc_dir).map_err(|e| format!("creating {}: {e}", pc_dir.display()))?;
    std::fs::write(pc_dir.join("nerve.pc"), pc).map_err(|e| format!("writing nerve.pc: {e}"))?;
    let tmp = dir.join(format!("goroles-{}", std::process::id()));
    let out = dir.join("goroles");
    let built = std::process::Command::new("go")
        .args(["build", "-o"])
        .arg(&tmp)
        .arg(".")
        .current_dir(root.join("bench/go"))
        .env("PKG_CONFIG_PATH", &pc_dir)
        .env("GOFLAGS", "-mod=mod")
        .env("GOPROXY", "off")
        .env("CGO_ENABLED", "1")
        .output()
        .map_err(|e| format!("running go build: {e}"))?;
    let _ = std::fs::remove_dir_all(&pc_dir);
    if !built.status.success() {
        return Err(format!("go build failed: {}", String::from_utf8_lossy(&built.stderr).trim()));
    }
    std::fs::rename(&tmp, &out).map_err(|e| format!("moving {} into place: {e}", tmp.display()))?;
    Ok((out, dir))
}

/// This very executable, for the role processes: `/proc/<pid>/exe` while this process runs, which still names the
/// file this process was started from after a rebuild replaces `target/release/nerve-bench` mid-run (the workspace's
/// target directory is shared), so that every role runs the driver's own code.
pub(crate) fn own_exe() -> Result<PathBuf, String> {
    let proc_exe = PathBuf::from(format!("/proc/{}/exe", std::process::id()));
    if proc_exe.exists() {
        return Ok(proc_exe);
    }
    std::env::current_exe().map_err(|e| format!("finding nerve-bench: {e}"))
}

/// lcm-c's roles: the program build.rs compiled from csrc/lcm_echo.c, or why there is none.
pub(crate) fn lcm_program() -> Result<Program, String> {
    built_program(env!("BENCH_LCM_ECHO"), ["client", "source", "lat-recv", "lat-send"])
}

/// The echo suite's floor: the program build.rs compiled from csrc/udp_echo_floor.c, or why there is none. Echo
/// roles only: the latency suite has floors of its own.
pub(crate) fn udp_floor_program() -> Result<Program, String> {
    built_program(env!("BENCH_UDP_ECHO_FLOOR"), ["client", "source", "-", "-"])
}

/// A program build.rs compiled: `built` is its path, or "unavailable: reason".
pub(crate) fn built_program(built: &str, words: [&'static str; 4]) -> Result<Program, String> {
    if let Some(why) = built.strip_prefix("unavailable: ") {
        return Err(why.to_string());
    }
    let exe = PathBuf::from(built);
    if !exe.exists() {
        return Err(format!("{} is gone (rebuild nerve-bench)", exe.display()));
    }
    Ok(Program { exe, lead: Vec::new(), words, env: Vec::new() })
}

/// lcm-c's program run on Nerve's LCM-compatible liblcm (bindings/c/lcm) instead of the wheel's: the same binary,
/// with `LD_LIBRARY_PATH` on a directory whose `liblcm.so.1` is ours (the program's rpath is a RUNPATH, which
/// `LD_LIBRARY_PATH` overrides). Ours is the cdylib cargo built next to this executable (nerve-liblcm is a
/// dependency of nerve-bench for that reason).
pub(crate) fn lcm_on_nerve_program() -> Result<Program, String> {
    let mut program = lcm_program()?;
    let exe = std::fs::canonicalize(own_exe()?).map_err(|e| format!("finding nerve-bench: {e}"))?;
    let dir = exe.parent().ok_or("nerve-bench has no directory")?;
    let ours = [dir.join("liblcm.so"), dir.join("deps").join("liblcm.so")]
        .into_iter()
        .find(|p| p.exists())
        .ok_or_else(|| format!("no liblcm.so (nerve-liblcm) next to {}", exe.display()))?;
    // One directory per library path, kept between runs (a link, nothing to clean up) and shared by concurrent
    // runs, which all make the same link.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&ours, &mut h);
    let libdir = std::env::temp_dir().join(format!("nerve-bench-liblcm-{:016x}", std::hash::Hasher::finish(&h)));
    std::fs::create_dir_all(&libdir).map_err(|e| format!("creating {}: {e}", libdir.display()))?;
    let link = libdir.join("liblcm.so.1");
    match std::os::unix::fs::symlink(&ours, &link) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && std::fs::read_link(&link).ok() == Some(ours) => {}
        Err(e) => return Err(format!("linking {}: {e}", link.display())),
    }
    program.env.push(("LD_LIBRARY_PATH".into(), libdir));
    Ok(program)
}

/// Whether this build of nerve-bus knows a provider, by creating a bus on it (the reason when it does not).
pub(crate) fn nerve_provider(url: &str) -> Result<(), String> {
    nerve_bus::Bus::new(Some(url)).map(|_| ()).map_err(|e| format!("Bus::new({url}): {e}"))
}

/// A base port for this run: runs started at the same time (a test and a manual run) use different ports. Ports
/// stay below the ephemeral range (32768-), so no sender socket's port can be one of them.
pub(crate) fn base_port() -> u16 {
    10_000 + (std::process::id() % 10) as u16 * 2_200
}

/// Where each process runs, for the header.
pub(crate) struct Placement {
    pub(crate) a: Option<usize>,
    pub(crate) b: Option<usize>,
    pub(crate) text: String,
}

pub(crate) fn placement(a_role: &str, b_role: &str) -> Placement {
    let cpus = clock::allowed_cpus();
    match cpus.as_slice() {
        [] => Placement {
            a: None,
            b: None,
            text: format!("not pinned (sched_getaffinity failed); {a_role} and {b_role} float"),
        },
        [only] => Placement {
            a: Some(*only),
            b: Some(*only),
            text: format!("one CPU allowed: {a_role} and {b_role} all pinned to cpu {only}"),
        },
        [x, y, ..] => Placement {
            a: Some(*x),
            b: Some(*y),
            text: format!(
                "{a_role} pinned to cpu {x}, {b_role} pinned to cpu {y} (sched_setaffinity before exec, all threads); \
                 the driver is unpinned and idle while a point runs; {} CPUs allowed",
                cpus.len()
            ),
        },
    }
}

/// Latency statistics in microseconds.
#[derive(Debug, Clone, Copy)]
pub struct Latencies {
    /// Samples.
    pub n: usize,
    /// Mean.
    pub mean: f64,
    /// Median (nearest rank).
    pub p50: f64,
    /// 99th percentile (nearest rank).
    pub p99: f64,
    /// Maximum.
    pub max: f64,
}

impl Latencies {
    /// From samples in nanoseconds; `None` when there are none.
    pub fn from_ns(ns: &mut [u64]) -> Option<Latencies> {
        if ns.is_empty() {
            return None;
        }
        ns.sort_unstable();
        let n = ns.len();
        let rank = |p: f64| ns[((p * n as f64).ceil() as usize).clamp(1, n) - 1] as f64 / 1e3;
        let mean = ns.iter().map(|&x| x as f64).sum::<f64>() / n as f64 / 1e3;
        Some(Latencies { n, mean, p50: rank(0.50), p99: rank(0.99), max: ns[n - 1] as f64 / 1e3 })
    }
}

/// Printing: text rows as they come, or JSON lines (shared by the process-based suites and `intraprocess`).
pub(crate) struct Out {
    pub(crate) json: bool,
}

impl Out {
    pub(crate) fn text(&self, s: &str) {
        if !self.json {
            let mut o = std::io::stdout().lock();
            let _ = writeln!(o, "{s}");
            let _ = o.flush();
        }
    }

    pub(crate) fn json(&self, v: serde_json::Value) {
        if self.json {
            let mut o = std::io::stdout().lock();
            let _ = writeln!(o, "{v}");
            let _ = o.flush();
        }
    }

    pub(crate) fn unavailable(&self, suite: &str, case: &str, system: &str, reason: &str) {
        self.json(json!({"suite": suite, "case": case, "system": system, "status": "unavailable", "reason": reason}));
    }

    /// The four latency metrics, or null with a note when there was no sample.
    pub(crate) fn latencies(&self, suite: &str, case: &str, system: &str, l: Option<Latencies>) {
        for m in ["mean", "p50", "p99", "max"] {
            match l {
                Some(l) => {
                    let v = match m {
                        "mean" => l.mean,
                        "p50" => l.p50,
                        "p99" => l.p99,
                        _ => l.max,
                    };
                    self.json(json!({"suite": suite, "case": case, "system": system, "metric": m,
                        "value": round3(v), "unit": "us"}))
                }
                None => self.json(json!({"suite": suite, "case": case, "system": system, "metric": m,
                    "value": null, "unit": "us", "note": "no sample: nothing was received"})),
            }
        }
    }
}

pub(crate) fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A latency cell for the text tables.
pub(crate) fn cell(l: Option<Latencies>, f: impl Fn(Latencies) -> f64) -> String {
    l.map(|l| format!("{:.1}", f(l))).unwrap_or_else(|| "-".into())
}

#[cfg(test)]
mod tests {
    use super::Latencies;

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<u64> = (1..=100).map(|x| x * 1000).collect();
        let l = Latencies::from_ns(&mut v).unwrap();
        assert_eq!((l.p50, l.p99, l.max, l.n), (50.0, 99.0, 100.0, 100));
        assert!((l.mean - 50.5).abs() < 1e-9);
        assert!(Latencies::from_ns(&mut []).is_none());
        let mut one = vec![7000];
        let l = Latencies::from_ns(&mut one).unwrap();
        assert_eq!((l.p50, l.p99, l.max), (7.0, 7.0, 7.0));
    }
}
