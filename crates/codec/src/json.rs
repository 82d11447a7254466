//! [`WriteJson`]: values and views as JSON, for tools, tests and debugging.
//!
//! The shape follows Nerve's interop harness protocol: a struct is an object with its members in declaration order,
//! arrays are arrays, `byte` and integers are numbers, booleans `true`/`false`, strings JSON strings, and floats
//! numbers in the shortest form that reads back to the same value (exponent notation), or the strings `"NaN"`,
//! `"Infinity"` and `"-Infinity"`.

use std::fmt::Write as _;

use crate::error::DecodeError;
use crate::view::{ArrayView, Kind};

/// Writes a value (or a view, reading its fields) as JSON. Values never fail; views fail when the buffer does.
pub trait WriteJson {
    /// Appends the JSON text to `out`.
    fn write_json(&self, out: &mut String) -> Result<(), DecodeError>;

    /// The JSON text as a new string.
    fn to_json(&self) -> Result<String, DecodeError> {
        let mut s = String::new();
        self.write_json(&mut s)?;
        Ok(s)
    }
}

macro_rules! ints {
    ($($t:ty),*) => {$(
        impl WriteJson for $t {
            fn write_json(&self, out: &mut String) -> Result<(), DecodeError> {
                let _ = write!(out, "{self}");
                Ok(())
            }
        }
    )*};
}
ints!(i8, u8, i16, i32, i64, u64);

macro_rules! floats {
    ($($t:ty),*) => {$(
        impl WriteJson for $t {
            fn write_json(&self, out: &mut String) -> Result<(), DecodeError> {
                if self.is_nan() {
                    out.push_str("\"NaN\"");
                } else if self.is_infinite() {
                    out.push_str(if *self > 0.0 { "\"Infinity\"" } else { "\"-Infinity\"" });
                } else {
                    let _ = write!(out, "{self:e}");
                }
                Ok(())
            }
        }
    )*};
}
floats!(f32, f64);

impl WriteJson for bool {
    fn write_json(&self, out: &mut String) -> Result<(), DecodeError> {
        out.push_str(if *self { "true" } else { "false" });
        Ok(())
    }
}

/// Appends `s` as a JSON string literal.
pub fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // Control characters, and the ones some readers take for line ends (Python's `splitlines`), escaped.
            c if (c as u32) < 0x20 || ('\u{7f}'..='\u{9f}').contains(&c) || c == '\u{2028}' || c == '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl WriteJson for str {
    fn write_json(&self, out: &mut String) -> Result<(), DecodeError> {
        write_str(self, out);
        Ok(())
    }
}

impl WriteJson for String {
    fn write_json(&self, out: &mut String) -> Result<(), DecodeError> {
        write_str(self, out);
        Ok(())
    }
}

impl WriteJson for crate::Str {
    fn write_json(&self, out: &mut String) -> Result<(), DecodeError> {
        write_str(self, out);
        Ok(())
    }
}

impl<T: WriteJson + ?Sized> WriteJson for &T {
    fn write_json(&self, out: &mut String) -> Result<(), DecodeError> {
        (**self).write_json(out)
    }
}

fn write_seq<T: WriteJson>(items: impl IntoIterator<Item = T>, out: &mut String) -> Result<(), DecodeError> {
    out.push('[');
    for (i, v) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        v.write_json(out)?;
    }
    out.push(']');
    Ok(())
}

impl<T: WriteJson> WriteJson for [T] {
    fn write_json(&self, out: &mut String) -> Result<(), DecodeError> {
        write_seq(self, out)
    }
}

impl<T: WriteJson> WriteJson for Vec<T> {
    fn write_json(&self, out: &mut String) -> Result<(), DecodeError> {
        write_seq(self, out)
    }
}

impl<T: WriteJson, const N: usize> WriteJson for [T; N] {
    fn write_json(&self, out: &mut String) -> Result<(), DecodeError> {
        write_seq(self, out)
    }
}

impl<'a, K: Kind<'a>> WriteJson for ArrayView<'a, K>
where
    K::Item: WriteJson,
{
    fn write_json(&self, out: &mut String) -> Result<(), DecodeError> {
        out.push('[');
        for (i, v) in self.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            v?.write_json(out)?;
        }
        out.push(']');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(f32::NAN.to_json().unwrap(), "\"NaN\"");
        assert_eq!(f64::NEG_INFINITY.to_json().unwrap(), "\"-Infinity\"");
        assert_eq!(0.1f32.to_json().unwrap(), "1e-1");
        assert_eq!(1e300f64.to_json().unwrap(), "1e300");
        assert_eq!("a\"\u{1}é".to_json().unwrap(), "\"a\\\"\\u0001é\"");
        assert_eq!("\u{85}\u{2028}".to_json().unwrap(), "\"\\u0085\\u2028\"");
        assert_eq!([crate::Str::new("a\"b"), "".into()].to_json().unwrap(), "[\"a\\\"b\",\"\"]");
        assert_eq!(vec![[1u8, 2], [3, 4]].to_json().unwrap(), "[[1,2],[3,4]]");
    }
}
