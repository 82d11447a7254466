//! `nerve gen`: lcm-gen's job. Reads `.lcm` files, reports every problem as `file:line:col: error: message` with
//! the source line and a caret (exit 1), and writes code for the languages asked for.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use nerve_gen::{GeneratedFile, Input, Options};

/// What `nerve gen --help` ends with.
const EXAMPLES: &str = "\
EXAMPLES:
  nerve gen --print-fingerprints examples/types/*.lcm
  nerve gen --rust --rust-path src/lcmtypes   examples/types/*.lcm
  nerve gen -c --c-cpath gen --c-hpath gen    examples/types/*.lcm
  nerve gen -x --cpp-hpath include            examples/types/*.lcm
  nerve gen -p --ppath python                 examples/types/*.lcm
  nerve gen -j --jpath java                   examples/types/*.lcm
  nerve gen -g --go-path go                   examples/types/*.lcm

The short flags -c, -x, -p, -j and -g are lcm-gen's (C, C++, Python, Java, Go); no other nerve command has them.";

/// Arguments of `nerve gen`; the flags follow lcm-gen's where it has them.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct Args {
    /// The .lcm files to read.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// A directory to search for types that the files use but do not declare (repeatable).
    #[arg(short = 'I', long = "include", value_name = "DIR")]
    include: Vec<PathBuf>,
    /// Print `package.name 0x<fingerprint>` for every type, sorted by name, and generate nothing else.
    #[arg(long)]
    print_fingerprints: bool,

    /// Generate Rust (one module file per package; needs the nerve-codec crate).
    #[arg(long)]
    rust: bool,
    /// Where Rust files go.
    #[arg(long, value_name = "DIR", default_value = ".")]
    rust_path: PathBuf,
    /// Generate Rust without `unsafe`, for crates that #![forbid(unsafe_code)] (arrays of small numeric structs then
    /// decode member by member, without the one-shuffle-per-element fast path).
    #[arg(long)]
    rust_no_unsafe: bool,

    /// Generate C (needs the nerve_lcm.h header written next to it, and <lcm/lcm.h> unless --c-no-pubsub).
    #[arg(short = 'c', long = "c")]
    c: bool,
    /// Leave out lcm-gen's `_publish` / `_subscribe` / `_unsubscribe` / `_subscription_set_queue_capacity` (which
    /// need `<lcm/lcm.h>` and an LCM library): the generated C then needs only nerve_lcm.h.
    #[arg(long)]
    c_no_pubsub: bool,
    /// Where .c files go.
    #[arg(long, value_name = "DIR", default_value = ".")]
    c_cpath: PathBuf,
    /// Where .h files go.
    #[arg(long, value_name = "DIR", default_value = ".")]
    c_hpath: PathBuf,

    /// Generate C++ (header only; needs only nerve_lcm.hpp).
    #[arg(short = 'x', long = "cpp")]
    cpp: bool,
    /// Where C++ headers go (as <DIR>/<package>/<name>.hpp).
    #[arg(long, value_name = "DIR", default_value = ".")]
    cpp_hpath: PathBuf,

    /// Generate Python (needs only the nerve_lcm runtime module written next to it; a drop-in for lcm-gen's).
    #[arg(short = 'p', long = "python")]
    python: bool,
    /// Where Python packages go.
    #[arg(long, value_name = "DIR", default_value = ".")]
    ppath: PathBuf,
    /// Do not write __init__.py files.
    #[arg(long)]
    python_no_init: bool,
    /// Python: numpy arrays for primitive arrays (big-endian read-only views when decoded), tuples for small fixed
    /// ones, lazily decoded arrays of fixed-size structs; needs numpy.
    #[arg(long)]
    python_numpy: bool,

    /// Generate Java (classes with lcm-gen's Java API; they need lcm.jar, or Nerve's drop-in for it, and the
    /// nerve_lcm/Codec.java runtime written next to them).
    #[arg(short = 'j', long = "java")]
    java: bool,
    /// Where Java packages go (as <DIR>/<package path>/<name>.java).
    #[arg(long, value_name = "DIR", default_value = ".")]
    jpath: PathBuf,
    /// Create the package directories under --jpath (lcm-gen's default; --jmkdir=false requires them to exist).
    #[arg(long, value_name = "BOOL", default_value = "true", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    jmkdir: bool,
    /// What follows the class name in every Java class declaration.
    #[arg(long, value_name = "TEXT", default_value = "implements lcm.lcm.LCMEncodable")]
    jdecl: String,
    /// The Java package of types declared without a package.
    #[arg(long, value_name = "PKG", default_value = "lcmtypes")]
    jdefaultpkg: String,

    /// Generate Go (lcm-gen's Go API: one file per type, and nerve_lcm.go per package; no dependencies).
    #[arg(short = 'g', long = "go")]
    go: bool,
    /// Where Go packages go (as <DIR>/<package path>/<name>.go).
    #[arg(long, value_name = "DIR", default_value = ".")]
    go_path: PathBuf,
    /// Create the package directories under --go-path (lcm-gen's default; --go-mkdir=false requires them to exist).
    #[arg(long, value_name = "BOOL", default_value = "true", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    go_mkdir: bool,
    /// Name the Go struct tags (`json` gives `json:"member"`); without it a tag is the member's name alone.
    #[arg(long, value_name = "NAME", default_value = "")]
    go_tag_name: String,
    /// Write every Go file into --go-path itself, not into one directory per package.
    #[arg(long)]
    go_strip_dirs: bool,
    /// Go: add the fingerprint to file and type names, as a constant instead of a function (lcm-gen's naming).
    #[arg(long)]
    go_fingerprint: bool,
    /// Put this in front of the import path of every other LCM package (e.g. `example.com/robot/lcmtypes/`).
    #[arg(long, value_name = "PREFIX", default_value = "")]
    go_import_prefix: String,
    /// The Go package of types declared without a package.
    #[arg(long, value_name = "PKG", default_value = "lcmtypes")]
    go_default_package: String,

    /// Put this package in front of every type's package (does not change fingerprints).
    #[arg(long, value_name = "PKG", default_value = "")]
    package_prefix: String,
}

/// Runs `nerve gen`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let checked = match nerve_types::load(&args.files, &args.include) {
        Ok(c) => c,
        Err(diags) => {
            eprintln!("{}", diags.render());
            return Ok(ExitCode::from(1));
        }
    };
    for w in &checked.warnings {
        eprintln!("{}", w.render());
    }

    if args.print_fingerprints {
        // The types of the given files only; those found on the include path are not printed (as no code is
        // generated for them), though their fingerprints are part of the printed ones.
        let mut inputs: Vec<_> = checked.schema.structs[..checked.input_structs].iter().collect();
        inputs.sort_by_key(|s| s.name.full());
        for s in inputs {
            println!("{} 0x{:016x}", s.name, s.fingerprint);
        }
        return Ok(ExitCode::SUCCESS);
    }

    let input = Input::new(&checked);
    let opts = Options {
        package_prefix: args.package_prefix.clone(),
        python_init: !args.python_no_init,
        python_numpy: args.python_numpy,
        rust_unsafe: !args.rust_no_unsafe,
        c_pubsub: !args.c_no_pubsub,
        go: nerve_gen::go::GoOptions {
            tag_name: args.go_tag_name.clone(),
            strip_dirs: args.go_strip_dirs,
            fingerprint: args.go_fingerprint,
            import_prefix: args.go_import_prefix.clone(),
            default_package: args.go_default_package.clone(),
        },
        java_decl: args.jdecl.clone(),
        java_default_package: args.jdefaultpkg.clone(),
    };
    let mut any = false;
    let mut failed = false;
    let mut emit = |enabled: bool,
                    generate: fn(&Input<'_>, &Options) -> Result<Vec<GeneratedFile>, nerve_gen::GenError>,
                    place: &dyn Fn(&GeneratedFile) -> PathBuf,
                    mkdir: bool|
     -> anyhow::Result<()> {
        if !enabled {
            return Ok(());
        }
        any = true;
        match generate(&input, &opts) {
            Ok(files) => write_files(&files, place, mkdir),
            Err(e) => {
                eprintln!("{e}");
                failed = true;
                Ok(())
            }
        }
    };
    emit(args.rust, nerve_gen::rust::generate, &|f| args.rust_path.join(&f.path), true)?;
    emit(
        args.c,
        nerve_gen::c::generate,
        &|f| {
            let dir = if f.path.extension().is_some_and(|e| e == "c") { &args.c_cpath } else { &args.c_hpath };
            dir.join(&f.path)
        },
        true,
    )?;
    emit(args.cpp, nerve_gen::cpp::generate, &|f| args.cpp_hpath.join(&f.path), true)?;
    emit(args.python, nerve_gen::python::generate, &|f| args.ppath.join(&f.path), true)?;
    emit(args.java, nerve_gen::java::generate, &|f| args.jpath.join(&f.path), args.jmkdir)?;
    emit(args.go, nerve_gen::go::generate, &|f| args.go_path.join(&f.path), args.go_mkdir)?;

    if !any {
        eprintln!(
            "nerve gen: no language chosen: pass --rust, --c, --cpp, --python, --java, --go or --print-fingerprints"
        );
        return Ok(super::exit::rejected());
    }
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Writes each file where `place` says, creating directories (if `mkdir`; otherwise they must exist, as with
/// lcm-gen's --jmkdir=false), and leaving files whose contents are unchanged alone (so build systems do not rebuild
/// for nothing).
fn write_files(files: &[GeneratedFile], place: &dyn Fn(&GeneratedFile) -> PathBuf, mkdir: bool) -> anyhow::Result<()> {
    for f in files {
        let path = place(f);
        if let Some(dir) = path.parent().filter(|d| mkdir && !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        if unchanged(&path, &f.contents) {
            continue;
        }
        std::fs::write(&path, &f.contents).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn unchanged(path: &Path, contents: &str) -> bool {
    std::fs::read(path).is_ok_and(|old| old == contents.as_bytes())
}
