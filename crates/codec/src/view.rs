//! Views: read single fields straight from an encoded buffer, without decoding the message.
//!
//! Generated `*View` types wrap a buffer whose fingerprint has been checked. A field whose offset is fixed (every
//! member before it has a fixed size) is read in constant time; a field after a variable-size member is found by
//! skipping over the members before it. Every read is bounds-checked and returns a [`crate::DecodeError`] rather than
//! trusting the buffer; nothing here allocates.
//!
//! # Brief overview
//!
//! A member's shape is a [`Kind`]: a primitive ([`Prim`]), a string ([`Str`]), a nested struct ([`StructKind`], whose
//! view implements [`StructView`]) or an array of some kind ([`ArrayKind`], read as an [`ArrayView`]). A kind knows
//! whether all its values have the same encoded size; when they do, an [`ArrayView`] finds element `i` by
//! multiplication (constant time), otherwise by skipping the elements before it. Generated accessors build the
//! member's kind (array lengths come from the count members, read through their own accessors) and call
//! [`Kind::read`] at the member's offset.
//!
//! Views keep the whole message buffer and an absolute position, so error offsets count from the start of the
//! message, as the decoder's do. Recursive types count their nesting depth and stop at [`crate::MAX_DEPTH`].

use std::marker::PhantomData;

use crate::error::{DecodeError, DecodeErrorKind};

fn truncated(at: usize, needed: usize, buf_len: usize) -> DecodeError {
    DecodeError { kind: DecodeErrorKind::Truncated { needed, remaining: buf_len.saturating_sub(at) }, offset: at }
}

/// Checks the front of an encoded message for a view: the fingerprint, and at least `min_body` bytes after it.
#[inline]
pub fn check_message(buf: &[u8], fingerprint: u64, min_body: usize) -> Result<(), DecodeError> {
    let Some(fp) = buf.first_chunk::<8>() else {
        return Err(truncated(0, 8, buf.len()));
    };
    let found = u64::from_be_bytes(*fp);
    if found != fingerprint {
        return Err(DecodeError {
            kind: DecodeErrorKind::WrongFingerprint { expected: fingerprint, found },
            offset: 0,
        });
    }
    check_room(buf, 8, min_body)
}

/// Checks that `n` bytes from `at` are inside `buf`.
#[inline]
pub fn check_room(buf: &[u8], at: usize, n: usize) -> Result<(), DecodeError> {
    match at.checked_add(n) {
        Some(end) if end <= buf.len() => Ok(()),
        _ => Err(truncated(at, n, buf.len())),
    }
}

/// Checks the nesting depth of a view of a recursive type.
#[inline]
pub fn check_depth(depth: u32, at: usize) -> Result<(), DecodeError> {
    if depth > crate::MAX_DEPTH {
        Err(DecodeError { kind: DecodeErrorKind::TooDeep { limit: crate::MAX_DEPTH }, offset: at })
    } else {
        Ok(())
    }
}

/// Turns a count member's value (read at `at`) into a length, rejecting negative counts.
#[inline]
pub fn count(value: i64, at: usize) -> Result<usize, DecodeError> {
    usize::try_from(value)
        .map_err(|_| DecodeError { kind: DecodeErrorKind::NegativeCount { count: value }, offset: at })
}

/// A value with a fixed encoded size that can be read from a big-endian buffer: the primitives other than string,
/// and generated (deprecated) enum types.
pub trait ViewPrim: Copy {
    /// Encoded size in bytes.
    const SIZE: usize;
    /// Reads the value at `at`, if the bytes are there.
    fn read_at(buf: &[u8], at: usize) -> Option<Self>;
}

macro_rules! view_prims {
    ($($t:ty, $n:expr, $from:expr;)*) => {$(
        impl ViewPrim for $t {
            const SIZE: usize = $n;
            #[inline(always)]
            fn read_at(buf: &[u8], at: usize) -> Option<$t> {
                buf.get(at..)?.first_chunk::<$n>().map(|b| $from(*b))
            }
        }
    )*};
}

view_prims! {
    i8, 1, i8::from_be_bytes;
    u8, 1, u8::from_be_bytes;
    i16, 2, i16::from_be_bytes;
    i32, 4, i32::from_be_bytes;
    i64, 8, i64::from_be_bytes;
    f32, 4, f32::from_be_bytes;
    f64, 8, f64::from_be_bytes;
    bool, 1, |b: [u8; 1]| b[0] != 0;
}

/// Reads one primitive at `at`.
#[inline(always)]
pub fn prim<T: ViewPrim>(buf: &[u8], at: usize) -> Result<T, DecodeError> {
    T::read_at(buf, at).ok_or_else(|| truncated(at, T::SIZE, buf.len()))
}

