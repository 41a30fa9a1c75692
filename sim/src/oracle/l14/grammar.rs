//! The phase grammar's moves (SPEC §1): which event may follow which
//! state, in a step, among a step's results, between episodes, after a
//! takeover and in `cancel_close`, with the states it moves between and
//! the result events it tells apart (a leaf: `l14.rs` walks runs with it).

use pai_runtime::event::{EventKind, Transition};
use pai_runtime::store::RunStatus;

/// Where a run is in the phase grammar of SPEC §1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum State {
    #[default]
    Start,
    Admitted,
    Leased,
    /// After prepare_run (or a resumed run's results): a step may begin.
    Ready,
    Responded,
    Resolved,
    Prepared,
    Called,
    AttemptFailed,
    Streamed,
    Committed,
    Policy,
    /// After `awaiting`: the step's client and approval calls are
    /// answerable while its backend tools run (T9).
    Awaited,
    Tools,
    ToolsCommitted,
    /// The run stopped inside its tools: pending calls get cancelled results.
    Stopping,
    Stopped,
    /// After after_step; `waits` when its transition was `wait`.
    Stepped {
        waits: bool,
    },
    /// After after_step: pending calls that will never be answered get
    /// cancelled results (A3), or the run was cancelled as it would wait.
    GivingUp,
    GaveUp,
    /// A resumed episode's prepare_run: the waiting calls' results follow.
    Resuming,
    ResumeTools,
    /// A resumed episode that responds or was cancelled: the waiting calls
    /// get cancelled results before anything else.
    Dropping,
    Dropped,
    /// SPEC §1 `cancel_close`: a cancelled waiting (or taken-over, K3)
    /// run closed its open calls and is cancelled; only the release
    /// follows, then the end: no other phase, no other episode.
    Closed,
    Closing,
    Failed,
    Released,
    /// The run waits for a client: its episode ended with `wait`.
    Waiting,
    /// The driver lost the run's lease (K3): the episode is over here.
    Lost,
    /// Another worker took the run over (K3): a resumed episode follows.
    TakenOver,
    /// A takeover settles the last committed step before anything else
    /// (K3): the policy for its calls without a committed result and no
    /// decision recorded (`TakerPolicy`), those made answerable
    /// (`TakerAwaited`), the calls' results (`TakerTools`, `TakerResults`:
    /// rerun calls, K5, and calls whose committed answer resolves them,
    /// T9), then its `after_step` asked again (`Settled`) and pending calls
    /// given up (`SettleGivingUp`, `SettledGaveUp`).
    TakerPolicy,
    TakerAwaited,
    TakerTools,
    TakerResults,
    Settled(Goes),
    SettleGivingUp(Goes),
    SettledGaveUp(Goes),
    Ended,
    /// A violation was reported; later events of the run are not checked.
    Broken,
}

/// Where a step's transition takes the run: it waits, goes on, or ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Goes {
    Wait,
    On,
    End,
}

impl Goes {
    fn of(transition: &Transition) -> Goes {
        match transition {
            Transition::Wait => Goes::Wait,
            Transition::NextStep | Transition::Steer => Goes::On,
            Transition::Complete { .. }
            | Transition::Aborted { .. }
            | Transition::Refused { .. } => Goes::End,
        }
    }
}

/// A result event: a tool started or ended, or `after_tool_result` ran.
fn result_event(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::ToolStart { .. } | EventKind::ToolEnd { .. } | EventKind::AfterToolResult { .. }
    )
}

/// A result event for a call that never runs: a cancelled (or denied, or
/// submitted) result, or `after_tool_result` over it.
fn given_result(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::ToolEnd { .. } | EventKind::AfterToolResult { .. }
    )
}

