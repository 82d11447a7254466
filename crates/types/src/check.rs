//! Checks across files: every referenced type exists (in the inputs or on the include path), no type is declared
//! twice, and fingerprints can be computed. The result is a [`Schema`].

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::fingerprint;
use crate::model::{MemberType, Schema, Span, TypeName};
use crate::parser::{parse_file, ParsedFile};

/// `.lcm` text with the name it is reported under.
#[derive(Debug, Clone)]
pub struct Source {
    /// The file name used in diagnostics.
    pub path: PathBuf,
    /// The file's text.
    pub text: String,
}

impl Source {
    /// Reads a file.
    pub fn read(path: impl Into<PathBuf>) -> Result<Source, Diagnostic> {
        let path = path.into();
        match std::fs::read(&path) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => Ok(Source { path, text }),
                Err(e) => {
                    let msg = format!("not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to());
                    Err(Diagnostic::file_error(path, msg))
                }
            },
            Err(e) => Err(Diagnostic::file_error(path.clone(), format!("cannot read: {e}"))),
        }
    }
}

/// A checked schema and the warnings found on the way.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The types: those declared in the inputs first, then those found on the include path.
    pub schema: Schema,
    /// How many structs (from the front of `schema.structs`) were declared in the inputs; code is generated for
    /// those, not for types only found on the include path.
    pub input_structs: usize,
    /// How many enums (from the front of `schema.enums`) were declared in the inputs.
    pub input_enums: usize,
    /// Warnings (e.g. `int` used as a type).
    pub warnings: Vec<Diagnostic>,
}

/// Reads, parses and checks `files`, looking up referenced types that they do not declare in `include_dirs`.
pub fn load(files: &[PathBuf], include_dirs: &[PathBuf]) -> Result<Checked, Diagnostics> {
    let mut sources = Vec::new();
    let mut diags = Vec::new();
    for f in files {
        match Source::read(f) {
            Ok(s) => sources.push(s),
            Err(d) => diags.push(d),
        }
    }
    if !diags.is_empty() {
        return Err(Diagnostics(diags));
    }
    check(&sources, include_dirs)
}

/// Parses and checks `sources` (with the include path used for referenced types they do not declare).
pub fn check(sources: &[Source], include_dirs: &[PathBuf]) -> Result<Checked, Diagnostics> {
    let mut diags = Vec::new();
    let mut schema = Schema::default();
    // Where each type was declared, for "duplicate type" messages.
    let mut declared: HashMap<TypeName, Span> = HashMap::new();
    for src in sources {
        let (parsed, file_diags) = parse_file(&src.path, &src.text);
        diags.extend(file_diags);
        add_declarations(&mut schema, &mut declared, parsed, &mut diags, Some(&src.text));
    }
    let input_structs = schema.structs.len();
    let input_enums = schema.enums.len();

    resolve_from_include_path(&mut schema, &mut declared, include_dirs, &mut diags);
    resolve_member_types(&mut schema, &mut diags, sources);

    if diags.iter().any(Diagnostic::is_error) {
        return Err(Diagnostics(diags));
    }
    if let Err(e) = fingerprint::assign(&mut schema) {
        let st = schema.struct_named(&e.name).expect("the type came from the schema");
        let msg = format!("the fingerprint of '{}' cannot be computed: too many recursive paths", e.name);
        diags.push(Diagnostic::error(st.span.clone(), msg));
        return Err(Diagnostics(diags));
    }
    Ok(Checked { schema, input_structs, input_enums, warnings: diags })
}

fn add_declarations(
    schema: &mut Schema,
    declared: &mut HashMap<TypeName, Span>,
    parsed: ParsedFile,
    diags: &mut Vec<Diagnostic>,
    text: Option<&str>,
) {
    // The file's lines, split once when the first duplicate needs one: finding each duplicate's line from the start
    // of the text made a file of many duplicates quadratic (the lcm_parser fuzz target's inputs slowed to 600 a second).
    let mut lines: Option<Vec<&str>> = None;
    let mut duplicate = |name: &TypeName, span: &Span, diags: &mut Vec<Diagnostic>| -> bool {
        if let Some(first) = declared.get(name) {
            let msg = format!(
                "duplicate type '{name}': already declared at {}:{}:{}",
                first.file.display(),
                first.line,
                first.col
            );
            let mut d = Diagnostic::error(span.clone(), msg);
            if let Some(line) =
                text.and_then(|t| lines.get_or_insert_with(|| t.lines().collect()).get(span.line as usize - 1).copied())
            {
                d.set_source_line(line);
            }
            diags.push(d);
            true
        } else {
            declared.insert(name.clone(), span.clone());
            false
        }
    };
    for st in parsed.structs {
        if !duplicate(&st.name, &st.span, diags) {
            schema.structs.push(st);
        }
    }
    for en in parsed.enums {
        if !duplicate(&en.name, &en.span, diags) {
            schema.enums.push(en);
        }
    }
}

/// Names referenced by members that no declaration provides.
fn unresolved(schema: &Schema) -> BTreeSet<TypeName> {
    let known: BTreeSet<&TypeName> =
        schema.structs.iter().map(|s| &s.name).chain(schema.enums.iter().map(|e| &e.name)).collect();
    schema
        .structs
        .iter()
        .flat_map(|s| s.members.iter())
        .filter_map(|m| match &m.ty {
            MemberType::Struct(n) | MemberType::Enum(n) if !known.contains(n) => Some(n.clone()),
            _ => None,
        })
        .collect()
}

