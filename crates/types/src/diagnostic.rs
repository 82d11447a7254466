//! Diagnostics: every problem found in `.lcm` input, reported as `file:line:col: severity: message`.

use std::fmt;
use std::path::PathBuf;

use crate::model::Span;

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// The input is rejected.
    Error,
    /// The input is accepted, but probably not what was meant.
    Warning,
}

/// One problem in the input, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Where the problem is.
    pub span: Span,
    /// Error or warning.
    pub severity: Severity,
    /// What is wrong, in one sentence.
    pub message: String,
    /// The source line the span points into (without its newline), for a caret display: set with
    /// [`Diagnostic::set_source_line`], which cuts a line longer than [`EXCERPT_CHARS`] to that many characters
    /// around the column.
    pub source_line: Option<String>,
    /// The caret's column in `source_line` (1-based; the span's column unless the line was cut).
    caret_col: u32,
}

/// Where character `n` of `line` begins (`None` past its last): at byte `n` when the bytes before it are ASCII (the
/// usual case, found without walking characters: a walk per diagnostic along a long line was most of a fuzz input's
/// time).
fn char_start(line: &str, n: usize) -> Option<usize> {
    if n <= line.len() && line.as_bytes()[..n].is_ascii() {
        Some(n).filter(|&b| b < line.len())
    } else {
        line.char_indices().nth(n).map(|(i, _)| i)
    }
}

/// The most characters of a source line a diagnostic keeps. Every diagnostic keeps its own copy of its line, so
/// without a bound a file of a few long lines and many errors multiplied itself: a 40 KB input of 14 lines with 2,139
/// errors made 84 MB of copies and 126 MB of rendered text (the lcm_parser fuzz target). Compilers cut long lines
/// around the caret for the same reason (clang's caret diagnostics fit the terminal).
pub const EXCERPT_CHARS: usize = 160;

impl Diagnostic {
    /// An error at `span`.
    pub fn error(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic { span, severity: Severity::Error, message: message.into(), source_line: None, caret_col: 0 }
    }

    /// A warning at `span`.
    pub fn warning(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic { span, severity: Severity::Warning, message: message.into(), source_line: None, caret_col: 0 }
    }

    /// An error about a whole file (line and column 0 are not printed).
    pub fn file_error(file: impl Into<PathBuf>, message: impl Into<String>) -> Diagnostic {
        Diagnostic::error(Span { file: file.into(), line: 0, col: 0 }, message)
    }

    /// Whether this rejects the input.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Keeps `line` (the one the span points into, without its newline) for the caret display; a line longer than
    /// [`EXCERPT_CHARS`] is cut to that many characters around the span's column, each cut marked with `...`.
    pub fn set_source_line(&mut self, line: &str) {
        let col = self.span.col.max(1) as usize;
        // Bytes are at least characters: a short line needs no counting.
        if line.len() <= EXCERPT_CHARS {
            self.source_line = Some(line.to_owned());
            self.caret_col = col as u32;
            return;
        }
        // The window's first character: half a window before the caret; for a caret past the line's end (at its
        // end, for an unexpected end of line), the line's last window.
        let want = col.saturating_sub(1 + EXCERPT_CHARS / 2);
        let (start, from) = match char_start(line, want) {
            Some(from) => (want, from),
            None => {
                let start = line.chars().count().saturating_sub(EXCERPT_CHARS);
                (start, char_start(line, start).unwrap_or(line.len()))
            }
        };
        let to = line[from..].char_indices().nth(EXCERPT_CHARS).map_or(line.len(), |(i, _)| from + i);
        let (head, tail) = (if from > 0 { "..." } else { "" }, if to < line.len() { "..." } else { "" });
        self.source_line = Some(format!("{head}{}{tail}", &line[from..to]));
        self.caret_col = (col - start + head.len()) as u32;
    }

