//! Fixtures the store-check tests share.

use pai_runtime::message::{PaiMeta, Producer, Visibility};
use pai_runtime::{Message, Part, Role};

/// A new message (the store gives it its seq) of `role` whose text is its
/// id, written for `run` if given.
pub fn message(id: &str, role: Role, run: Option<&str>) -> Message {
    Message {
        id: id.into(),
        seq: 0,
        role,
        parts: vec![Part::text(id)],
        visibility: Visibility::ALL,
        pai: PaiMeta::new(Producer::User, run, None, 0),
    }
}
