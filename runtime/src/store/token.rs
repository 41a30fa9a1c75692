//! The lease's fencing token (SPEC K2): a number that only grows. Each
//! claim or new episode takes the next one; a write under any other than
//! the newest is refused. Serialized as the bare number.

use std::fmt;

/// A lease's fencing token (SPEC K2). Serialized, stored and shown as the
/// plain number; a new lease takes [`next`](FencingToken::next).
#[derive(
    Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct FencingToken(u64);

impl FencingToken {
    /// The token with this number (as stored, or as a store reported it).
    pub const fn new(token: u64) -> FencingToken {
        FencingToken(token)
    }

    /// The token after this one: tokens only grow (K2).
    #[must_use]
    pub const fn next(self) -> FencingToken {
        FencingToken(self.0 + 1)
    }

    /// The number, as stored.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl From<u64> for FencingToken {
    fn from(token: u64) -> FencingToken {
        FencingToken(token)
    }
}

/// Shown as the bare number, as before tokens had a type of their own.
impl fmt::Debug for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// The schema of the number itself: a token is a bare `u64` on the wire.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for FencingToken {
    fn inline_schema() -> bool {
        <u64 as schemars::JsonSchema>::inline_schema()
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        <u64 as schemars::JsonSchema>::schema_name()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        <u64 as schemars::JsonSchema>::schema_id()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <u64 as schemars::JsonSchema>::json_schema(g)
    }
}
