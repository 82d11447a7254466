//! [`CodeWriter`]: the one indenting text writer every emitter uses.

use std::fmt::Write as _;

/// Accumulates source text, indenting each line by the current level.
#[derive(Debug, Default)]
pub struct CodeWriter {
    out: String,
    level: usize,
    unit: &'static str,
}

impl CodeWriter {
    /// A writer indenting by `unit` (e.g. four spaces) per level.
    pub fn new(unit: &'static str) -> CodeWriter {
        CodeWriter { out: String::new(), level: 0, unit }
    }

    /// Writes one line at the current indentation (an empty line stays empty).
    pub fn line(&mut self, text: impl AsRef<str>) -> &mut Self {
        let text = text.as_ref();
        if !text.is_empty() {
            for _ in 0..self.level {
                self.out.push_str(self.unit);
            }
            self.out.push_str(text);
        }
        self.out.push('\n');
        self
    }

    /// Writes several lines (split at `\n`), each at the current indentation.
    pub fn lines(&mut self, text: impl AsRef<str>) -> &mut Self {
        for l in text.as_ref().lines() {
            self.line(l);
        }
        self
    }

    /// An empty line.
    pub fn blank(&mut self) -> &mut Self {
        self.out.push('\n');
        self
    }

    /// Writes `open`, then runs `body` one level deeper, then writes `close`.
    pub fn block(&mut self, open: impl AsRef<str>, close: impl AsRef<str>, body: impl FnOnce(&mut Self)) -> &mut Self {
        self.line(open);
        self.level += 1;
        body(self);
        self.level -= 1;
        self.line(close)
    }

    /// Goes one level deeper.
    pub fn indent(&mut self) -> &mut Self {
        self.level += 1;
        self
    }

    /// Comes back one level.
    pub fn dedent(&mut self) -> &mut Self {
        self.level = self.level.saturating_sub(1);
        self
    }

    /// Writes `doc` as comment lines, each prefixed with `prefix` (e.g. `/// `), if there is one.
    pub fn doc(&mut self, prefix: &str, doc: Option<&str>) -> &mut Self {
        if let Some(doc) = doc {
            for l in doc.lines() {
                let mut s = String::new();
                let _ = write!(s, "{prefix}{l}");
                self.line(s.trim_end());
            }
        }
        self
    }

    /// The text written so far.
    pub fn finish(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indents_blocks() {
        let mut w = CodeWriter::new("  ");
        w.block("a {", "}", |w| {
            w.line("b;").blank().doc("// ", Some("x\ny"));
        });
        assert_eq!(w.finish(), "a {\n  b;\n\n  // x\n  // y\n}\n");
    }
}
