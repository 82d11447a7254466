//! The parser: tokens of one `.lcm` file -> structs and enums with their members, dimensions and consts.
//!
//! Everything that can be checked inside one declaration is checked here (dimensions, duplicate members, const
//! values); whether referenced types exist is checked later, across files, by `check`. The parser recovers after an
//! error (it skips to the next `;`, `}` or top-level keyword), so one run reports every error in a file.

use std::path::{Path, PathBuf};

use crate::diagnostic::Diagnostic;
use crate::lexer::{tokenize, Token, TokenKind};
use crate::model::{Const, ConstValue, Dim, Enum, EnumValue, Member, MemberType, Primitive, Span, Struct, TypeName};

/// What one file declares. Member types that name structs are not resolved yet: a name may turn out to be an enum,
/// or not to exist, and only `check` knows.
#[derive(Debug, Clone, Default)]
pub struct ParsedFile {
    /// Structs, in declaration order, with base hash and fingerprint still 0.
    pub structs: Vec<Struct>,
    /// Enums, in declaration order, with hash still 0.
    pub enums: Vec<Enum>,
}

/// Parses one file's text. Diagnostics are returned alongside whatever could be parsed.
pub fn parse_file(file: &Path, text: &str) -> (ParsedFile, Vec<Diagnostic>) {
    let lines: Vec<&str> = text.lines().collect();
    let mut parser = Parser {
        file: file.to_path_buf(),
        lines: &lines,
        tokens: Vec::new(),
        pos: 0,
        package: String::new(),
        pending_doc: Vec::new(),
        diags: Vec::new(),
        out: ParsedFile::default(),
    };
    match tokenize(text) {
        Ok(tokens) => parser.tokens = tokens,
        Err(e) => {
            let span = Span { file: file.to_path_buf(), line: e.line, col: e.col };
            parser.push(Diagnostic::error(span, e.message));
            return (parser.out, parser.diags);
        }
    }
    parser.parse_top_level();
    (parser.out, parser.diags)
}

/// A syntax error already reported; the caller recovers.
struct Reported;

type PResult<T> = Result<T, Reported>;

struct Parser<'a> {
    file: PathBuf,
    lines: &'a [&'a str],
    tokens: Vec<Token>,
    pos: usize,
    package: String,
    pending_doc: Vec<String>,
    diags: Vec<Diagnostic>,
    out: ParsedFile,
}

