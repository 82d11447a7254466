//! Tidy checks on what the docs say (in the style of `tidy.rs` beside it): library and binding docs say why, not
//! how fast, and cite nothing a reader of the repository cannot open; the user docs call no existing command
//! "not yet" there.
//!
//! - **References.** No comment in library or binding source cites `issue <n>`, `issue #<n>` or `seed <nnn>`: name
//!   the thing itself (LCM's paper, the Ach paper, ROS 2's intra-process design article, the test that pins it).
//! - **Measured figures.** No doc comment (`//!`, `///`, a public header's comments, a Python docstring) quotes a
//!   number with a time unit (ns, us, ms), a rate (MB/s, GB/s, msg/s), a percentage, a speedup ratio, or the
//!   machine it was measured on: those go stale unseen. Say the reason in words; the figures belong in `bench/` and
//!   commit bodies. A genuine constant on a doc line (a configured wait slice) takes the marker `tidy:allow-figure`
//!   (as `<!-- tidy:allow-figure -->` in Rust docs, which rustdoc does not render); there may be only a few.
//! - **"Not yet".** No line of README.md, ARCHITECTURE.md, docs/**/*.md or bindings/*/README.md says "not yet" and
//!   names a `nerve <subcommand>` that `crates/cli/src/main.rs`'s `Command` enum has.

use std::path::{Path, PathBuf};

/// The marker that lets one doc line keep a number with a unit (a constant, not a measurement).
const ALLOW: &str = concat!("tidy:", "allow-figure");
/// How many lines may carry [`ALLOW`]: the allowlist stays small enough to read at a glance.
const MAX_ALLOWED: usize = 6;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Files under `dir` (recursively) whose name ends in one of `exts`, skipping build output and test modules.
fn walk(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if p.is_dir() {
            let skip = name == "target" || name.starts_with("target-") || name == "tests" || name == "__pycache__";
            if !skip {
                walk(&p, exts, out);
            }
        } else if exts.iter().any(|x| name.ends_with(x)) && name != "tests.rs" {
            out.push(p);
        }
    }
}

/// The library and binding source whose docs are checked: `crates/*/src`, `bindings/c/*/{src,include}`,
/// `bindings/python/{src,python}` and every `src` directory under `examples/`.
fn sources() -> Vec<PathBuf> {
    let root = repo_root();
    let mut files = Vec::new();
    let code = [".rs", ".py", ".h", ".hpp"];
    for parent in ["crates", "bindings/c"] {
        for e in std::fs::read_dir(root.join(parent)).unwrap().flatten() {
            walk(&e.path().join("src"), &code, &mut files);
            walk(&e.path().join("include"), &code, &mut files);
        }
    }
    walk(&root.join("bindings/python/src"), &code, &mut files);
    walk(&root.join("bindings/python/python"), &code, &mut files);
    let mut dirs = vec![root.join("examples")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() && p.file_name().is_some_and(|n| n == "src") {
                walk(&p, &code, &mut files);
            } else if p.is_dir() && p.file_name().is_some_and(|n| n != "target" && n != "tests") {
                dirs.push(p);
            }
        }
    }
    assert!(files.len() > 100, "found only {} source files under {}: is the walk broken?", files.len(), root.display());
    for kind in [".h", ".hpp", ".py", "/examples/"] {
        let s = |f: &PathBuf| f.display().to_string();
        assert!(files.iter().any(|f| s(f).ends_with(kind) || s(f).contains(kind)), "the walk found no {kind} source");
    }
    files
}

/// One line of a comment: its 1-based line number, its text, and whether it is documentation (figures are checked
/// only there; references everywhere).
struct Comment {
    line: usize,
    text: String,
    doc: bool,
}

