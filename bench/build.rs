//! Generates and compiles every system the marshalling bench compares, from the same `types/*.lcm` files:
//!
//! - nerve-rust: `nerve_gen::rust::generate` into `$OUT_DIR/nerve_rust/`, included by `src/peers/marshalling/nerve_rust.rs`;
//! - nerve-c: `nerve_gen::c::generate` into `$OUT_DIR/nerve_c/`, compiled with `csrc/` glue at -O3;
//! - lcm-c: the real `lcm-gen -c` from the venv into `$OUT_DIR/lcm_c/`, compiled the same way against the wheel's
//!   `lcm_coretypes.h`;
//! - nerve-python / lcm-python: `nerve_gen::python::generate` (with `--python-numpy`) and `lcm-gen -p` into
//!   `$OUT_DIR/{nerve,lcm}_py/`; nerve-python-list: `nerve_gen::python::generate`'s default (lists, lcm-gen's
//!   drop-in) into `$OUT_DIR/nerve_py_list/`;
//! - flatbuffers: `flatc --rust` on `fbs/marshalling.fbs`;
//! - nerve-java / lcm-java: `nerve_gen::java::generate` and `lcm-gen -j` under the package prefixes `nervegen` and
//!   `lcmgen`, with `java/Marshalling.java`, compiled in one `javac --release 8` against the wheel's lcm.jar into
//!   `$OUT_DIR/java/classes` (`BENCH_JAVA_CP` is the class path); `java/Roles.java` (the Java echo and latency
//!   roles) goes into the same classes, run on LCM's jar (`BENCH_LCM_JAR`) or on Nerve's.
//!
//! A system that cannot be built (its generator has not landed, a tool is missing) does not fail the build: the
//! reason goes into an environment variable `BENCH_STATUS_<SYSTEM>` that the bench prints as "unavailable: reason",
//! and the `has_<system>` cfg stays off.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const SYSTEMS: &[&str] =
    &["nerve_rust", "nerve_c", "lcm_c", "nerve_py", "nerve_py_list", "lcm_py", "flatbuffers", "java"];

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    for sys in SYSTEMS {
        println!("cargo::rustc-check-cfg=cfg(has_{sys})");
    }
    println!("cargo::rerun-if-changed=types");
    println!("cargo::rerun-if-changed=csrc");
    println!("cargo::rerun-if-changed=fbs");
    println!("cargo::rerun-if-changed=java");
    println!("cargo::rerun-if-env-changed=NERVE_VENV");
    println!("cargo::rerun-if-env-changed=FLATC");

    let venv = match env::var_os("NERVE_VENV") {
        Some(v) => PathBuf::from(v),
        None => manifest.join("..").join(".venv"),
    };
    let venv = venv.canonicalize().unwrap_or(venv);
    println!("cargo::rerun-if-changed={}", venv.join("bin/lcm-gen").display());
    println!("cargo::rustc-env=BENCH_VENV={}", venv.display());
    println!("cargo::rustc-env=BENCH_OUT_DIR={}", out.display());

    let mut lcm_files: Vec<PathBuf> = fs::read_dir(manifest.join("types"))
        .expect("bench/types")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "lcm"))
        .collect();
    lcm_files.sort();

    match checked(&lcm_files) {
        Ok(c) => {
            let mut fp = String::from("// Fingerprints of bench/types, from nerve-types.\n");
            for st in &c.schema.structs {
                let name = st.name.full().replace('.', "_").to_uppercase();
                fp.push_str(&format!("pub const {name}: u64 = {:#018x};\n", st.fingerprint));
            }
            fs::write(out.join("fingerprints.rs"), fp).unwrap();
        }
        Err(e) => panic!("{e}"),
    }

    let results = [
        ("nerve_rust", nerve_rust(&lcm_files, &out)),
        ("nerve_c", nerve_c(&lcm_files, &out, &manifest, &venv)),
        ("lcm_c", lcm_c(&lcm_files, &out, &manifest, &venv)),
        ("nerve_py", nerve_py(&lcm_files, &out, true)),
        ("nerve_py_list", nerve_py(&lcm_files, &out, false)),
        ("lcm_py", lcm_py(&lcm_files, &out, &venv)),
        ("flatbuffers", flatbuffers(&manifest, &out)),
        ("java", java(&lcm_files, &out, &manifest, &venv)),
    ];
    println!("cargo::rustc-env=BENCH_JAVA_CP={}", java_classpath(&out, &venv));
    println!("cargo::rustc-env=BENCH_JAVA_CLASSES={}", out.join("java/classes").display());
    println!("cargo::rustc-env=BENCH_LCM_JAR={}", lcm_jar(&venv).display());
    for (sys, r) in results {
        match r {
            Ok(()) => {
                println!("cargo::rustc-cfg=has_{sys}");
                println!("cargo::rustc-env=BENCH_STATUS_{}=ok", sys.to_uppercase());
            }
            Err(why) => {
                let why = why.replace(['\n', '\r'], " ");
                let why: String = why.chars().take(400).collect();
                println!("cargo::warning=nerve-bench: {sys} unavailable: {why}");
                println!("cargo::rustc-env=BENCH_STATUS_{}=unavailable: {why}", sys.to_uppercase());
            }
        }
    }
    // The echo and latency suites' lcm-c programs (src/harness/mod.rs): an executable, so that LCM's processes load only
    // liblcm and Nerve's only Nerve. BENCH_LCM_ECHO is its path, or "unavailable: reason".
    match lcm_exe(&manifest, &out, &venv, "lcm_echo") {
        Ok(p) => println!("cargo::rustc-env=BENCH_LCM_ECHO={}", p.display()),
        Err(why) => {
            let why: String = why.replace(['\n', '\r'], " ").chars().take(400).collect();
            println!("cargo::warning=nerve-bench: lcm-c echo/latency programs unavailable: {why}");
            println!("cargo::rustc-env=BENCH_LCM_ECHO=unavailable: {why}");
        }
    }
    // The scale suite's lcm-c subscriber (csrc/lcm_scale.c): many channels in one process. BENCH_LCM_SCALE likewise.
    match lcm_exe(&manifest, &out, &venv, "lcm_scale") {
        Ok(p) => println!("cargo::rustc-env=BENCH_LCM_SCALE={}", p.display()),
        Err(why) => {
            let why: String = why.replace(['\n', '\r'], " ").chars().take(400).collect();
            println!("cargo::warning=nerve-bench: lcm-c scale program unavailable: {why}");
            println!("cargo::rustc-env=BENCH_LCM_SCALE=unavailable: {why}");
        }
    }
    // The echo suite's floor: the same roles with nothing but the system calls (csrc/udp_echo_floor.c).
    match udp_echo_floor_exe(&manifest, &out) {
        Ok(p) => println!("cargo::rustc-env=BENCH_UDP_ECHO_FLOOR={}", p.display()),
        Err(why) => {
            let why: String = why.replace(['\n', '\r'], " ").chars().take(400).collect();
            println!("cargo::warning=nerve-bench: the echo floor is unavailable: {why}");
            println!("cargo::rustc-env=BENCH_UDP_ECHO_FLOOR=unavailable: {why}");
        }
    }
}

