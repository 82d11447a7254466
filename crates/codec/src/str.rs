//! [`Str`]: the immutable small string that generated Rust uses for LCM `string` members.
//!
//! Text of up to [`Str::INLINE_CAP`] bytes is stored in the value itself, longer text in one heap allocation, and the
//! whole value is as big as a `String` (24 bytes on 64-bit targets). Decoding a message whose strings are short
//! (ids, names, frame labels: nearly all of them) therefore allocates nothing per string, where a `String` member
//! costs a `malloc` and a `free` each; that per-string allocation was what made decoding string-heavy messages such
//! as `path_t` slower than LCM's C.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::convert::Infallible;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::str::FromStr;

/// An immutable UTF-8 string that keeps short text inline: no allocation for up to [`Str::INLINE_CAP`] bytes.
///
/// It derefs to `str`, so everything `&str` offers works on it, and it compares, orders and hashes exactly as the
/// `str` it holds (a `HashMap<Str, _>` can be looked up with a `&str`). Build one with `.into()` or [`Str::new`],
/// read it with `&*s` or [`Str::as_str`]:
///
/// ```
/// use nerve_codec::Str;
///
/// let mut id: Str = "waypoint-1".into();
/// assert_eq!(id, "waypoint-1");
/// assert_eq!(id.len(), 10);
/// id = Str::from(format!("waypoint-{}", 2));
/// let text: &str = &id;
/// assert_eq!(text, "waypoint-2");
/// ```
///
/// To change the text, assign a new `Str` (or use [`Str::assign`], which reuses the memory held).
#[derive(Clone)]
pub struct Str(Repr);

/// Invariant: the bytes (`buf[..len]`, or the whole heap slice) are always a copy of the bytes of one `&str`, so
/// they are valid UTF-8, and `len <= INLINE_CAP`. Every constructor and [`Str::assign`] copies from a `&str`, and
/// nothing else writes them ([`Str::new_at_front`] copies more than the `&str`, from memory it has checked starts
/// with it; the bytes past `len` are never read). The heap side is `Box<[u8]>` rather than `Box<str>` so that
/// [`Str::assign`] can copy new text of the same length into it without a second `unsafe` block (or a second UTF-8
/// check).
///
/// Layout: the inline length is a `u16`-sized enum of the 23 valid lengths, so the values it cannot take mark the
/// heap variant (no separate tag byte), and the 24 bytes split into pieces of 2, 22 (and 8, 16 for the heap side).
/// With a `u8` tag and a `u8` length in front, the compiler moved a decoded `Str` as a byte plus a 7-byte piece
/// copied by two overlapping 4-byte moves, whose read-back missed store forwarding: decoding path_t, where each
/// waypoint's `Result` comes back from a call through memory, was much slower.
#[derive(Clone)]
enum Repr {
    Inline { buf: [u8; Str::INLINE_CAP], len: Len },
    Heap(Box<[u8]>),
}

/// The inline lengths, 0 to [`Str::INLINE_CAP`] (see [`Repr`]'s layout), and each one by its value.
macro_rules! lengths {
    ($($v:ident = $n:literal),*) => {
        #[derive(Clone, Copy)]
        #[repr(u16)]
        enum Len { $($v = $n),* }
        const LENS: [Len; Str::INLINE_CAP + 1] = [$(Len::$v),*];
    };
}
lengths!(
    L0 = 0,
    L1 = 1,
    L2 = 2,
    L3 = 3,
    L4 = 4,
    L5 = 5,
    L6 = 6,
    L7 = 7,
    L8 = 8,
    L9 = 9,
    L10 = 10,
    L11 = 11,
    L12 = 12,
    L13 = 13,
    L14 = 14,
    L15 = 15,
    L16 = 16,
    L17 = 17,
    L18 = 18,
    L19 = 19,
    L20 = 20,
    L21 = 21,
    L22 = 22
);

impl Str {
    /// The longest text, in bytes, stored without an allocation (the rest of the 24 bytes of a `String`, less the
    /// enum's tag and the length byte).
    pub const INLINE_CAP: usize = 22;

    /// The empty string (also [`Str::default`]), usable in `const` contexts.
    pub const EMPTY: Str = Str(Repr::Inline { len: Len::L0, buf: [0; Str::INLINE_CAP] });

    /// A copy of `s`: inline if it fits in [`Str::INLINE_CAP`] bytes, otherwise in one allocation of exactly its
    /// length.
    #[inline]
    pub fn new(s: &str) -> Str {
        Str(Repr::of(s))
    }