    /// The diagnostic as a compiler prints it: the `file:line:col: ...` line, then the source line and a caret.
    pub fn render(&self) -> String {
        let mut out = self.to_string();
        if let Some(line) = &self.source_line {
            out.push('\n');
            out.push_str(line);
            out.push('\n');
            // The caret goes under the column; tabs are kept so that it lines up in a terminal.
            // (A source line set without set_source_line is the whole line: the caret goes under the span's column.)
            let caret = if self.caret_col > 0 { self.caret_col } else { self.span.col };
            for c in line.chars().take(caret.saturating_sub(1) as usize) {
                out.push(if c == '\t' { '\t' } else { ' ' });
            }
            out.push('^');
        }
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let severity = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        if self.span.line == 0 {
            write!(f, "{}: {}: {}", self.span.file.display(), severity, self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}: {}",
                self.span.file.display(),
                self.span.line,
                self.span.col,
                severity,
                self.message
            )
        }
    }
}

/// The error returned when `.lcm` input is rejected: every diagnostic found, warnings included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Every diagnostic rendered with its source line and caret, one after the other.
    pub fn render(&self) -> String {
        self.0.iter().map(Diagnostic::render).collect::<Vec<_>>().join("\n")
    }

    /// Whether any of them is an error.
    pub fn has_errors(&self) -> bool {
        self.0.iter().any(Diagnostic::is_error)
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

#[cfg(test)]
mod tests {
    use super::{Diagnostic, EXCERPT_CHARS};
    use crate::model::Span;

    fn at(col: u32, line: &str) -> Diagnostic {
        let mut d = Diagnostic::error(Span { file: "f.lcm".into(), line: 1, col }, "bad");
        d.set_source_line(line);
        d
    }

    /// The excerpt's line and the character the caret stands under.
    fn shown(d: &Diagnostic) -> (String, Option<char>) {
        let rendered = d.render();
        let mut lines = rendered.lines().skip(1);
        let (line, caret) = (lines.next().expect("source line"), lines.next().expect("caret line"));
        assert!(caret.ends_with('^') && caret[..caret.len() - 1].chars().all(|c| c == ' ' || c == '\t'), "{caret:?}");
        let under = line.chars().nth(caret.chars().count() - 1);
        (line.to_owned(), under)
    }

    #[test]
    fn a_short_line_is_kept_whole_with_its_tabs() {
        let d = at(6, "\tint x;");
        assert_eq!(d.render(), "f.lcm:1:6: error: bad\n\tint x;\n\t    ^");
    }

    #[test]
    fn a_long_line_is_cut_around_the_caret() {
        let line: String = (0..40_000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        for col in [1, 2, 80, 81, 82, 5_000, 39_900, 39_999, 40_000] {
            let (excerpt, under) = shown(&at(col, &line));
            assert_eq!(under, line.chars().nth(col as usize - 1), "col {col}: {excerpt}");
            let body = excerpt.trim_start_matches("...").trim_end_matches("...");
            assert!(body.chars().count() <= EXCERPT_CHARS && line.contains(body), "col {col}: {excerpt}");
            assert_eq!(excerpt.starts_with("..."), !line.starts_with(body), "col {col}");
            assert_eq!(excerpt.ends_with("..."), !line.ends_with(body), "col {col}");
        }
    }

    #[test]
    fn a_column_past_the_end_of_a_long_line_shows_its_tail() {
        let line = "x".repeat(1_000);
        for col in [1_001, 5_000] {
            let (excerpt, under) = shown(&at(col, &line));
            assert_eq!(under, None, "col {col}: the caret stands past the end");
            assert!(excerpt.starts_with("...") && line.ends_with(&excerpt[3..]), "col {col}: {excerpt}");
            assert!(excerpt.len() <= 3 + EXCERPT_CHARS, "col {col}");
        }
    }

    #[test]
    fn cuts_fall_between_characters() {
        let line = "é€😀".repeat(500);
        for col in [1, 100, 777, 1_500] {
            let (excerpt, under) = shown(&at(col, &line));
            assert_eq!(under, line.chars().nth(col as usize - 1), "col {col}");
            assert!(excerpt.chars().count() <= EXCERPT_CHARS + 6);
        }
    }
}