/// The comments of a Rust file, outside inline `#[cfg(test)]` modules: `//!` and `///` lines are docs, other `//`
/// lines are plain comments.
fn rust_comments(text: &str) -> Vec<Comment> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim_start();
        if t == "#[cfg(test)]" {
            // An inline test module ends at the `}` indented as its `mod` line (rustfmt's layout).
            let mut j = i + 1;
            while j < lines.len() && lines[j].trim_start().starts_with("#[") {
                j += 1;
            }
            let m = lines.get(j).copied().unwrap_or("");
            let m_trim = m.trim_start();
            if (m_trim.starts_with("mod ") || m_trim.starts_with("pub mod ")) && m_trim.ends_with('{') {
                let close = format!("{}}}", &m[..m.len() - m_trim.len()]);
                i = j + 1;
                while i < lines.len() && lines[i] != close {
                    i += 1;
                }
                i += 1;
                continue;
            }
        }
        if let Some(rest) = t.strip_prefix("//!").or_else(|| t.strip_prefix("///")) {
            out.push(Comment { line: i + 1, text: rest.to_owned(), doc: true });
        } else if let Some(rest) = t.strip_prefix("//") {
            out.push(Comment { line: i + 1, text: rest.to_owned(), doc: false });
        }
        i += 1;
    }
    out
}

/// The comments of a C or C++ header, `//` and `/* */` alike: in a public header every comment is documentation.
fn c_comments(text: &str) -> Vec<Comment> {
    let mut out = Vec::new();
    let mut in_block = false;
    for (n, line) in text.lines().enumerate() {
        let b = line.as_bytes();
        let (mut i, mut start) = (0, 0);
        let mut piece = String::new();
        let mut in_str = false;
        while i < b.len() {
            if in_block {
                if b[i..].starts_with(b"*/") {
                    piece.push_str(&line[start..i]);
                    in_block = false;
                    i += 2;
                    continue;
                }
            } else if in_str {
                if b[i] == b'\\' {
                    i += 1;
                } else if b[i] == b'"' {
                    in_str = false;
                }
            } else if b[i] == b'"' {
                in_str = true;
            } else if b[i..].starts_with(b"//") {
                piece.push_str(&line[i + 2..]);
                break;
            } else if b[i..].starts_with(b"/*") {
                in_block = true;
                i += 2;
                start = i;
                continue;
            }
            i += 1;
        }
        if in_block {
            piece.push_str(&line[start.min(line.len())..]);
        }
        if !piece.trim().is_empty() {
            out.push(Comment { line: n + 1, text: piece, doc: true });
        }
    }
    out
}

/// The comments of a Python file: the text inside triple-quoted strings (docstrings) is documentation, `#` comments
/// are plain comments.
fn python_comments(text: &str) -> Vec<Comment> {
    let mut out = Vec::new();
    let mut in_doc: Option<&str> = None;
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        let mut doc = String::new();
        let mut comment = None;
        loop {
            if let Some(q) = in_doc {
                match rest.find(q) {
                    Some(end) => {
                        doc.push_str(&rest[..end]);
                        rest = &rest[end + 3..];
                        in_doc = None;
                    }
                    None => {
                        doc.push_str(rest);
                        break;
                    }
                }
            } else {
                // The first of: a triple quote, a single-quoted string, a `#`.
                let Some(at) = rest.find(['"', '\'', '#']) else { break };
                let tail = &rest[at..];
                if let Some(c) = tail.strip_prefix('#') {
                    comment = Some(c.to_owned());
                    break;
                } else if tail.starts_with("\"\"\"") || tail.starts_with("'''") {
                    in_doc = Some(&tail[..3]);
                    rest = &tail[3..];
                } else {
                    let q = &tail[..1];
                    rest = match tail[1..].find(q) {
                        Some(end) => &tail[1 + end + 1..],
                        None => "",
                    };
                }
            }
        }
        if !doc.trim().is_empty() {
            out.push(Comment { line: n + 1, text: doc, doc: true });
        }
        if let Some(c) = comment {
            out.push(Comment { line: n + 1, text: c, doc: false });
        }
    }
    out
}