/// Compiles `csrc/udp_echo_floor.c` into `$OUT_DIR/udp_echo_floor`.
fn udp_echo_floor_exe(manifest: &Path, out: &Path) -> Result<PathBuf, String> {
    let exe = out.join("udp_echo_floor");
    let compiler = cc::Build::new().opt_level(2).get_compiler();
    let mut cmd = compiler.to_command();
    cmd.arg("-O2").arg("-o").arg(&exe).arg(manifest.join("csrc/udp_echo_floor.c")).arg("-lpthread");
    run(&mut cmd)?;
    Ok(exe)
}

/// Compiles `csrc/NAME.c` into `$OUT_DIR/NAME`, linked against the wheel's `liblcm.so` with an rpath to it.
fn lcm_exe(manifest: &Path, out: &Path, venv: &Path, name: &str) -> Result<PathBuf, String> {
    let header = find_file(&venv.join("lib"), "lcm.h")
        .filter(|h| h.parent().is_some_and(|d| d.ends_with("lcm")))
        .ok_or_else(|| format!("lcm/lcm.h not found under {} (run scripts/setup)", venv.join("lib").display()))?;
    let include = header.parent().and_then(Path::parent).ok_or("lcm.h has no parent")?.to_path_buf();
    let lib = find_file(&venv.join("lib"), "liblcm.so")
        .ok_or_else(|| format!("liblcm.so not found under {} (run scripts/setup)", venv.join("lib").display()))?;
    let libdir = lib.parent().ok_or("liblcm.so has no parent")?.to_path_buf();
    let exe = out.join(name);
    let compiler = cc::Build::new().opt_level(2).get_compiler();
    let mut cmd = compiler.to_command();
    cmd.arg("-O2")
        .arg("-o")
        .arg(&exe)
        .arg(manifest.join(format!("csrc/{name}.c")))
        .arg(format!("-I{}", include.display()))
        .arg(format!("-L{}", libdir.display()))
        .arg(format!("-Wl,-rpath,{}", libdir.display()))
        .arg("-llcm")
        .arg("-lpthread");
    run(&mut cmd)?;
    Ok(exe)
}

fn checked(files: &[PathBuf]) -> Result<nerve_types::Checked, String> {
    nerve_types::load(files, &[]).map_err(|d| format!("nerve-types rejected bench/types: {}", d.render()))
}