    /// The text.
    #[inline]
    pub fn as_str(&self) -> &str {
        let bytes: &[u8] = match &self.0 {
            Repr::Inline { len, buf } => &buf[..*len as usize],
            Repr::Heap(b) => b,
        };
        // SAFETY: the bytes are always a copy of a whole `&str` (the invariant on `Repr`), hence valid UTF-8.
        #[allow(unsafe_code)]
        unsafe {
            std::str::from_utf8_unchecked(bytes)
        }
    }

    /// Whether the text is stored on the heap (it is longer than [`Str::INLINE_CAP`] bytes).
    #[inline]
    pub fn is_heap(&self) -> bool {
        matches!(self.0, Repr::Heap(_))
    }

    /// Replaces the text with a copy of `s`, reusing the memory held: nothing is allocated when `s` fits inline, or
    /// when it is as long as the heap text it replaces (a heap allocation cannot grow, so other lengths get a new
    /// one). This is how [`crate::Message::decode_into`] fills a string member.
    #[inline]
    pub fn assign(&mut self, s: &str) {
        let new = s.as_bytes();
        match &mut self.0 {
            // Written in place, not as a new value moved over the old one: the move would read back bytes that
            // `copy_from_slice` has just stored piecemeal (a store-forwarding stall per string), and check for a heap
            // allocation to drop.
            Repr::Inline { len, buf } if new.len() <= Str::INLINE_CAP => {
                buf[..new.len()].copy_from_slice(new);
                *len = LENS[new.len()];
            }
            Repr::Heap(b) if b.len() == new.len() => b.copy_from_slice(new),
            r => *r = Repr::of(s),
        }
    }

    /// [`Str::new`] for `s` lying at the front of `window` (the rest of the buffer it was read from, as a decoder
    /// has): short text is copied as the whole fixed-size front of `window` (the bytes after `s` come along and are
    /// never read). path_t decodes faster this way than through [`Str::new`], whose copy of exactly
    /// `s.len()` bytes is a `memcpy` call storing piecemeal into a value that is then moved whole. Falls back to
    /// [`Str::new`] when `s` is long, `window` is shorter than [`Str::INLINE_CAP`] bytes, or does not start where `s`
    /// does.
    #[inline]
    pub(crate) fn new_at_front(s: &str, window: &[u8]) -> Str {
        match Str::front(s, window) {
            Some(front) => Str(Repr::Inline { len: LENS[s.len()], buf: *front }),
            None => Str::new(s),
        }
    }

    /// [`Str::assign`] for `s` lying at the front of `window`, as [`Str::new_at_front`] is to [`Str::new`]: short
    /// text over inline text is copied as the whole fixed-size front of `window`, where `assign`'s copy of exactly
    /// `s.len()` bytes is a `memcpy` call per string. Falls back to `assign` otherwise.
    #[inline(always)]
    pub(crate) fn assign_at_front(&mut self, s: &str, window: &[u8]) {
        match (&mut self.0, Str::front(s, window)) {
            (Repr::Inline { len, buf }, Some(front)) => {
                *buf = *front;
                *len = LENS[s.len()];
            }
            _ => self.assign_out_of_line(s),
        }
    }

    /// [`Str::assign`] as a call: the rare case of [`Str::assign_at_front`] kept out of the decoders it is inlined
    /// into, so that they stay small enough to be inlined into their callers in turn (a struct's `decode_body_into`
    /// into its array loop).
    #[inline(never)]
    fn assign_out_of_line(&mut self, s: &str) {
        self.assign(s);
    }

    /// The first [`Str::INLINE_CAP`] bytes of `window`, if `s` fits in them and is what they start with (the same
    /// memory, so `front[..s.len()]` are `s`'s bytes).
    #[inline]
    fn front<'w>(s: &str, window: &'w [u8]) -> Option<&'w [u8; Str::INLINE_CAP]> {
        let front = window.first_chunk::<{ Str::INLINE_CAP }>()?;
        (s.len() <= Str::INLINE_CAP && std::ptr::eq(front.as_ptr(), s.as_ptr())).then_some(front)
    }
}

impl Repr {
    #[inline]
    fn of(s: &str) -> Repr {
        let b = s.as_bytes();
        if b.len() <= Str::INLINE_CAP {
            let mut buf = [0u8; Str::INLINE_CAP];
            buf[..b.len()].copy_from_slice(b);
            Repr::Inline { len: LENS[b.len()], buf }
        } else {
            Repr::Heap(Box::from(b))
        }
    }
}

impl Default for Str {
    #[inline]
    fn default() -> Str {
        Str::EMPTY
    }
}

