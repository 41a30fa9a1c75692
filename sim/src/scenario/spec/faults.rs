//! Planted faults as written (SPEC D5).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::hooks::MessageSpec;
use pai_runtime::event::EventName;

/// A fault. Most are planted (SPEC D5): a lie told to the oracles about one
/// run, so a scenario can prove an oracle fires; they change only what the
/// oracles (and the transcript) read, never the runtime. Events are named
/// by kind and counted from 1 in log order (`nth`), so a fault means the
/// same under every seed. With `[[workers]]`, faults also happen to the
/// system at virtual times (`crash`, `partition`, `hold`, `pause`), and two
/// plant a bug in the store (`accept_stale`, `refuse_takeover`,
/// `cancel_on_takeover`); without
/// workers, `ignore_expectations` plants one in the one-process store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[schemars(transform = crate::schema::checks::by_kind)]
pub enum FaultSpec {
    /// Remove the `nth` event of this kind.
    Drop {
        /// The kind of event.
        event: EventName,
        /// Which one, counted from 1 in log order.
        #[serde(default = "crate::defaults::first")]
        #[schemars(range(min = 1))]
        nth: usize,
    },
    /// Swap the `nth` event of this kind with the event before it.
    SwapWithPrevious {
        /// The kind of event.
        event: EventName,
        /// Which one, counted from 1 in log order.
        #[serde(default = "crate::defaults::first")]
        #[schemars(range(min = 1))]
        nth: usize,
    },
    /// Repeat the `nth` event of this kind right after itself.
    Duplicate {
        /// The kind of event.
        event: EventName,
        /// Which one, counted from 1 in log order.
        #[serde(default = "crate::defaults::first")]
        #[schemars(range(min = 1))]
        nth: usize,
    },
    /// Swap the places of the `a`-th and `b`-th events of this kind.
    Swap {
        /// The kind of event.
        event: EventName,
        /// One event, counted from 1 in log order.
        #[schemars(range(min = 1))]
        a: usize,
        /// The other, not `a` (checked by the loader).
        #[schemars(range(min = 1))]
        b: usize,
    },
    /// Swap what the `a`-th and `b`-th events of this kind say, leaving their
    /// places, times and runs.
    SwapPayloads {
        /// The kind of event.
        event: EventName,
        /// One event, counted from 1 in log order.
        #[schemars(range(min = 1))]
        a: usize,
        /// The other, not `a` (checked by the loader).
        #[schemars(range(min = 1))]
        b: usize,
    },
    /// Change a stored message: its first text part (`text`), the order of
    /// its parts (`reverse_parts`), or its very existence (`delete`).
    #[schemars(transform = crate::schema::checks::edit_message)]
    EditMessage {
        /// The message's thread.
        #[serde(default = "crate::defaults::default_thread")]
        thread: String,
        /// The message's sequence number in its thread, from 1.
        #[schemars(range(min = 1))]
        seq: u64,
        /// Replace its first text part with this.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// Reverse the order of its parts.
        #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
        #[schemars(extend("default" = false))]
        reverse_parts: bool,
        /// Delete it.
        #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
        #[schemars(extend("default" = false))]
        delete: bool,
    },
    /// Change what the `call`-th model call was sent: add a message at the
    /// end, or remove its `drop_message`-th message (from 1).
    #[schemars(transform = crate::schema::checks::edit_request)]
    EditRequest {
        /// The model call, counted from 1.
        #[schemars(range(min = 1))]
        call: usize,
        /// A message to add at the end.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        append: Option<MessageSpec>,
        /// The message to remove, from 1.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(range(min = 1))]
        drop_message: Option<usize>,
    },
    /// Remove the `nth` live event a watcher received.
    DropLive {
        /// The watcher, by its `watch` name.
        watcher: String,
        /// Which live event, from 1.
        #[serde(default = "crate::defaults::first")]
        #[schemars(range(min = 1))]
        nth: usize,
    },
    /// Add a message past every anchor to the `nth` history read, as if
    /// the read had gone past its step's anchor.
    GrowRead {
        /// Which history read, from 1.
        #[serde(default = "crate::defaults::first")]
        #[schemars(range(min = 1))]
        nth: usize,
    },
    /// Make the `nth` history read also return the first message its thread
    /// holds at the end (numbered within the read's anchor), as if the read
    /// were not fenced to the incarnation its run was bound to and that
    /// incarnation had numbered its messages afresh (SPEC M3, H5).
    UnfencedRead {
        /// Which history read, from 1.
        #[serde(default = "crate::defaults::first")]
        #[schemars(range(min = 1))]
        nth: usize,
    },
    /// Change a stored tool result: the `nth` tool result (from 1, in the
    /// thread's order) of `thread`, its `source` and/or its `output`.
    #[schemars(transform = crate::schema::checks::edit_result)]
    EditResult {
        /// The result's thread.
        #[serde(default = "crate::defaults::default_thread")]
        thread: String,
        /// Which tool result of the thread, from 1.
        #[serde(default = "crate::defaults::first")]
        #[schemars(range(min = 1))]
        nth: usize,
        /// Where the result now says it came from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<pai_runtime::message::ResultSource>,
        /// The output it now holds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<serde_json::Value>,
    },
    /// Tell the oracles the runtime swallowed an `after_step` hook's error:
    /// the `nth` `failed` event of phase `after_step` becomes that step's
    /// `after_step` (decision natural, the run completes), and its run's
    /// `end` and stored record say completed (SPEC L4 forbids it).
    SwallowAfterStepError {
        /// Which `failed` event in `after_step`, from 1.
        #[serde(default = "crate::defaults::first")]
        #[schemars(range(min = 1))]
        nth: usize,
    },
    /// Remove the `drop_message`-th message (from 1) from what the `call`-th
    /// request to the compaction summary model (from 1) was sent, as if
    /// the summary had left that message out (SPEC C1).
    EditSummaryRequest {
        /// The summary model's request, counted from 1.
        #[schemars(range(min = 1))]
        call: usize,
        /// The message to remove, from 1.
        #[schemars(range(min = 1))]
        drop_message: usize,
    },
    /// Crash a worker at `at_ms` or at a store request (`at`): everything
    /// it holds is lost; start it afresh `restart_after_ms` later (never,
    /// when left out).
    #[schemars(transform = crate::schema::checks::placed)]
    Crash {
        /// The worker.
        worker: String,
        /// When (virtual ms); or give `at`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_ms: Option<u64>,
        /// At which store request; or give `at_ms`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<RequestAt>,
        /// How long it stays down.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(range(min = 1))]
        restart_after_ms: Option<u64>,
    },
    /// Cut a worker off from the store (messages between them are lost)
    /// at `at_ms` or at a store request (`at`), and heal the link
    /// `heal_after_ms` later.
    #[schemars(transform = crate::schema::checks::placed)]
    Partition {
        /// The worker.
        worker: String,
        /// When (virtual ms); or give `at`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_ms: Option<u64>,
        /// At which store request; or give `at_ms`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<RequestAt>,
        /// How long the link stays cut.
        #[schemars(range(min = 1))]
        heal_after_ms: u64,
    },
    /// Hold the messages between a worker and the store at `at_ms` or at
    /// a store request (`at`), and deliver them all `release_after_ms` later.
    #[schemars(transform = crate::schema::checks::placed)]
    Hold {
        /// The worker.
        worker: String,
        /// When (virtual ms); or give `at`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_ms: Option<u64>,
        /// At which store request; or give `at_ms`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<RequestAt>,
        /// How long messages are held.
        #[schemars(range(min = 1))]
        release_after_ms: u64,
    },
    /// Pause a worker at `at_ms` (or at a store request, `at`) for
    /// `for_ms` (a GC pause, a slow disk):
    /// nothing it sends arrives, and nothing reaches it, until the pause
    /// ends; then everything held is delivered late (turmoil has no host
    /// pause, so this is a hold of all of the worker's links).
    #[schemars(transform = crate::schema::checks::placed)]
    Pause {
        /// The worker.
        worker: String,
        /// When (virtual ms); or give `at`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_ms: Option<u64>,
        /// At which store request; or give `at_ms`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<RequestAt>,
        /// How long.
        #[schemars(range(min = 1))]
        for_ms: u64,
    },
    /// A planted store bug: run writes land whatever their lease token
    /// (SPEC K2 forbids it).
    AcceptStale,
    /// A planted store bug: the store never lets a worker take over a run
    /// whose lease expired (SPEC K3 needs it).
    RefuseTakeover,
    /// A planted store bug: a claim that takes a run over from a holder
    /// whose lease expired tells the taker the run was cancelled, though
    /// no client cancelled it (SPEC K3: the taker continues from the last
    /// committed step). Only a takeover meets it, so only a run with
    /// runtime faults ends otherwise than its fault-free twin.
    CancelOnTakeover,
    /// A planted store bug (one process only): the store commits every
    /// mutation and regeneration as if it expected nothing (SPEC H3 forbids it).
    IgnoreExpectations,
    /// Tell the oracles that the owner's client read the thread with its
    /// private metadata merged into the metadata (SPEC H4 forbids it).
    LeakPrivate {
        /// The thread.
        #[serde(default = "crate::defaults::default_thread")]
        thread: String,
    },
}