/// The shape of a member or array element, as a view reads it.
pub trait Kind<'a>: Copy {
    /// What reading one value gives: a number, a `&str`, a nested view or an [`ArrayView`].
    type Item;
    /// The encoded size of every value of this kind, when the declaration alone fixes it.
    fn fixed_size(&self) -> Option<usize>;
    /// The fewest bytes one value takes.
    fn min_size(&self) -> usize;
    /// Reads the value at `at` (`depth` is the nesting depth, for recursive types).
    fn read(&self, buf: &'a [u8], at: usize, depth: u32) -> Result<Self::Item, DecodeError>;
    /// The bytes the value at `at` takes, checked to be inside `buf`.
    fn size_at(&self, buf: &'a [u8], at: usize, depth: u32) -> Result<usize, DecodeError>;
}

/// A primitive (or enum) of type `T`.
pub struct Prim<T>(PhantomData<fn() -> T>);

impl<T> Prim<T> {
    /// The kind.
    #[inline(always)]
    pub const fn new() -> Prim<T> {
        Prim(PhantomData)
    }
}

impl<T> Default for Prim<T> {
    fn default() -> Self {
        Prim::new()
    }
}

impl<T> Clone for Prim<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Prim<T> {}
impl<T> std::fmt::Debug for Prim<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Prim<{}>", std::any::type_name::<T>())
    }
}

impl<'a, T: ViewPrim> Kind<'a> for Prim<T> {
    type Item = T;
    #[inline(always)]
    fn fixed_size(&self) -> Option<usize> {
        Some(T::SIZE)
    }
    #[inline(always)]
    fn min_size(&self) -> usize {
        T::SIZE
    }
    #[inline(always)]
    fn read(&self, buf: &'a [u8], at: usize, _depth: u32) -> Result<T, DecodeError> {
        prim(buf, at)
    }
    #[inline(always)]
    fn size_at(&self, buf: &'a [u8], at: usize, _depth: u32) -> Result<usize, DecodeError> {
        check_room(buf, at, T::SIZE).map(|()| T::SIZE)
    }
}

/// A string: int32 length (counting the NUL), UTF-8 bytes, NUL. Read as a checked `&str`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Str;

impl<'a> Kind<'a> for Str {
    type Item = &'a str;
    fn fixed_size(&self) -> Option<usize> {
        None
    }
    fn min_size(&self) -> usize {
        5
    }
    #[inline]
    fn read(&self, buf: &'a [u8], at: usize, _depth: u32) -> Result<&'a str, DecodeError> {
        let mut r = crate::Reader::new(buf);
        r.take(at)?;
        r.get_str()
    }
    #[inline]
    fn size_at(&self, buf: &'a [u8], at: usize, _depth: u32) -> Result<usize, DecodeError> {
        let len: i32 = prim(buf, at)?;
        if len <= 0 {
            return Err(DecodeError { kind: DecodeErrorKind::BadStringLength { length: len }, offset: at });
        }
        let size = 4 + len as usize;
        check_room(buf, at, size).map(|()| size)
    }
}

/// What generated `*View` types implement, so that they can be nested and put in arrays.
pub trait StructView<'a>: Copy + Sized {
    /// The body's encoded size, if every value has the same.
    const FIXED_SIZE: Option<usize>;
    /// The fewest bytes a body takes.
    const MIN_SIZE: usize;
    /// A view of the body at `at` (no fingerprint), after checking that [`StructView::MIN_SIZE`] bytes are there.
    fn view_at(buf: &'a [u8], at: usize, depth: u32) -> Result<Self, DecodeError>;
    /// The number of bytes the body takes (walks the variable-size members; checked).
    fn body_len(&self) -> Result<usize, DecodeError>;
}

/// A nested struct, read as its view `V`.
pub struct StructKind<V>(PhantomData<fn() -> V>);

impl<V> StructKind<V> {
    /// The kind.
    #[inline(always)]
    pub const fn new() -> StructKind<V> {
        StructKind(PhantomData)
    }
}
impl<V> Default for StructKind<V> {
    fn default() -> Self {
        StructKind::new()
    }
}
impl<V> Clone for StructKind<V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V> Copy for StructKind<V> {}
impl<V> std::fmt::Debug for StructKind<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StructKind<{}>", std::any::type_name::<V>())
    }
}

impl<'a, V: StructView<'a>> Kind<'a> for StructKind<V> {
    type Item = V;
    #[inline(always)]
    fn fixed_size(&self) -> Option<usize> {
        V::FIXED_SIZE
    }
    #[inline(always)]
    fn min_size(&self) -> usize {
        V::MIN_SIZE
    }
    #[inline(always)]
    fn read(&self, buf: &'a [u8], at: usize, depth: u32) -> Result<V, DecodeError> {
        V::view_at(buf, at, depth)
    }
    #[inline]
    fn size_at(&self, buf: &'a [u8], at: usize, depth: u32) -> Result<usize, DecodeError> {
        match V::FIXED_SIZE {
            Some(s) => check_room(buf, at, s).map(|()| s),
            None => V::view_at(buf, at, depth)?.body_len(),
        }
    }
}