impl Parser<'_> {
    // ----- token access -----

    /// The next non-comment token; comments passed over are kept as pending documentation.
    fn peek(&mut self) -> Option<&Token> {
        while let Some(t) = self.tokens.get(self.pos) {
            if t.kind != TokenKind::Comment {
                break;
            }
            let text = t.text.clone();
            self.pending_doc.push(text);
            self.pos += 1;
        }
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<Token> {
        self.peek()?;
        let t = self.tokens[self.pos].clone();
        self.pos += 1;
        Some(t)
    }

    fn take_doc(&mut self) -> Option<String> {
        let doc = std::mem::take(&mut self.pending_doc);
        let doc: Vec<String> = doc.into_iter().filter(|d| !d.is_empty()).collect();
        (!doc.is_empty()).then(|| doc.join("\n"))
    }

    fn span_of(&self, t: &Token) -> Span {
        Span { file: self.file.clone(), line: t.line, col: t.col }
    }

    /// Where the end of the file is, for "unexpected end of file".
    fn eof_span(&self) -> Span {
        let line = self.lines.len().max(1) as u32;
        let col = self.lines.last().map_or(0, |l| l.chars().count()) as u32 + 1;
        Span { file: self.file.clone(), line, col }
    }

    fn push(&mut self, mut d: Diagnostic) {
        if d.span.line > 0 {
            if let Some(line) = self.lines.get(d.span.line as usize - 1) {
                d.set_source_line(line);
            }
        }
        self.diags.push(d);
    }

    fn error_at(&mut self, span: Span, message: impl Into<String>) -> Reported {
        self.push(Diagnostic::error(span, message));
        Reported
    }

    fn error_tok(&mut self, t: &Token, message: impl Into<String>) -> Reported {
        let span = self.span_of(t);
        self.error_at(span, message)
    }

    fn error_eof(&mut self, looking_for: &str) -> Reported {
        let span = self.eof_span();
        self.error_at(span, format!("unexpected end of file, expected {looking_for}"))
    }

    /// Takes the next token, which must be the punctuation `s`.
    fn expect(&mut self, s: &str) -> PResult<Token> {
        match self.next() {
            Some(t) if t.is(s) => Ok(t),
            Some(t) => {
                let msg = format!("expected '{s}', found '{}'", t.text);
                Err(self.error_tok(&t, msg))
            }
            None => Err(self.error_eof(&format!("'{s}'"))),
        }
    }

    /// Takes the next token, which must be a word.
    fn expect_word(&mut self, what: &str) -> PResult<Token> {
        match self.next() {
            Some(t) if t.kind == TokenKind::Word => Ok(t),
            Some(t) => {
                let msg = format!("expected {what}, found '{}'", t.text);
                Err(self.error_tok(&t, msg))
            }
            None => Err(self.error_eof(what)),
        }
    }

    fn at(&mut self, s: &str) -> bool {
        self.peek().is_some_and(|t| t.is(s))
    }

    /// Skips to just after the next `;`, or to (not past) the next `}`. When the token that caused the error was
    /// itself a `;` or `}`, the statement has already ended: nothing more is skipped (so the next member is still
    /// checked, and a `}` still closes the struct).
    fn recover_in_block(&mut self) {
        if let Some(prev) = self.pos.checked_sub(1).and_then(|i| self.tokens.get(i)) {
            if prev.is(";") {
                return;
            }
            if prev.is("}") {
                self.pos -= 1;
                return;
            }
        }
        while let Some(t) = self.peek() {
            if t.is("}") {
                return;
            }
            let semi = t.is(";");
            self.pos += 1;
            if semi {
                return;
            }
        }
    }

    /// Skips to the next top-level keyword.
    fn recover_top_level(&mut self) {
        while let Some(t) = self.peek() {
            if t.is_word("struct") || t.is_word("package") || t.is_word("enum") {
                return;
            }
            self.pos += 1;
        }
    }

    // ----- grammar -----

    fn parse_top_level(&mut self) {
        while let Some(t) = self.peek().cloned() {
            let result = if t.is_word("package") {
                self.parse_package()
            } else if t.is_word("struct") {
                self.parse_struct()
            } else if t.is_word("enum") {
                self.parse_enum()
            } else {
                self.pos += 1;
                let msg = format!("expected 'package', 'struct' or 'enum', found '{}'", t.text);
                Err(self.error_tok(&t, msg))
            };
            if result.is_err() {
                self.recover_top_level();
            }
        }
    }

    fn parse_package(&mut self) -> PResult<()> {
        self.next();
        let name = self.expect_word("a package name")?;
        if !is_dotted_identifier(&name.text) {
            let msg = format!("invalid package name '{}': each part must start with [a-zA-Z_]", name.text);
            return Err(self.error_tok(&name, msg));
        }
        self.expect(";")?;
        self.package = name.text;
        // A comment before `package` documents the file, not the first struct.
        self.pending_doc.clear();
        Ok(())
    }

    /// A type name as written after `struct`: dotted names carry their own package.
    fn declared_name(&self, text: &str) -> TypeName {
        if text.contains('.') {
            TypeName::parse(text)
        } else {
            TypeName { package: self.package.clone(), name: text.to_owned() }
        }
    }

    fn parse_struct(&mut self) -> PResult<()> {
        let doc = self.take_doc();
        self.next();
        let name_tok = self.expect_word("a struct name")?;
        if !is_dotted_identifier(&name_tok.text) {
            let msg = format!("invalid type name '{}': must start with [a-zA-Z_]", name_tok.text);
            return Err(self.error_tok(&name_tok, msg));
        }
        self.expect("{")?;
        let mut st = Struct {
            name: self.declared_name(&name_tok.text),
            members: Vec::new(),
            consts: Vec::new(),
            doc,
            span: self.span_of(&name_tok),
            base_hash: 0,
            fingerprint: 0,
        };
        loop {
            let Some(t) = self.peek().cloned() else {
                self.error_eof("'}' to close the struct");
                break;
            };
            if t.is("}") {
                self.next();
                break;
            }
            let result = if t.is_word("const") {
                self.parse_const(&mut st)
            } else if t.is_word("struct") || t.is_word("enum") {
                self.next();
                let msg = format!("nested {} definitions are not supported in LCM", t.text);
                self.error_tok(&t, msg);
                // The nested block is skipped whole; what follows it is parsed normally.
                self.skip_braced_block();
                Ok(())
            } else {
                self.parse_member_decl(&mut st)
            };
            if result.is_err() {
                self.recover_in_block();
            }
        }
        self.pending_doc.clear();
        self.out.structs.push(st);
        Ok(())
    }

    /// Skips a `name { ... }` block with nested braces, for recovery after a nested definition.
    fn skip_braced_block(&mut self) {
        let mut depth = 0usize;
        while let Some(t) = self.peek().cloned() {
            if t.is("{") {
                depth += 1;
            } else if t.is("}") {
                if depth <= 1 {
                    if depth == 1 {
                        self.pos += 1;
                    }
                    return;
                }
                depth -= 1;
            } else if t.is(";") && depth == 0 {
                return;
            }
            self.pos += 1;
        }
    }

    fn check_new_name(&mut self, st: &Struct, tok: &Token) -> PResult<()> {
        if !is_identifier(&tok.text) {
            let msg = format!("invalid member name '{}': must start with [a-zA-Z_]", tok.text);
            return Err(self.error_tok(tok, msg));
        }
        if st.members.iter().any(|m| m.name == tok.text) || st.consts.iter().any(|c| c.name == tok.text) {
            let msg = format!("duplicate member name '{}'", tok.text);
            return Err(self.error_tok(tok, msg));
        }
        Ok(())
    }

    fn parse_member_decl(&mut self, st: &mut Struct) -> PResult<()> {
        let doc = self.take_doc();
        let type_tok = self.expect_word("a type name")?;
        let ty = self.member_type(&type_tok)?;
        let mut first = true;
        loop {
            let name_tok = self.expect_word("a member name")?;
            self.check_new_name(st, &name_tok)?;
            let mut dims = Vec::new();
            while self.at("[") {
                let open = self.next().expect("peeked");
                dims.push(self.parse_dim(st, &open)?);
                self.expect("]")?;
            }
            st.members.push(Member {
                name: name_tok.text.clone(),
                ty: ty.clone(),
                dims,
                doc: if first { doc.clone() } else { None },
                span: self.span_of(&name_tok),
            });
            first = false;
            match self.next() {
                Some(t) if t.is(";") => return Ok(()),
                Some(t) if t.is(",") => continue,
                Some(t) => {
                    let msg = format!("expected ';' or ',' after member '{}', found '{}'", name_tok.text, t.text);
                    return Err(self.error_tok(&t, msg));
                }
                None => return Err(self.error_eof("';'")),
            }
        }
    }

    fn member_type(&mut self, tok: &Token) -> PResult<MemberType> {
        if let Some(p) = Primitive::from_lcm_name(&tok.text) {
            return Ok(MemberType::Primitive(p));
        }
        if !is_dotted_identifier(&tok.text) {
            let msg = format!("invalid type name '{}': must start with [a-zA-Z_]", tok.text);
            return Err(self.error_tok(tok, msg));
        }
        if tok.text == "int" {
            let span = self.span_of(tok);
            self.push(Diagnostic::warning(span, "int type should probably be int8_t, int16_t, int32_t, or int64_t"));
        }
        Ok(MemberType::Struct(self.declared_name(&tok.text)))
    }

    fn parse_dim(&mut self, st: &Struct, open: &Token) -> PResult<Dim> {
        let Some(tok) = self.peek().cloned() else {
            return Err(self.error_eof("an array size"));
        };
        if tok.kind != TokenKind::Word {
            let msg = "array sizes must be declared either as a constant or as an earlier integer member";
            return Err(self.error_tok(open, msg));
        }
        self.next();
        let text = tok.text.as_str();
        if text.starts_with(|c: char| c.is_ascii_digit()) {
            return match parse_c_integer(text) {
                Some(n) if n > 0 && n <= u32::MAX as i128 => {
                    Ok(Dim::Fixed { len: n as usize, hash_text: text.to_owned(), const_name: None })
                }
                Some(n) if n <= 0 => Err(self.error_tok(&tok, "constant array size must be > 0")),
                Some(_) => Err(self.error_tok(&tok, format!("constant array size {text} is too large"))),
                None => Err(self.error_tok(&tok, format!("invalid array size '{text}'"))),
            };
        }
        if !is_identifier(text) {
            let msg = format!("invalid array size '{text}': must be a number or a name starting with [a-zA-Z_]");
            return Err(self.error_tok(&tok, msg));
        }
        if let Some(c) = st.consts.iter().find(|c| c.name == text) {
            return match c.value {
                ConstValue::Int(v) if v > 0 && v <= u32::MAX as i64 => {
                    Ok(Dim::Fixed { len: v as usize, hash_text: c.text.clone(), const_name: Some(c.name.clone()) })
                }
                // lcm-gen takes a const dimension without checking its value; a size that is not positive
                // could never be encoded, so it is an error here.
                ConstValue::Int(v) => {
                    let msg = format!("array dimension '{text}' must be from 1 to 2^32-1, but the const is {v}");
                    Err(self.error_tok(&tok, msg))
                }
                ConstValue::Float(_) => {
                    Err(self.error_tok(&tok, format!("array dimension '{text}' must be an integer type")))
                }
            };
        }
        match st.member(text) {
            None => {
                let msg = format!(
                    "unknown array size '{text}': it must be an integer const or a member declared before the array"
                );
                Err(self.error_tok(&tok, msg))
            }
            Some(m) if !m.dims.is_empty() => {
                Err(self.error_tok(&tok, format!("array dimension '{text}' must not be an array")))
            }
            Some(m) if !m.ty.primitive().is_some_and(Primitive::can_size_array) => {
                let msg =
                    format!("array dimension '{text}' must be an integer type (int8_t, int16_t, int32_t or int64_t)");
                Err(self.error_tok(&tok, msg))
            }
            Some(_) => Ok(Dim::Variable { member: text.to_owned() }),
        }
    }

    fn parse_const(&mut self, st: &mut Struct) -> PResult<()> {
        let doc = self.take_doc();
        self.next();
        let type_tok = self.expect_word("a const type")?;
        let ty = match Primitive::from_lcm_name(&type_tok.text) {
            Some(p) if p.can_be_const() => p,
            _ => {
                let msg = format!(
                    "invalid type for const: '{}' (allowed: int8_t, int16_t, int32_t, int64_t, float, double)",
                    type_tok.text
                );
                return Err(self.error_tok(&type_tok, msg));
            }
        };
        let mut first = true;
        loop {
            let name_tok = self.expect_word("a const name")?;
            self.check_new_name(st, &name_tok)?;
            self.expect("=")?;
            let value_tok = self.expect_word("a value")?;
            let value = self.const_value(ty, &value_tok)?;
            st.consts.push(Const {
                name: name_tok.text.clone(),
                ty,
                value,
                text: value_tok.text.clone(),
                doc: if first { doc.clone() } else { None },
                span: self.span_of(&name_tok),
            });
            first = false;
            match self.next() {
                Some(t) if t.is(";") => return Ok(()),
                Some(t) if t.is(",") => continue,
                Some(t) => {
                    let msg = format!("expected ';' or ',' after const '{}', found '{}'", name_tok.text, t.text);
                    return Err(self.error_tok(&t, msg));
                }
                None => return Err(self.error_eof("';'")),
            }
        }
    }

    fn const_value(&mut self, ty: Primitive, tok: &Token) -> PResult<ConstValue> {
        let text = tok.text.as_str();
        let (lo, hi): (i128, i128) = match ty {
            Primitive::Int8 => (i8::MIN.into(), i8::MAX.into()),
            Primitive::Int16 => (i16::MIN.into(), i16::MAX.into()),
            Primitive::Int32 => (i32::MIN.into(), i32::MAX.into()),
            // lcm-gen accepts int64 literals up to 0xffffffffffffffff; they wrap to negative values.
            Primitive::Int64 => (i64::MIN.into(), u64::MAX.into()),
            Primitive::Float | Primitive::Double => {
                let Some(v) = parse_c_float(text) else {
                    return Err(self.error_tok(tok, format!("expected a floating point value, found '{text}'")));
                };
                let max = if ty == Primitive::Float { f32::MAX as f64 } else { f64::MAX };
                if !v.is_finite() || v.abs() > max {
                    return Err(self.error_tok(tok, format!("floating point value out of range for {}", ty.lcm_name())));
                }
                return Ok(ConstValue::Float(v));
            }
            _ => unreachable!("const types are checked before values"),
        };
        match parse_c_integer(text) {
            None => Err(self.error_tok(tok, format!("expected an integer value, found '{text}'"))),
            Some(v) if v < lo || v > hi => {
                Err(self.error_tok(tok, format!("integer value {text} out of range for {}", ty.lcm_name())))
            }
            Some(v) => Ok(ConstValue::Int(v as i64)),
        }
    }

    fn parse_enum(&mut self) -> PResult<()> {
        let doc = self.take_doc();
        self.next();
        let name_tok = self.expect_word("an enum name")?;
        if !is_dotted_identifier(&name_tok.text) {
            let msg = format!("invalid type name '{}': must start with [a-zA-Z_]", name_tok.text);
            return Err(self.error_tok(&name_tok, msg));
        }
        self.expect("{")?;
        let mut values: Vec<EnumValue> = Vec::new();
        // lcm-gen numbers an unvalued entry as (the largest value so far, starting from 0) + 1.
        let mut max = 0i64;
        loop {
            let Some(t) = self.next() else {
                return Err(self.error_eof("'}' to close the enum"));
            };
            if t.is("}") {
                break;
            }
            if t.is(",") || t.is(";") {
                continue;
            }
            if t.kind != TokenKind::Word || !is_identifier(&t.text) {
                let msg = format!("invalid enum value name '{}'", t.text);
                return Err(self.error_tok(&t, msg));
            }
            let value = if self.at("=") {
                self.next();
                let v = self.expect_word("an enum value")?;
                match parse_c_integer(&v.text) {
                    Some(n) if n >= i32::MIN as i128 && n <= i32::MAX as i128 => n as i64,
                    _ => return Err(self.error_tok(&v, format!("enum value '{}' is not an int32 integer", v.text))),
                }
            } else {
                max + 1
            };
            if value > i32::MAX as i64 {
                return Err(self.error_tok(&t, format!("enum value {value} of '{}' overflows int32", t.text)));
            }
            if values.iter().any(|v| v.name == t.text) {
                return Err(self.error_tok(&t, format!("duplicate enum value name '{}'", t.text)));
            }
            if let Some(other) = values.iter().find(|v| v.value as i64 == value) {
                let msg = format!("enum values {} and {} have the same value {value}", other.name, t.text);
                return Err(self.error_tok(&t, msg));
            }
            max = max.max(value);
            values.push(EnumValue { name: t.text, value: value as i32 });
        }
        self.out.enums.push(Enum {
            name: self.declared_name(&name_tok.text),
            values,
            doc,
            span: self.span_of(&name_tok),
            hash: 0,
        });
        Ok(())
    }
}