fn write_generated(dir: &Path, files: &[nerve_gen::GeneratedFile]) -> Result<(), String> {
    let _ = fs::remove_dir_all(dir);
    for f in files {
        let p = dir.join(&f.path);
        fs::create_dir_all(p.parent().unwrap()).map_err(|e| e.to_string())?;
        fs::write(&p, &f.contents).map_err(|e| format!("writing {}: {e}", p.display()))?;
    }
    Ok(())
}

fn nerve_rust(files: &[PathBuf], out: &Path) -> Result<(), String> {
    let checked = checked(files)?;
    let input = nerve_gen::Input::new(&checked);
    let gen = nerve_gen::rust::generate(&input, &nerve_gen::Options::default())
        .map_err(|e| format!("nerve_gen::rust::generate: {e}"))?;
    let dir = out.join("nerve_rust");
    write_generated(&dir, &gen)?;
    // One file that src/peers/marshalling/nerve_rust.rs includes (include! cannot take the module tree itself).
    let inc = nerve_gen::rust_include::single_file(&gen).map_err(|e| e.to_string())?;
    fs::write(out.join("nerve_rust_include.rs"), inc).map_err(|e| e.to_string())
}

/// Generated Python into `nerve_py` (numpy arrays) or `nerve_py_list` (the default: lists, as lcm-gen's).
fn nerve_py(files: &[PathBuf], out: &Path, numpy: bool) -> Result<(), String> {
    let checked = checked(files)?;
    let input = nerve_gen::Input::new(&checked);
    let gen = nerve_gen::python::generate(
        &input,
        &nerve_gen::Options { python_numpy: numpy, ..nerve_gen::Options::default() },
    )
    .map_err(|e| format!("nerve_gen::python::generate: {e}"))?;
    write_generated(&out.join(if numpy { "nerve_py" } else { "nerve_py_list" }), &gen)
}

fn lcm_py(files: &[PathBuf], out: &Path, venv: &Path) -> Result<(), String> {
    let dir = out.join("lcm_py");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    run(Command::new(venv.join("bin/lcm-gen")).arg("-p").arg("--ppath").arg(&dir).args(files))
}

/// Runs a command, turning a failure into its stderr.
fn run(cmd: &mut Command) -> Result<(), String> {
    let prog = cmd.get_program().to_string_lossy().into_owned();
    let o = cmd.output().map_err(|e| format!("{prog}: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!("{prog} failed: {}", String::from_utf8_lossy(&o.stderr).trim()))
    }
}

fn lcm_c(files: &[PathBuf], out: &Path, manifest: &Path, venv: &Path) -> Result<(), String> {
    let dir = out.join("lcm_c");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    run(Command::new(venv.join("bin/lcm-gen"))
        .args(["-c", "--c-no-pubsub", "--c-cpath"])
        .arg(&dir)
        .arg("--c-hpath")
        .arg(&dir)
        .args(files))?;
    let include = venv.join("lib/python3.11/site-packages/include");
    let include = if include.join("lcm/lcm_coretypes.h").exists() {
        include
    } else {
        // Another Python version: look for the header anywhere under the venv's lib.
        find_file(&venv.join("lib"), "lcm_coretypes.h")
            .and_then(|h| h.parent()?.parent().map(Path::to_path_buf))
            .ok_or_else(|| format!("lcm/lcm_coretypes.h not found under {}", venv.display()))?
    };
    compile_c_system("lcmc", &dir, &[include], manifest, out)
}

fn nerve_c(files: &[PathBuf], out: &Path, manifest: &Path, _venv: &Path) -> Result<(), String> {
    let checked = checked(files)?;
    let input = nerve_gen::Input::new(&checked);
    let opts = nerve_gen::Options { c_pubsub: false, ..nerve_gen::Options::default() };
    let gen = nerve_gen::c::generate(&input, &opts).map_err(|e| format!("nerve_gen::c::generate: {e}"))?;
    let dir = out.join("nerve_c");
    write_generated(&dir, &gen)?;
    // Headers may sit in subfolders (e.g. a runtime header under nerve/): put every folder on the include path.
    let mut incs = vec![dir.clone()];
    for f in &gen {
        if let Some(p) = dir.join(&f.path).parent() {
            if !incs.iter().any(|i| i == p) {
                incs.push(p.to_path_buf());
            }
        }
    }
    compile_c_system("nervec", &dir, &incs, manifest, out)
}

/// Compiles `csrc/lcm_api_glue.c` as a unity build over every `.c` file in `gen_dir`, exporting only `SYS_*`.
fn compile_c_system(
    sys: &str,
    gen_dir: &Path,
    includes: &[PathBuf],
    manifest: &Path,
    out: &Path,
) -> Result<(), String> {
    let mut cfiles = Vec::new();
    collect_c(gen_dir, &mut cfiles);
    cfiles.sort();
    let mut unity = String::new();
    for c in &cfiles {
        unity.push_str(&format!("#include {:?}\n", c));
    }
    let unity_path = out.join(format!("{sys}_unity.h"));
    // Generated headers first (they pull in what the .c files need).
    let mut hfiles = Vec::new();
    collect_ext(gen_dir, "h", &mut hfiles);
    hfiles.sort();
    let mut text = String::new();
    for h in &hfiles {
        text.push_str(&format!("#include {:?}\n", h));
    }
    text.push_str(&unity);
    fs::write(&unity_path, text).map_err(|e| e.to_string())?;

    let mut b = cc::Build::new();
    b.file(manifest.join("csrc/lcm_api_glue.c"))
        .define("SYS", sys)
        .define("UNITY", format!("{:?}", unity_path.display().to_string()).as_str())
        .opt_level(3)
        .flag("-fvisibility=hidden")
        .flag_if_supported("-fno-semantic-interposition")
        .warnings(false)
        .cargo_metadata(false);
    for i in includes {
        b.include(i);
    }
    let lib = format!("bench_{sys}");
    b.try_compile(&lib).map_err(|e| format!("compiling generated C with csrc/lcm_api_glue.c: {e}"))?;
    // Make the generated code's symbols local so that two systems with the same type names link together.
    let archive = out.join(format!("lib{lib}.a"));
    run(Command::new("objcopy").arg("--localize-hidden").arg(&archive))?;
    println!("cargo::rustc-link-search=native={}", out.display());
    println!("cargo::rustc-link-lib=static={lib}");
    Ok(())
}

fn collect_c(dir: &Path, acc: &mut Vec<PathBuf>) {
    collect_ext(dir, "c", acc)
}

fn collect_ext(dir: &Path, ext: &str, acc: &mut Vec<PathBuf>) {
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                collect_ext(&p, ext, acc);
            } else if p.extension().is_some_and(|x| x == ext) {
                acc.push(p);
            }
        }
    }
}

fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    let rd = fs::read_dir(dir).ok()?;
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            if let Some(f) = find_file(&p, name) {
                return Some(f);
            }
        } else if p.file_name().is_some_and(|n| n == name) {
            return Some(p);
        }
    }
    None
}

fn flatbuffers(manifest: &Path, out: &Path) -> Result<(), String> {
    let flatc = env::var_os("FLATC").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("flatc"));
    let dir = out.join("fbs");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    run(Command::new(&flatc).arg("--rust").arg("-o").arg(&dir).arg(manifest.join("fbs/marshalling.fbs")))
        .map_err(|e| format!("{e} (install flatbuffers-compiler: scripts/setup)"))?;
    Ok(())
}

/// LCM's own jar, from the lcm wheel in the venv.
fn lcm_jar(venv: &Path) -> PathBuf {
    let lib = venv.join("lib");
    fs::read_dir(&lib)
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("site-packages/share/java/lcm.jar"))
        .find(|p| p.exists())
        .unwrap_or_else(|| lib.join("python3/site-packages/share/java/lcm.jar"))
}

fn java_classpath(out: &Path, venv: &Path) -> String {
    format!("{}:{}", out.join("java/classes").display(), lcm_jar(venv).display())
}

/// Nerve's and lcm-gen's Java for the bench types, and the timing program, compiled against lcm.jar.
fn java(files: &[PathBuf], out: &Path, manifest: &Path, venv: &Path) -> Result<(), String> {
    let dir = out.join("java");
    let _ = fs::remove_dir_all(&dir);
    let src = dir.join("src");
    let checked = checked(files)?;
    let input = nerve_gen::Input::new(&checked);
    let opts = nerve_gen::Options { package_prefix: "nervegen".into(), ..nerve_gen::Options::default() };
    let gen = nerve_gen::java::generate(&input, &opts).map_err(|e| format!("nerve_gen::java::generate: {e}"))?;
    write_generated(&src, &gen)?;
    run(Command::new(venv.join("bin/lcm-gen"))
        .args(["-j", "--package-prefix", "lcmgen", "--jpath"])
        .arg(&src)
        .args(files))?;
    let jar = lcm_jar(venv);
    if !jar.exists() {
        return Err(format!("{} not found (run scripts/setup)", jar.display()));
    }
    let mut sources = Vec::new();
    collect_ext(&src, "java", &mut sources);
    sources.push(manifest.join("java/Marshalling.java"));
    sources.push(manifest.join("java/Roles.java"));
    run(Command::new("javac")
        .args(["--release", "8", "-nowarn", "-encoding", "UTF-8", "-cp"])
        .arg(&jar)
        .arg("-d")
        .arg(dir.join("classes"))
        .args(&sources))
}
