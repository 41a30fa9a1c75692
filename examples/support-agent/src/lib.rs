//! A customer-support agent's own lifecycle hooks, written against
//! `pai-runtime` and generic over the runtime's context, so the same hook
//! runs in production and under the simulator (`tests/` registers each
//! with a `pai_sim::Harness`; README.md is the tutorial).
//!
//! - [`PiiRedactor`]: a stream transform that redacts account numbers and
//!   other personal data from the model's text, whatever the chunking.
//! - [`RefundPolicy`]: a `prepare_run` guardrail that answers large refund
//!   requests itself (a person must handle them) without a model call.
//! - [`RefundLimit`]: a `before_tool_call` check that rejects a `refund`
//!   call over the limit, whatever the model was told.
//! - [`RefundTool`]: the refund tool, whose refunds over a limit wait for
//!   a person's approval, decided per call on the amount (SPEC T7).
//! - [`KnowledgeBase`]: a `resolve_model_context` resolver that puts the
//!   help-centre articles the customer's words name before the context.
//! - [`LedgerKeeper`]: a hook written for the agent's own context
//!   ([`SupportContext`]) and typed run metadata ([`RefundLedger`]): it
//!   keeps the run's refunds, and refuses one past the desk's cap.
#![warn(missing_docs)]

mod knowledge;
mod ledger;
mod pii;
mod refund;
mod refund_tool;

pub use knowledge::KnowledgeBase;
pub use ledger::{Keeper, LedgerKeeper, RefundLedger, SupportContext};
pub use pii::{PiiPattern, PiiRedactor};
pub use refund::{RefundLimit, RefundPolicy, amount_in};
pub use refund_tool::{RefundInput, RefundTool};