/// LCM's identifier rule: the first character is an ASCII letter or `_`; the rest are word characters.
fn is_identifier(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') && !s.contains('.')
}

fn is_dotted_identifier(s: &str) -> bool {
    !s.is_empty() && s.split('.').all(is_identifier)
}

/// C's `strtoll(s, &end, 0)` with a check that the whole text was used: an optional sign, then `0x` hex,
/// leading-`0` octal or decimal.
pub(crate) fn parse_c_integer(s: &str) -> Option<i128> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        (16, h)
    } else if body.len() > 1 && body.starts_with('0') {
        (8, &body[1..])
    } else {
        (10, body)
    };
    if digits.is_empty() || digits.len() > 40 || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let v = i128::from_str_radix(digits, radix).ok()?;
    Some(if neg { -v } else { v })
}

/// C's `strtod` for the forms people write in `.lcm` files: decimal with optional fraction and exponent.
fn parse_c_float(s: &str) -> Option<f64> {
    let ok = !s.is_empty()
        && s.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
        && s.chars().any(|c| c.is_ascii_digit());
    if !ok {
        return None;
    }
    s.parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_integers() {
        assert_eq!(parse_c_integer("0x10"), Some(16));
        assert_eq!(parse_c_integer("010"), Some(8));
        assert_eq!(parse_c_integer("-5"), Some(-5));
        assert_eq!(parse_c_integer("0"), Some(0));
        assert_eq!(parse_c_integer("0xffffffffffffffff"), Some(u64::MAX as i128));
        assert_eq!(parse_c_integer("1.5"), None);
        assert_eq!(parse_c_integer("08"), None);
        assert_eq!(parse_c_integer("0x"), None);
    }

    #[test]
    fn c_floats() {
        assert_eq!(parse_c_float("1e+3"), Some(1000.0));
        assert_eq!(parse_c_float(".5"), Some(0.5));
        assert_eq!(parse_c_float("-2"), Some(-2.0));
        assert_eq!(parse_c_float("nan"), None);
        assert_eq!(parse_c_float("abc"), None);
    }
}
