//! Fixtures the store-check tests share.

use pai_runtime::message::{NewMessage, PaiMeta, Producer, Visibility};
use pai_runtime::{Part, Role};

/// A new message (the store gives it its seq) of `role` whose text is its
/// id, written for `run` if given.
pub fn message(id: &str, role: Role, run: Option<&str>) -> NewMessage {
    NewMessage {
        id: id.into(),
        role,
        parts: vec![Part::text(id)],
        visibility: Visibility::ALL,
        pai: PaiMeta::new(Producer::User, run, None, 0),
    }
}