/// An array of `len` values of kind `K` (a dimension of a member; `K` is itself an array for the next dimension).
#[derive(Debug, Clone, Copy)]
pub struct ArrayKind<K> {
    /// The number of elements.
    pub len: usize,
    /// The elements' kind.
    pub inner: K,
}

impl<K> ArrayKind<K> {
    /// The kind.
    #[inline(always)]
    pub const fn new(len: usize, inner: K) -> ArrayKind<K> {
        ArrayKind { len, inner }
    }
}

impl<'a, K: Kind<'a>> Kind<'a> for ArrayKind<K> {
    type Item = ArrayView<'a, K>;
    #[inline(always)]
    fn fixed_size(&self) -> Option<usize> {
        self.inner.fixed_size().and_then(|s| s.checked_mul(self.len))
    }
    #[inline(always)]
    fn min_size(&self) -> usize {
        self.inner.min_size().saturating_mul(self.len)
    }
    #[inline(always)]
    fn read(&self, buf: &'a [u8], at: usize, depth: u32) -> Result<ArrayView<'a, K>, DecodeError> {
        ArrayView::new(buf, at, self.len, self.inner, depth)
    }
    #[inline]
    fn size_at(&self, buf: &'a [u8], at: usize, depth: u32) -> Result<usize, DecodeError> {
        ArrayView::new(buf, at, self.len, self.inner, depth)?.byte_len()
    }
}

/// A view of an encoded array: `len()`, `get(i)` (constant time when elements have a fixed size) and an iterator.
#[derive(Clone, Copy)]
pub struct ArrayView<'a, K> {
    buf: &'a [u8],
    at: usize,
    len: usize,
    kind: K,
    depth: u32,
}

impl<K: std::fmt::Debug> std::fmt::Debug for ArrayView<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrayView").field("at", &self.at).field("len", &self.len).field("kind", &self.kind).finish()
    }
}

impl<'a, K: Kind<'a>> ArrayView<'a, K> {
    /// A view of `len` elements of `kind` starting at `at`. Checks that the array can be in the buffer: all of it
    /// when the elements have a fixed size, else `len` times the least size of one.
    #[inline]
    pub fn new(buf: &'a [u8], at: usize, len: usize, kind: K, depth: u32) -> Result<Self, DecodeError> {
        let need = match kind.fixed_size() {
            Some(s) => len.checked_mul(s),
            None => len.checked_mul(kind.min_size()),
        };
        match need {
            Some(0) if len > buf.len().saturating_sub(at).saturating_add(crate::ZERO_SIZE_SLACK) => {
                // Items that may encode to nothing: bounded as the decoder bounds them, so walks stay short.
                return Err(truncated(at, len, buf.len()));
            }
            Some(n) => check_room(buf, at, n)?,
            None => return Err(truncated(at, usize::MAX, buf.len())),
        }
        Ok(ArrayView { buf, at, len, kind, depth })
    }

    /// The number of elements.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The offset of the array's first byte in the message.
    pub fn offset(&self) -> usize {
        self.at
    }

    /// Element `i`: constant time for fixed-size elements, else it skips the `i` elements before it.
    #[inline]
    pub fn get(&self, i: usize) -> Result<K::Item, DecodeError> {
        if i >= self.len {
            return Err(DecodeError {
                kind: DecodeErrorKind::IndexOutOfRange { index: i, len: self.len },
                offset: self.at,
            });
        }
        let at = match self.kind.fixed_size() {
            // In range: `new` checked len * s bytes from `at`.
            Some(s) => self.at + i * s,
            None => {
                let mut at = self.at;
                for _ in 0..i {
                    at += self.kind.size_at(self.buf, at, self.depth)?;
                }
                at
            }
        };
        self.kind.read(self.buf, at, self.depth)
    }

    /// The number of bytes the whole array takes (walks variable-size elements; checked).
    pub fn byte_len(&self) -> Result<usize, DecodeError> {
        match self.kind.fixed_size() {
            Some(s) => Ok(self.len * s),
            None => {
                let mut at = self.at;
                for _ in 0..self.len {
                    at += self.kind.size_at(self.buf, at, self.depth)?;
                }
                Ok(at - self.at)
            }
        }
    }

    /// The elements in order, each a `Result`; iteration stops after the first error.
    pub fn iter(&self) -> ArrayIter<'a, K> {
        ArrayIter { view: *self, i: 0, at: self.at, failed: false }
    }
}

