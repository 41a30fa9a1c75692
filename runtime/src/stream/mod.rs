//! Stream transforms (SPEC S1, S2, S4, L7): the stages between a provider's
//! stream and what is stored or shown ([`StreamTransform`]), what a stage
//! emits into ([`Emit`]) and how it aborts a step ([`Abort`]), and the text
//! of one delta ([`Delta`]). Ready-made text stages are in [`crate::text`].

mod emit;
mod transform;

pub use crate::delta::Delta;
pub use emit::{Abort, Emit};
pub use transform::StreamTransform;

pub(crate) use emit::Sink;
pub(crate) use transform::{Assembler, NoAbort, Pipeline, transform_parts};