/// The grammar as a transition table: the state after `kind`, or `None` if
/// the grammar does not allow `kind` here. `resumed`: the episode resumes
/// a run that waited.
pub(super) fn next(state: State, resumed: bool, kind: &EventKind) -> Option<State> {
    use State::*;
    let in_episode = !matches!(
        state,
        Start
            | Admitted
            | Released
            | Closing
            | Ended
            | Failed
            | Waiting
            | Broken
            | Lost
            | TakenOver
    );
    if let Some(closing) = cancel_close(state, resumed, kind) {
        return closing;
    }
    if in_episode && matches!(kind, EventKind::Failed { .. } | EventKind::Cancelled { .. }) {
        return Some(Failed);
    }
    in_step(state, kind)
        .or_else(|| in_results(state, resumed, kind))
        .or_else(|| between_episodes(state, resumed, kind))
}

/// SPEC §1 `cancel_close := lease_acquired after_tool_result*
/// commit_tool_results lease_released`, only after a wait (or, K3, a
/// takeover): a resumed episode that gives its open calls cancelled
/// results (`Dropping`, `Dropped`) is cancelled then and runs no other
/// phase; with no open call it is cancelled at once. `None`: the event is
/// not this production's business.
fn cancel_close(state: State, resumed: bool, kind: &EventKind) -> Option<Option<State>> {
    use State::*;
    let cancelled = matches!(kind, EventKind::Cancelled { .. });
    Some(match (state, kind) {
        (Dropped | Leased, _) if cancelled && (state == Dropped || resumed) => Some(Closed),
        // After the closing commit only `cancelled` (or, for a resumed
        // run that responds, `respond`) may come.
        (Dropped, EventKind::Failed { .. }) => None,
        (Closed, EventKind::LeaseReleased { .. }) => Some(Closing),
        (Closed, _) => None,
        (Closing, EventKind::Ended { .. }) => Some(Ended),
        (Closing, _) => None,
        _ => return None,
    })
}

/// What a takeover's episode does before (or instead of) a resumed
/// one's `prepare_run` (K3): it settles the last committed step (the calls
/// without a committed result, the step's `after_step` asked again unless
/// the store recorded its transition, pending calls given up), then ends,
/// waits, or goes on with `prepare_run` (or a response) and its steps. A
/// last step that waited and was resumed since goes on as a resumed
/// episode (`prepare_run`, the answered calls' results); one whose
/// response is committed just ends. `None`: not a takeover's move.
pub(super) fn after_takeover(state: State, kind: &EventKind) -> Option<State> {
    use State::*;
    let on = |s: State| {
        matches!(
            s,
            Settled(Goes::On) | SettledGaveUp(Goes::On) | TakerResults
        )
    };
    Some(match (state, kind) {
        (Leased | TakerPolicy, EventKind::BeforeToolCall { .. }) => TakerPolicy,
        (TakerPolicy, EventKind::Awaiting { .. }) => TakerAwaited,
        (Leased | TakerPolicy | TakerAwaited | TakerTools, k) if result_event(k) => TakerTools,
        (TakerTools, EventKind::CommitToolResults { .. }) => TakerResults,
        (
            Leased | TakerPolicy | TakerAwaited | TakerResults,
            EventKind::AfterStep { transition, .. },
        ) => Settled(Goes::of(transition)),
        (Settled(Goes::Wait), EventKind::Waiting { .. }) => Waiting,
        (Settled(goes) | SettleGivingUp(goes), k) if given_result(k) => SettleGivingUp(goes),
        (SettleGivingUp(goes), EventKind::CommitToolResults { .. }) => SettledGaveUp(goes),
        (s, EventKind::PrepareRun { .. }) if on(s) => Ready,
        (s, EventKind::Respond { .. }) if on(s) => Responded,
        (Leased, EventKind::Respond { .. }) => Responded,
        (
            Leased | Settled(Goes::End) | SettledGaveUp(Goes::End),
            EventKind::LeaseReleased { .. },
        ) => Released,
        // A cancelled run taken over: its open calls closed, it is cancelled.
        (TakerResults, EventKind::Cancelled { .. }) => Closed,
        // A resumed episode's prepare_run; nothing to resolve: a step, or
        // the step limit.
        (Resuming, EventKind::ResolveModelContext { .. }) => Resolved,
        (Resuming, EventKind::LeaseReleased { .. }) => Released,
        _ => return None,
    })
}