/// Every `.lcm` file under `dir`, at most a few levels deep (an include directory is a tree of packages).
fn lcm_files_under(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() && depth < 8 {
            lcm_files_under(&p, depth + 1, out);
        } else if p.extension().is_some_and(|e| e == "lcm") {
            out.push(p);
        }
    }
}

/// Adds the types that inputs reference but do not declare, from the include directories. Files there are parsed
/// only when something is missing; a file's errors are reported only if it declares a type that is needed.
fn resolve_from_include_path(
    schema: &mut Schema,
    declared: &mut HashMap<TypeName, Span>,
    include_dirs: &[PathBuf],
    diags: &mut Vec<Diagnostic>,
) {
    if include_dirs.is_empty() || unresolved(schema).is_empty() {
        return;
    }
    let mut files = Vec::new();
    for dir in include_dirs {
        lcm_files_under(dir, 0, &mut files);
    }
    let mut pool: Vec<(PathBuf, String, ParsedFile, Vec<Diagnostic>)> = Vec::new();
    for f in files {
        if let Ok(src) = Source::read(&f) {
            let (parsed, d) = parse_file(&src.path, &src.text);
            pool.push((f, src.text, parsed, d));
        }
    }
    // Taking a file may reference further types: repeat until nothing new is needed.
    loop {
        let missing = unresolved(schema);
        let pick = pool.iter().position(|(_, _, parsed, _)| {
            parsed.structs.iter().any(|s| missing.contains(&s.name))
                || parsed.enums.iter().any(|e| missing.contains(&e.name))
        });
        let Some(i) = pick else { break };
        let (_, text, parsed, file_diags) = pool.swap_remove(i);
        diags.extend(file_diags);
        // Only the needed types are taken, so an include file declaring a type the inputs also declare is no error.
        let mut needed = parsed;
        needed.structs.retain(|s| !declared.contains_key(&s.name));
        needed.enums.retain(|e| !declared.contains_key(&e.name));
        add_declarations(schema, declared, needed, diags, Some(&text));
    }
}

/// Turns member type names into struct or enum references, reporting the names nothing declares.
fn resolve_member_types(schema: &mut Schema, diags: &mut Vec<Diagnostic>, sources: &[Source]) {
    let structs: BTreeSet<TypeName> = schema.structs.iter().map(|s| s.name.clone()).collect();
    let enums: BTreeSet<TypeName> = schema.enums.iter().map(|e| e.name.clone()).collect();
    // Each source's lines, split once when the first unknown name in it needs one (see add_declarations).
    let mut lines: Vec<Option<Vec<&str>>> = vec![None; sources.len()];
    for st in &mut schema.structs {
        for m in &mut st.members {
            let MemberType::Struct(name) = &m.ty else { continue };
            if enums.contains(name) {
                m.ty = MemberType::Enum(name.clone());
            } else if !structs.contains(name) {
                let hint = if name.name == "int" {
                    " (did you mean int32_t?)".to_owned()
                } else if name.package.is_empty() {
                    String::new()
                } else {
                    format!(" (looked for '{}' in the input files and the include path)", name.name)
                };
                let mut d =
                    Diagnostic::error(m.span.clone(), format!("unknown type '{name}' for member '{}'{hint}", m.name));
                let line = sources.iter().position(|s| s.path == m.span.file).and_then(|i| {
                    let text = &sources[i].text;
                    lines[i].get_or_insert_with(|| text.lines().collect()).get(m.span.line as usize - 1).copied()
                });
                if let Some(line) = line {
                    d.set_source_line(line);
                }
                diags.push(d);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{check, Source};

    fn source(path: &str, text: &str) -> Source {
        Source { path: path.into(), text: text.to_owned() }
    }

    #[test]
    fn duplicates_and_unknown_types_show_their_own_lines() {
        let a = source("a.lcm", "package p;\nstruct s_t { int8_t x; }\nstruct u_t {\n  nope_t n;\n  int y;\n}\n");
        let b = source("b.lcm", "package p;\n\nstruct s_t { int8_t z; }\nstruct s_t { int8_t w; }\n");
        let diags = check(&[a, b], &[]).expect_err("rejected").0;
        let lines: Vec<(String, u32, Option<&str>)> =
            diags.iter().map(|d| (d.span.file.display().to_string(), d.span.line, d.source_line.as_deref())).collect();
        for expected in [
            ("b.lcm".to_owned(), 3, Some("struct s_t { int8_t z; }")),
            ("b.lcm".to_owned(), 4, Some("struct s_t { int8_t w; }")),
            ("a.lcm".to_owned(), 4, Some("  nope_t n;")),
            ("a.lcm".to_owned(), 5, Some("  int y;")),
        ] {
            assert!(lines.contains(&expected), "{expected:?} not in {lines:?}");
        }
        let rendered = diags.iter().find(|d| d.span.line == 5).expect("int y").render();
        assert!(rendered.ends_with("  int y;\n  ^"), "{rendered}");
    }
}
