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
    /// The source line the span points into (without its newline), for a caret display.
    pub source_line: Option<String>,
}

impl Diagnostic {
    /// An error at `span`.
    pub fn error(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic { span, severity: Severity::Error, message: message.into(), source_line: None }
    }

    /// A warning at `span`.
    pub fn warning(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic { span, severity: Severity::Warning, message: message.into(), source_line: None }
    }

    /// An error about a whole file (line and column 0 are not printed).
    pub fn file_error(file: impl Into<PathBuf>, message: impl Into<String>) -> Diagnostic {
        Diagnostic::error(Span { file: file.into(), line: 0, col: 0 }, message)
    }

    /// Whether this rejects the input.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The diagnostic as a compiler prints it: the `file:line:col: ...` line, then the source line and a caret.
    pub fn render(&self) -> String {
        let mut out = self.to_string();
        if let Some(line) = &self.source_line {
            out.push('\n');
            out.push_str(line);
            out.push('\n');
            // The caret goes under the column; tabs are kept so that it lines up in a terminal.
            for c in line.chars().take(self.span.col.saturating_sub(1) as usize) {
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