/// A step's own events, up to its after_step.
fn in_step(state: State, kind: &EventKind) -> Option<State> {
    use State::*;
    Some(match (state, kind) {
        (Ready | Stepped { waits: false }, EventKind::ResolveModelContext { .. }) => Resolved,
        (Resolved, EventKind::PrepareModelStep { .. }) => Prepared,
        (Prepared | Called | AttemptFailed, EventKind::ModelCall { .. }) => Called,
        (Called, EventKind::AttemptFailed { .. }) => AttemptFailed,
        (Called, EventKind::Stream { .. }) => Streamed,
        (Streamed, EventKind::CommitStep { .. }) => Committed,
        (Committed | Policy, EventKind::BeforeToolCall { .. }) => Policy,
        (Policy, EventKind::Awaiting { .. }) => Awaited,
        (Policy | Awaited | Tools, k) if result_event(k) => Tools,
        (Tools, EventKind::CommitToolResults { .. }) => ToolsCommitted,
        (ToolsCommitted | Stopping, k) if given_result(k) => Stopping,
        (Stopping, EventKind::CommitToolResults { .. }) => Stopped,
        // Policy, Awaited: every call of the step waits, so no result came.
        (
            Committed | Policy | Awaited | ToolsCommitted,
            EventKind::AfterStep { transition, .. },
        ) => Stepped {
            waits: *transition == Transition::Wait,
        },
        _ => return None,
    })
}

/// Results given outside a step's tools block: to pending calls after
/// after_step, and to a resumed run's waiting calls.
fn in_results(state: State, resumed: bool, kind: &EventKind) -> Option<State> {
    use State::*;
    Some(match (state, kind) {
        (Stepped { .. } | GivingUp, k) if given_result(k) => GivingUp,
        (GivingUp, EventKind::CommitToolResults { .. }) => GaveUp,
        (Resuming | ResumeTools, k) if result_event(k) => ResumeTools,
        (ResumeTools, EventKind::CommitToolResults { .. }) => Ready,
        (Leased | Dropping, k) if resumed && given_result(k) => Dropping,
        (Dropping, EventKind::CommitToolResults { .. }) => Dropped,
        _ => return None,
    })
}

/// Episode boundaries: leases, prepare_run, respond, wait, answers, the end.
fn between_episodes(state: State, resumed: bool, kind: &EventKind) -> Option<State> {
    use State::*;
    Some(match (state, kind) {
        (Start, EventKind::Admitted { .. }) => Admitted,
        (Admitted | Released | Waiting | TakenOver, EventKind::LeaseAcquired { .. }) => Leased,
        (Leased, EventKind::PrepareRun { .. }) if resumed => Resuming,
        (Leased, EventKind::PrepareRun { .. }) => Ready,
        (Leased, EventKind::Respond { .. }) if !resumed => Responded,
        (Dropped, EventKind::Respond { .. }) => Responded,
        (Stepped { waits: true }, EventKind::Waiting { .. }) => Waiting,
        // Among workers: a wait whose answer never came back (the worker
        // gave the lease up) may still land while nobody took the run over.
        (Lost, EventKind::Waiting { .. }) => Waiting,
        (
            Ready | Stepped { waits: false } | GaveUp | Responded | Failed,
            EventKind::LeaseReleased { .. },
        ) => Released,
        (Released, EventKind::Ended { .. }) => Ended,
        // A run cancelled while queued ends without an episode (K6).
        (
            Admitted,
            EventKind::Ended {
                status: RunStatus::Cancelled,
                ..
            },
        ) => Ended,
        _ => return None,
    })
}
