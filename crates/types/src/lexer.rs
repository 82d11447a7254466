//! The tokenizer: turns `.lcm` text into tokens the way lcm-gen 1.5.3 does, minus the quirks that only reject
//! sensible input.
//!
//! Like lcm-gen, a word runs until whitespace, a single-character token or an operator character, so `.` and `-`
//! sit inside words (`a.b.c`, `-2`, `1.5e-3`). Unlike lcm-gen, `{` and `}` are tokens of their own (lcm-gen needs
//! spaces around braces), `1e+3` is one number, and `//` starts a comment even right after a word. None of these
//! change a fingerprint or an encoding: lcm-gen rejects every input where they differ.

/// What kind of token it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// A name, keyword or number.
    Word,
    /// One of `( ) ; " , : ' [ ] { }`.
    Punct,
    /// A run of `! ~ < > = & | ^ % * +`.
    Operator,
    /// A `//` or `/* */` comment; the text has the markers and leading decoration removed.
    Comment,
}

/// One token with its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// Its kind.
    pub kind: TokenKind,
    /// Its text (for a comment, the comment's content).
    pub text: String,
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1, in characters.
    pub col: u32,
}

impl Token {
    /// Whether this is the punctuation or operator `s`.
    pub fn is(&self, s: &str) -> bool {
        matches!(self.kind, TokenKind::Punct | TokenKind::Operator) && self.text == s
    }

    /// Whether this is the word `s`.
    pub fn is_word(&self, s: &str) -> bool {
        self.kind == TokenKind::Word && self.text == s
    }
}

/// A lexing problem: an unterminated block comment is the only one (every other character forms some token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexError {
    /// Line of the start of the problem.
    pub line: u32,
    /// Column of the start of the problem.
    pub col: u32,
    /// What is wrong.
    pub message: String,
}

const PUNCT: &[char] = &['(', ')', ';', '"', ',', ':', '\'', '[', ']', '{', '}'];
const OPERATOR: &[char] = &['!', '~', '<', '>', '=', '&', '|', '^', '%', '*', '+'];

fn is_punct(c: char) -> bool {
    PUNCT.contains(&c)
}

fn is_operator(c: char) -> bool {
    OPERATOR.contains(&c)
}

struct Cursor<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    line: u32,
    col: u32,
}

impl Cursor<'_> {
    fn peek(&mut self) -> Option<char> {
        self.chars.peek().copied()
    }

    fn peek2(&self) -> Option<char> {
        let mut it = self.chars.clone();
        it.next();
        it.next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.next()?;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }
}

/// Splits `text` into tokens. Comments are kept as tokens so the parser can attach them as documentation.
pub fn tokenize(text: &str) -> Result<Vec<Token>, LexError> {
    let mut cur = Cursor { chars: text.chars().peekable(), line: 1, col: 1 };
    let mut tokens = Vec::new();
    while let Some(c) = cur.peek() {
        let (line, col) = (cur.line, cur.col);
        if c.is_whitespace() {
            cur.bump();
        } else if c == '/' && cur.peek2() == Some('/') {
            let mut body = String::new();
            while let Some(c) = cur.peek() {
                if c == '\n' {
                    break;
                }
                body.push(c);
                cur.bump();
            }
            tokens.push(Token { kind: TokenKind::Comment, text: clean_line_comment(&body), line, col });
        } else if c == '/' && cur.peek2() == Some('*') {
            cur.bump();
            cur.bump();
            let mut body = String::new();
            loop {
                match cur.bump() {
                    None => {
                        return Err(LexError { line, col, message: "unterminated block comment".into() });
                    }
                    Some('*') if cur.peek() == Some('/') => {
                        cur.bump();
                        break;
                    }
                    Some(c) => body.push(c),
                }
            }
            tokens.push(Token { kind: TokenKind::Comment, text: clean_block_comment(&body), line, col });
        } else if is_punct(c) {
            cur.bump();
            tokens.push(Token { kind: TokenKind::Punct, text: c.to_string(), line, col });
        } else if is_operator(c) {
            let mut run = String::new();
            while let Some(c) = cur.peek().filter(|&c| is_operator(c)) {
                run.push(c);
                cur.bump();
            }
            tokens.push(Token { kind: TokenKind::Operator, text: run, line, col });
        } else {
            let mut word = String::new();
            while let Some(c) = cur.peek() {
                let exponent_sign = c == '+' && looks_like_exponent(&word);
                if c.is_whitespace() || is_punct(c) || (is_operator(c) && !exponent_sign) {
                    break;
                }
                if c == '/' && matches!(cur.peek2(), Some('/') | Some('*')) {
                    break;
                }
                word.push(c);
                cur.bump();
            }
            tokens.push(Token { kind: TokenKind::Word, text: word, line, col });
        }
    }
    Ok(tokens)
}

/// Whether `word` so far is a number ending in an exponent marker, so a following `+` belongs to it (`1e+3`).
fn looks_like_exponent(word: &str) -> bool {
    let digits = word.trim_start_matches('-');
    (digits.ends_with('e') || digits.ends_with('E'))
        && digits.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && !digits.starts_with("0x")
        && !digits.starts_with("0X")
}

/// `/// text` -> `text`: leading slashes and blanks go, as in lcm-gen.
fn clean_line_comment(body: &str) -> String {
    body.trim_start_matches('/').trim().to_owned()
}

/// Each line of a block comment loses its leading blanks and `*`s, as in lcm-gen.
fn clean_block_comment(body: &str) -> String {
    let lines: Vec<&str> = body.lines().map(|l| l.trim_start().trim_start_matches('*').trim()).collect::<Vec<_>>();
    let first = lines.iter().position(|l| !l.is_empty());
    let last = lines.iter().rposition(|l| !l.is_empty());
    match (first, last) {
        (Some(a), Some(b)) => lines[a..=b].join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(src: &str) -> Vec<String> {
        tokenize(src).unwrap().into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn braces_need_no_spaces() {
        assert_eq!(texts("struct a_t{int32_t x;}"), ["struct", "a_t", "{", "int32_t", "x", ";", "}"]);
    }

    #[test]
    fn words_keep_dots_and_minus() {
        assert_eq!(texts("a.b.c_t x[-1] = 1.5e-3"), ["a.b.c_t", "x", "[", "-1", "]", "=", "1.5e-3"]);
    }

    #[test]
    fn exponent_plus_stays_in_the_number() {
        assert_eq!(texts("X=1e+3;"), ["X", "=", "1e+3", ";"]);
        assert_eq!(texts("a+b"), ["a", "+", "b"]);
    }

    #[test]
    fn operators_run_together() {
        assert_eq!(texts("a==b"), ["a", "==", "b"]);
    }

    #[test]
    fn comments_are_tokens_with_clean_text() {
        let toks = tokenize("/// doc\nx; /* a\n * b\n */ y // tail").unwrap();
        let comments: Vec<_> = toks.iter().filter(|t| t.kind == TokenKind::Comment).map(|t| &t.text).collect();
        assert_eq!(comments, ["doc", "a\nb", "tail"]);
    }

    #[test]
    fn positions_are_one_based() {
        let toks = tokenize("a\n  bc").unwrap();
        assert_eq!((toks[1].line, toks[1].col), (2, 3));
    }

    #[test]
    fn unterminated_comment_is_an_error() {
        assert_eq!(tokenize("x /* y").unwrap_err().col, 3);
    }
}