impl Deref for Str {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Str {
    #[inline]
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<[u8]> for Str {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        self.as_str().as_bytes()
    }
}

impl Borrow<str> for Str {
    #[inline]
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl fmt::Debug for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for Str {
    #[inline]
    fn eq(&self, other: &Str) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Str {}

impl PartialOrd for Str {
    #[inline]
    fn partial_cmp(&self, other: &Str) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Str {
    #[inline]
    fn cmp(&self, other: &Str) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for Str {
    /// Hashes as the `str` does, as `Borrow<str>` requires.
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

/// `Str == str`-like comparisons both ways, for each of `str`, `&str` and `String`.
macro_rules! eq_text {
    ($($t:ty),*) => {$(
        impl PartialEq<$t> for Str {
            #[inline]
            fn eq(&self, other: &$t) -> bool {
                self.as_str() == &other[..]
            }
        }
        impl PartialEq<Str> for $t {
            #[inline]
            fn eq(&self, other: &Str) -> bool {
                &self[..] == other.as_str()
            }
        }
    )*};
}
eq_text!(str, &str, String);

impl From<&str> for Str {
    #[inline]
    fn from(s: &str) -> Str {
        Str::new(s)
    }
}

impl From<&String> for Str {
    #[inline]
    fn from(s: &String) -> Str {
        Str::new(s)
    }
}

impl From<String> for Str {
    /// Copies the text (inline when short; a long `String`'s buffer is not kept, as it may have spare capacity).
    #[inline]
    fn from(s: String) -> Str {
        Str::new(&s)
    }
}

impl From<Str> for String {
    #[inline]
    fn from(s: Str) -> String {
        String::from(s.as_str())
    }
}

impl From<&Str> for String {
    #[inline]
    fn from(s: &Str) -> String {
        String::from(s.as_str())
    }
}

impl FromStr for Str {
    type Err = Infallible;
    #[inline]
    fn from_str(s: &str) -> Result<Str, Infallible> {
        Ok(Str::new(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;
    use std::collections::{BTreeSet, HashMap};

    const LONG: &str = "a text longer than twenty-two bytes";

    fn hash_of<T: Hash + ?Sized>(v: &T) -> u64 {
        let mut h = DefaultHasher::new();
        v.hash(&mut h);
        h.finish()
    }

    #[test]
    fn is_as_big_as_a_string() {
        assert_eq!(std::mem::size_of::<Str>(), std::mem::size_of::<String>());
        assert_eq!(std::mem::size_of::<Option<Str>>(), std::mem::size_of::<String>());
    }

    #[test]
    fn short_text_is_inline_and_long_text_on_the_heap() {
        // Every length around the boundary, ASCII and multi-byte (`é` is 2 bytes, `€` 3): the bytes read back intact
        // through the one unsafe block (run under Miri by scripts/test).
        for n in 0..=30 {
            let ascii = "x".repeat(n);
            let s = Str::new(&ascii);
            assert_eq!(s.as_str(), ascii);
            assert_eq!(s.is_heap(), n > Str::INLINE_CAP);
        }
        for text in ["h\u{e9}\u{20ac}", "\u{20ac}\u{20ac}\u{20ac}\u{20ac}\u{20ac}\u{20ac}\u{20ac}x", LONG, ""] {
            let s = Str::from(text);
            assert_eq!(&*s, text);
            assert_eq!(s.len(), text.len());
            assert_eq!(s.chars().count(), text.chars().count());
            assert_eq!(s.is_heap(), text.len() > Str::INLINE_CAP);
        }
        assert!(Str::default().is_empty());
        assert_eq!(Str::EMPTY, "");
    }

    #[test]
    fn new_at_front_copies_only_its_own_text() {
        let buf = b"waypoint 7\0\x01\x02 and the rest of the message";
        let text = std::str::from_utf8(&buf[..10]).unwrap();
        // The fast path: the window starts at the text and holds a whole inline buffer.
        let s = Str::new_at_front(text, buf);
        assert_eq!((s.as_str(), s.is_heap()), ("waypoint 7", false));
        // Fallbacks, each still a copy of exactly the text: a window too short, one elsewhere (with other bytes,
        // which a wrong fast path would copy), and text too long to be inline.
        assert_eq!(Str::new_at_front(text, &buf[..21]), "waypoint 7");
        assert_eq!(Str::new_at_front(text, &[b'x'; 40]), "waypoint 7");
        assert_eq!(Str::new_at_front(text, &buf[1..]), "waypoint 7");
        let long = std::str::from_utf8(&buf[..30]).unwrap();
        assert_eq!(Str::new_at_front(long, buf), long);
        assert!(Str::new_at_front(long, buf).is_heap());
        let multi = "\u{e9}\u{20ac}";
        assert_eq!(Str::new_at_front(multi, [multi.as_bytes(), &[0xff; 30]].concat().as_slice()), multi);
    }

    #[test]
    fn assign_at_front_copies_only_its_own_text() {
        let buf = b"waypoint 7\0\x01\x02 and the rest of the message";
        let text = std::str::from_utf8(&buf[..10]).unwrap();
        let mut s = Str::new("held before");
        s.assign_at_front(text, buf);
        assert_eq!((s.as_str(), s.is_heap()), ("waypoint 7", false));
        // The fallbacks of new_at_front, and text over a heap value (assign's rules: reused at the same length).
        for window in [&buf[..21], &[b'x'; 40][..], &buf[1..]] {
            let mut s = Str::new("held before");
            s.assign_at_front(text, window);
            assert_eq!(s, "waypoint 7");
        }
        let mut s = Str::new(LONG);
        s.assign_at_front(text, buf);
        assert_eq!((s.as_str(), s.is_heap()), ("waypoint 7", false));
        let long = std::str::from_utf8(&buf[..30]).unwrap();
        let mut s = Str::new("short");
        s.assign_at_front(long, buf);
        assert_eq!((s.as_str(), s.is_heap()), (long, true));
    }

    #[test]
    fn assign_reuses_what_it_can() {
        let mut s = Str::new("short");
        s.assign("other text");
        assert_eq!(s, "other text");
        assert!(!s.is_heap());

        s.assign(LONG);
        assert_eq!(s, LONG);
        let before = s.as_ptr();
        // Same length on the heap: copied into the allocation held.
        let same_len = LONG.to_uppercase();
        s.assign(&same_len);
        assert_eq!(s, same_len.as_str());
        assert_eq!(s.as_ptr(), before);
        // Another length: a new allocation, or inline again.
        s.assign("a longer text than the one before it was");
        assert_eq!(s, "a longer text than the one before it was");
        s.assign("\u{e9}");
        assert_eq!(s, "\u{e9}");
        assert!(!s.is_heap());
        s.assign("");
        assert!(s.is_empty());
    }

    #[test]
    fn compares_orders_and_hashes_as_str() {
        let (a, b, l) = (Str::new("abc"), Str::new("abd"), Str::new(LONG));
        assert_eq!(a.cmp(&b), "abc".cmp("abd"));
        assert_eq!(a.partial_cmp(&l), "abc".partial_cmp(LONG));
        assert_eq!(l.cmp(&b), LONG.cmp("abd"));
        assert_eq!(hash_of(&a), hash_of("abc"));
        assert_eq!(hash_of(&l), hash_of(LONG));

        // Each comparison with text, both ways round.
        let (text, owned): (&str, String) = ("abc", "abc".into());
        assert!(a == text);
        assert!(text == a);
        assert!(a == *text);
        assert!(*text == a);
        assert!(a == owned);
        assert!(owned == a);
        assert!(a != b);
        assert_eq!(l, Str::from(LONG.to_owned()));

        let mut m: HashMap<Str, i32> = HashMap::new();
        m.insert("abc".into(), 1);
        m.insert(LONG.into(), 2);
        assert_eq!(m.get("abc"), Some(&1));
        assert_eq!(m.get(LONG), Some(&2));
        let set: BTreeSet<Str> = ["b", "a", LONG].into_iter().map(Str::from).collect();
        assert_eq!(set.iter().map(Str::as_str).collect::<Vec<_>>(), ["a", LONG, "b"]);
    }

    #[test]
    fn converts_and_formats_like_str() {
        let s: Str = "tab\there".parse().unwrap();
        assert_eq!(format!("{s}"), "tab\there");
        assert_eq!(format!("{s:?}"), format!("{:?}", "tab\there"));
        assert_eq!(format!("{s:>9}|"), format!("{:>9}|", "tab\there"));
        assert_eq!(String::from(s.clone()), "tab\there");
        assert_eq!(String::from(Str::new(LONG)), LONG);
        assert_eq!(String::from(&s), "tab\there");
        let as_ref: &str = s.as_ref();
        let bytes: &[u8] = s.as_ref();
        assert_eq!((as_ref, bytes), ("tab\there", "tab\there".as_bytes()));
        let borrowed: &str = s.borrow();
        assert_eq!(borrowed, "tab\there");
        let l = Str::new(LONG);
        assert_eq!(l.clone(), l);
    }
}
