//! The text of one stream delta. A model streams text a token or a few at a
//! time, so a delta is short: up to 24 bytes it is kept inline, in the
//! stream part itself, and creating, passing on and dropping it never
//! touches the heap; longer text lives on the heap as a `String` would.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;

use compact_str::CompactString;

/// The text of a [`StreamPart::TextDelta`](crate::StreamPart): a string,
/// inline when short. It derefs to `str`; build one with `.into()` from a
/// `&str` or a `String`.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Delta(CompactString);

impl Delta {
    /// An empty delta.
    pub const fn new() -> Delta {
        Delta(CompactString::const_new(""))
    }

    /// The text, as a `&str` (the same as dereferencing).
    #[inline]
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// Appends text (inline while the whole stays short).
    #[inline]
    pub fn push_str(&mut self, s: &str) {
        self.0.push_str(s);
    }

    /// Empties the delta, keeping a heap buffer if it has one.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// Whether the text lives on the heap (it was too long to keep inline).
    #[inline]
    pub(crate) fn is_heap(&self) -> bool {
        self.0.is_heap_allocated()
    }

    /// The text as a `String` (a copy only when it was inline).
    #[inline]
    pub fn into_string(self) -> String {
        self.0.into_string()
    }
}

impl Deref for Delta {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        self.0.as_str()
    }
}

impl AsRef<str> for Delta {
    #[inline]
    fn as_ref(&self) -> &str {
        self.0.as_str()
    }
}

impl Borrow<str> for Delta {
    #[inline]
    fn borrow(&self) -> &str {
        self.0.as_str()
    }
}

impl From<&str> for Delta {
    #[inline]
    fn from(s: &str) -> Delta {
        Delta(CompactString::new(s))
    }
}

impl From<String> for Delta {
    #[inline]
    fn from(s: String) -> Delta {
        Delta(CompactString::from(s))
    }
}

impl From<&String> for Delta {
    fn from(s: &String) -> Delta {
        Delta(CompactString::new(s))
    }
}

impl From<Delta> for String {
    fn from(d: Delta) -> String {
        d.into_string()
    }
}

impl PartialEq<str> for Delta {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Delta {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Delta {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl fmt::Debug for Delta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Delta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Write for Delta {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push_str(s);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_deltas_read_back_as_given() {
        for s in ["", "sk-", "exactly twenty-four byte", &"x".repeat(100)] {
            let d = Delta::from(s);
            assert_eq!(d, s);
            assert_eq!(d.len(), s.len());
            assert_eq!(d.clone().into_string(), s);
            assert_eq!(format!("{d}"), s);
            assert_eq!(format!("{d:?}"), format!("{s:?}"));
        }
        let mut d = Delta::new();
        d.push_str("grows ");
        d.push_str(&"past the inline size ".repeat(3));
        assert!(d.starts_with("grows past"));
        d.clear();
        assert!(d.is_empty());
    }

    #[test]
    fn a_long_delta_keeps_its_string_buffer() {
        let s = "a text too long to keep inline, on the heap".to_string();
        let ptr = s.as_ptr();
        let d = Delta::from(s);
        assert!(d.is_heap());
        let back = d.into_string();
        assert_eq!(back.as_ptr(), ptr, "not copied");
        assert!(!Delta::from("short").is_heap());
    }
}