impl<'a, T: ViewPrim> ArrayView<'a, Prim<T>> {
    /// The encoded bytes of the elements (checked when the view was made).
    pub fn as_bytes(&self) -> &'a [u8] {
        &self.buf[self.at..self.at + self.len * T::SIZE]
    }
}

impl<'a> ArrayView<'a, Prim<u8>> {
    /// A `byte` array's contents, without copying.
    pub fn as_slice(&self) -> &'a [u8] {
        self.as_bytes()
    }
}

macro_rules! to_vec_prims {
    ($($t:ty, $read:ident;)*) => {$(
        impl<'a> ArrayView<'a, Prim<$t>> {
            /// Copies the elements out (one pass, as the decoder does).
            pub fn to_vec(&self) -> Vec<$t> {
                let mut v = vec![<$t>::default(); self.len];
                crate::fixed::$read(self.as_bytes(), &mut v);
                v
            }
        }
    )*};
}

to_vec_prims! {
    i8, read_i8s; u8, read_u8s; i16, read_i16s; i32, read_i32s; i64, read_i64s; f32, read_f32s; f64, read_f64s;
    bool, read_bools;
}

impl<'a, K: Kind<'a>> IntoIterator for ArrayView<'a, K> {
    type Item = Result<K::Item, DecodeError>;
    type IntoIter = ArrayIter<'a, K>;
    fn into_iter(self) -> ArrayIter<'a, K> {
        self.iter()
    }
}

/// The iterator of [`ArrayView::iter`].
#[derive(Clone)]
pub struct ArrayIter<'a, K> {
    view: ArrayView<'a, K>,
    i: usize,
    at: usize,
    failed: bool,
}

impl<'a, K: Kind<'a>> Iterator for ArrayIter<'a, K> {
    type Item = Result<K::Item, DecodeError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.i >= self.view.len {
            return None;
        }
        let v = &self.view;
        let step = match v.kind.fixed_size() {
            Some(s) => Ok(s),
            None => v.kind.size_at(v.buf, self.at, v.depth),
        };
        let item = step.and_then(|s| {
            let item = v.kind.read(v.buf, self.at, v.depth)?;
            self.at += s;
            Ok(item)
        });
        self.i += 1;
        if item.is_err() {
            self.failed = true;
        }
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.failed {
            (0, Some(0))
        } else {
            let n = self.view.len - self.i;
            (0, Some(n))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_arrays_index_in_constant_time_and_check_bounds() {
        let buf = [0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3];
        let a = ArrayView::new(&buf, 0, 3, Prim::<i32>::new(), 0).unwrap();
        assert_eq!(a.get(2).unwrap(), 3);
        assert!(matches!(a.get(3).unwrap_err().kind, DecodeErrorKind::IndexOutOfRange { index: 3, len: 3 }));
        assert_eq!(a.to_vec(), vec![1, 2, 3]);
        assert!(ArrayView::new(&buf, 4, 3, Prim::<i32>::new(), 0).is_err());
        assert!(ArrayView::new(&buf, 0, usize::MAX, Prim::<i32>::new(), 0).is_err());
    }

    #[test]
    fn string_arrays_walk() {
        let buf = [0, 0, 0, 2, b'a', 0, 0, 0, 0, 1, 0, 0, 0, 0, 3, b'x', b'y', 0];
        let a = ArrayView::new(&buf, 0, 3, Str, 0).unwrap();
        assert_eq!(a.get(2).unwrap(), "xy");
        assert_eq!(a.iter().collect::<Result<Vec<_>, _>>().unwrap(), vec!["a", "", "xy"]);
        assert_eq!(a.byte_len().unwrap(), buf.len());
        let bad = ArrayView::new(&buf[..16], 0, 3, Str, 0).unwrap();
        assert!(bad.get(2).is_err());
        let items: Vec<_> = bad.iter().collect();
        assert_eq!(items.len(), 3);
        assert!(items[2].is_err());
    }

    #[test]
    fn nested_arrays() {
        // 2 x 2 int16
        let buf = [0, 1, 0, 2, 0, 3, 0, 4];
        let k = ArrayKind::new(2, ArrayKind::new(2, Prim::<i16>::new()));
        assert_eq!(k.fixed_size(), Some(8));
        let a = k.read(&buf, 0, 0).unwrap();
        assert_eq!(a.get(1).unwrap().get(0).unwrap(), 3);
    }

    #[test]
    fn message_check() {
        let mut buf = vec![0u8; 8];
        buf[7] = 5;
        assert!(check_message(&buf, 5, 0).is_ok());
        assert!(check_message(&buf, 5, 1).is_err());
        assert!(matches!(check_message(&buf, 6, 0).unwrap_err().kind, DecodeErrorKind::WrongFingerprint { .. }));
        assert!(check_message(&buf[..7], 5, 0).is_err());
    }
}