fn comments(path: &Path, text: &str) -> Vec<Comment> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("rs") => rust_comments(text),
        Some("py") => python_comments(text),
        _ => c_comments(text),
    }
}

/// An `issue <n>`, `issue #<n>` or `seed <nnn>` reference in `text`, if any: where it starts, and its text.
fn reference(text: &str) -> Option<(usize, String)> {
    let lower = text.to_ascii_lowercase();
    for word in ["issues", "issue", "seeds", "seed"] {
        for (at, _) in lower.match_indices(word) {
            if lower[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let Some(after) = lower[at + word.len()..].strip_prefix(' ') else { continue };
            let hash = usize::from(after.starts_with('#'));
            let digits = after[hash..].bytes().take_while(u8::is_ascii_digit).count();
            let end = at + word.len() + 1 + hash + digits;
            let whole = !lower[end..].starts_with(|c: char| c.is_alphanumeric() || c == '_');
            // A seed document is numbered in three digits (`seed 003`); an issue by any number.
            let numbered = if word.starts_with("seed") { digits == 3 && hash == 0 } else { digits > 0 };
            if whole && numbered {
                return Some((at, text[at..end].to_owned()));
            }
        }
    }
    None
}

/// Units that, after a number, make it a measurement: time, rate, share, speedup.
const UNITS: &[&str] = &[
    "ns",
    "us",
    "µs",
    "μs",
    "ms",
    "MB/s",
    "GB/s",
    "KB/s",
    "kB/s",
    "MiB/s",
    "GiB/s",
    "Mbit/s",
    "Gbit/s",
    "msg/s",
    "msgs/s",
    "messages/s",
    "messages per second",
    "%",
    "x faster",
    "x slower",
    "x as fast",
    "x lcm",
    "times faster",
    "times slower",
    "times as fast",
];

/// Words that name the machine a figure was taken on.
const MACHINE: &[&str] = &["VM", "vCPU", "-core machine", "-core VM", "-core box"];

/// A measured figure in `text`, if any, and where it starts: a number (`5`, `0.3`, `25,000`, `10-15`) directly
/// followed by one of [`UNITS`], or a machine named as in [`MACHINE`].
fn figure(text: &str) -> Option<(usize, String)> {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let starts_number = b[i].is_ascii_digit()
            && !text[..i].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
        if !starts_number {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len()
            && (b[i].is_ascii_digit()
                || matches!(b[i], b'.' | b',' | b'-') && i + 1 < b.len() && b[i + 1].is_ascii_digit())
        {
            i += 1;
        }
        let after = &text[i..];
        let after = after.strip_prefix(' ').or_else(|| after.strip_prefix('\u{a0}')).unwrap_or(after);
        for unit in UNITS {
            if let Some(tail) = after.strip_prefix(unit) {
                let alpha = unit.chars().next_back().is_some_and(char::is_alphabetic);
                if !(alpha && tail.chars().next().is_some_and(|c| c.is_alphanumeric() || c == '_')) {
                    return Some((start, text[start..text.len() - tail.len()].to_owned()));
                }
            }
        }
    }
    for m in MACHINE {
        for (at, _) in text.match_indices(m) {
            let before = text[..at].chars().next_back();
            let after = text[at + m.len()..].chars().next();
            let bounded = |c: Option<char>| !c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            if (m.starts_with('-') || bounded(before)) && bounded(after) {
                return Some((at, m.trim_start_matches('-').to_owned()));
            }
        }
    }
    None
}

/// What `find` finds in each comment line, taken with the start of the next line of the same comment, so that
/// `issue` at the end of one line and `25` at the start of the next are found too (reported on the first line,
/// and only there).
fn scan<'a>(
    comments: &'a [Comment],
    find: impl Fn(&str) -> Option<(usize, String)> + 'a,
) -> impl Iterator<Item = (&'a Comment, String)> + 'a {
    comments.iter().enumerate().filter_map(move |(k, c)| {
        let next = comments.get(k + 1).filter(|n| n.line == c.line + 1 && n.doc == c.doc);
        let head: String =
            next.map_or(String::new(), |n| n.text.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
        let probe = format!("{} {head}", c.text.trim_end());
        find(&probe).filter(|(at, _)| *at < c.text.trim_end().len()).map(|(_, found)| (c, found))
    })
}

#[test]
fn library_docs_cite_no_issue_or_seed_numbers() {
    let root = repo_root();
    let mut bad = Vec::new();
    for f in sources() {
        let text = std::fs::read_to_string(&f).unwrap();
        let rel = f.strip_prefix(&root).unwrap().display();
        for (c, r) in scan(&comments(&f, &text), reference) {
            bad.push(format!("{rel}:{}: `{r}` (name the document or the test itself)", c.line));
        }
    }
    assert!(bad.is_empty(), "comments cite references a reader of the repository cannot resolve:\n{}", bad.join("\n"));
}

#[test]
fn library_docs_quote_no_measured_figures() {
    let root = repo_root();
    let (mut bad, mut allowed) = (Vec::new(), Vec::new());
    for f in sources() {
        let text = std::fs::read_to_string(&f).unwrap();
        let rel = f.strip_prefix(&root).unwrap().display().to_string();
        let docs: Vec<Comment> = comments(&f, &text).into_iter().filter(|c| c.doc).collect();
        allowed.extend(docs.iter().filter(|c| c.text.contains(ALLOW)).map(|c| format!("{rel}:{}", c.line)));
        for (c, fig) in scan(&docs, figure).filter(|(c, _)| !c.text.contains(ALLOW)) {
            bad.push(format!("{rel}:{}: `{fig}` in: {}", c.line, c.text.trim()));
        }
    }
    assert!(
        bad.is_empty(),
        "docs quote measured figures, which go stale unseen (say the reason in words; figures go in bench/ or a \
         commit body; a genuine constant takes `{ALLOW}` on its line):\n{}",
        bad.join("\n")
    );
    assert!(
        allowed.len() <= MAX_ALLOWED,
        "{} doc lines carry `{ALLOW}`, more than {MAX_ALLOWED}: name the constant instead of its value\n{}",
        allowed.len(),
        allowed.join("\n")
    );
}

/// `nerve`'s subcommands, from the `Command` enum in `crates/cli/src/main.rs`: each variant in kebab case, as clap
/// names it, or the `name = "..."` of its `#[command(...)]`.
fn subcommands() -> Vec<String> {
    let main = std::fs::read_to_string(repo_root().join("crates/cli/src/main.rs")).unwrap();
    let body = main.split_once("enum Command {").expect("main.rs has an `enum Command`").1;
    let body = &body[..body.find("\n}").expect("`enum Command` ends")];
    let mut names = Vec::new();
    let mut renamed = None;
    for line in body.lines().map(str::trim) {
        if line.starts_with("#[command(") {
            if let Some((_, r)) = line.split_once("name = \"") {
                renamed = r.split('"').next().map(str::to_owned);
            }
        } else if line.starts_with(|c: char| c.is_ascii_uppercase()) {
            let variant: String = line.chars().take_while(|c| c.is_alphanumeric()).collect();
            let mut kebab = String::new();
            for (k, c) in variant.chars().enumerate() {
                if c.is_uppercase() && k > 0 {
                    kebab.push('-');
                }
                kebab.push(c.to_ascii_lowercase());
            }
            names.push(renamed.take().unwrap_or(kebab));
        }
    }
    assert!(names.len() >= 5 && names.iter().any(|n| n == "spy"), "could not read the subcommands: {names:?}");
    names
}

#[test]
fn user_docs_call_no_existing_command_not_yet() {
    let root = repo_root();
    let commands = subcommands();
    let mut docs = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                docs.push(p);
            }
        }
    }
    for e in std::fs::read_dir(root.join("bindings")).unwrap().flatten() {
        docs.push(e.path().join("README.md"));
    }
    let mut bad = Vec::new();
    for doc in docs {
        let Ok(text) = std::fs::read_to_string(&doc) else { continue };
        let rel = doc.strip_prefix(&root).unwrap().display().to_string();
        for (n, line) in text.lines().enumerate() {
            if !line.to_lowercase().contains("not yet") {
                continue;
            }
            for (at, _) in line.match_indices("nerve ") {
                let word: String = line[at + 6..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '-').collect();
                let whole =
                    !line[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_');
                if whole && commands.contains(&word) {
                    bad.push(format!(
                        "{rel}:{}: says \"not yet\" and names `nerve {word}`, which exists: {}",
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(bad.is_empty(), "user docs call existing commands unfinished:\n{}", bad.join("\n"));
}

#[test]
fn the_detectors_catch_what_they_name() {
    // References.
    assert!(reference("relinking (issue 25).").is_some());
    assert!(reference("see issue #12").is_some());
    assert!(reference("the copy tables of seed 003").is_some());
    assert!(reference("an issue with the socket").is_none());
    assert!(reference("let mut seed = 0x2545").is_none());
    assert!(reference("the seed types (examples/types)").is_none());
    let wrapped = [
        Comment { line: 7, text: " shares one counter, issue".into(), doc: true },
        Comment { line: 8, text: " #345 and 5".into(), doc: true },
        Comment { line: 9, text: " us later".into(), doc: true },
    ];
    let found: Vec<_> = scan(&wrapped, reference).map(|(c, r)| (c.line, r)).collect();
    assert_eq!(found, [(7, "issue #345".to_owned())]);
    let found: Vec<_> = scan(&wrapped, figure).map(|(c, r)| (c.line, r)).collect();
    assert_eq!(found, [(8, "5 us".to_owned())]);
    // Figures.
    assert!(figure("raw nerve-shm 5 us; the bus 10-15 us either way").is_some());
    assert!(figure("8-22 % of the requests dropped").is_some());
    assert!(figure("at 25,000 messages/s the default").is_some());
    assert!(figure("relaying at 20 MB/s").is_some());
    assert!(figure("costs 0.1-0.5 µs").is_some());
    assert!(figure("2-3x faster for LiDAR points").is_some());
    assert!(figure("on a 2-core VM while a build ran").is_some());
    assert!(figure("on this project's 2-vCPU VM").is_some());
    assert!(figure("`timeout_ms` bounds the wait").is_none());
    assert!(figure("LCM's 4 GB limit, a 64-byte cache line, a default of 30 messages").is_none());
    assert!(figure("a 640x480 image at 10 Hz").is_none());
    assert!(figure("`%s.%02d`, u32 and x86_64").is_none());
    // Comment extraction.
    let rs = "//! module 5 us\n/// item\n// plain\nfn f() {}\n#[cfg(test)]\nmod tests {\n    /// 9 us\n}\n/// after\n";
    let c: Vec<_> = rust_comments(rs).into_iter().map(|c| (c.line, c.doc)).collect();
    assert_eq!(c, [(1, true), (2, true), (3, false), (9, true)]);
    let py = "\"\"\"Module\n5 us.\"\"\"\nx = \"#\"  # a comment\n";
    let c: Vec<_> = python_comments(py).into_iter().map(|c| (c.line, c.doc, c.text.trim().to_owned())).collect();
    assert_eq!(c, [(1, true, "Module".into()), (2, true, "5 us.".into()), (3, false, "a comment".into())]);
    let h = "int x; /* a\n b */ int y; // c\nconst char *s = \"//\";\n";
    let c: Vec<_> = c_comments(h).into_iter().map(|c| (c.line, c.text.trim().to_owned())).collect();
    assert_eq!(c, [(1, "a".to_owned()), (2, "b  c".to_owned())]);
}
