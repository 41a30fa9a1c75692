//! Stored messages beyond the root's [`Message`], [`Part`] and [`Role`]:
//! the [`NewMessage`] an append carries before the store numbers it, who
//! produced a message
//! and what it is visible to ([`Producer`], [`Visibility`], [`PaiMeta`]),
//! how a run or a tool call ended ([`Outcome`], [`ToolStatus`],
//! [`ResultSource`]), and the model-facing shape derived from stored
//! messages ([`ModelMessage`], [`ModelContent`]).

pub(crate) mod types;

pub use types::{
    ModelContent, ModelMessage, NewMessage, Outcome, PaiMeta, Producer, ResultSource, ToolStatus,
    Visibility,
};

pub(crate) use types::{Message, Part, Role};