impl FaultSpec {
    /// Whether the fault acts on the system of workers (and so needs
    /// `[[workers]]`) rather than on what the oracles read.
    pub fn is_cluster(&self) -> bool {
        matches!(
            self,
            FaultSpec::Crash { .. }
                | FaultSpec::Partition { .. }
                | FaultSpec::Hold { .. }
                | FaultSpec::Pause { .. }
                | FaultSpec::AcceptStale
                | FaultSpec::RefuseTakeover
                | FaultSpec::CancelOnTakeover
        )
    }
}

/// A fault placed at a store request rather than at a time: the `nth`
/// request of kind `request` that the store receives from `worker`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestAt {
    /// Whose request triggers the fault (the fault's own worker when left
    /// out); it may be another worker's (partition w2 when w1 claims).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub worker: Option<String>,
    /// The request's kind, in snake_case (`claim`, `renew`, `wait`, ...).
    #[schemars(extend("enum" = pai_runtime::store::StoreRequest::KINDS))]
    pub request: String,
    /// Which request of that kind from that worker, counted from 1.
    #[serde(default = "crate::defaults::first")]
    #[schemars(range(min = 1))]
    pub nth: usize,
    /// The store drops the request unapplied and unanswered (the link was
    /// cut just before it arrived); otherwise it lands and the fault
    /// happens right after, its answer in flight.
    #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
    #[schemars(extend("default" = false))]
    pub lost: bool,
}
