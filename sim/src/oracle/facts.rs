//! Facts several oracles derive from the log the same way: stored messages
//! by id, step anchors, and the hook notes of each phase invocation.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{
    Event, Message,
    event::{EventKind, RunStage},
    hook::{HookNote, Phase},
    message::{ModelContent, ModelMessage},
    store::StoredThread,
};

use crate::hooks::HookSpec;
use crate::scenario::Scenario;

/// Stored messages by (thread, message id).
pub(super) fn stored(threads: &[StoredThread]) -> BTreeMap<(&str, &str), &Message> {
    threads
        .iter()
        .flat_map(|t| {
            t.messages
                .iter()
                .map(move |m| ((t.id.as_str(), m.id.as_str()), m))
        })
        .collect()
}

/// The anchor of every step: (run, step) → the newest sequence number it may see.
pub(super) fn anchors(events: &[Event]) -> BTreeMap<(&str, u32), u64> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ResolveModelContext { step, anchor, .. } => {
                Some(((e.run_id.as_str(), *step), *anchor))
            }
            _ => None,
        })
        .collect()
}

/// One invocation of a sequential phase: the hook notes a composition
/// reported, in order, and the event that ended it (the phase's own event,
/// or `failed`/`cancelled`).
#[derive(Debug)]
pub(super) struct Invocation<'a> {
    pub(super) phase: Phase,
    pub(super) notes: Vec<&'a HookNote>,
    pub(super) end: &'a Event,
}

/// Whether a phase's hooks are asked one after another (not an onion).
fn sequential(p: Phase) -> bool {
    !matches!(
        p,
        Phase::ResolveModelContext | Phase::AroundModelCall | Phase::TransformStepStream
    )
}

/// The sequential phase an event closes: its own event, or a failure or
/// cancellation inside it.
fn closes(kind: &EventKind) -> Option<Phase> {
    Some(match kind {
        EventKind::PrepareRun { .. } | EventKind::Respond { .. } => Phase::PrepareRun,
        EventKind::PrepareModelStep { .. } => Phase::PrepareModelStep,
        EventKind::BeforeToolCall { .. } => Phase::BeforeToolCall,
        EventKind::AfterToolResult { .. } => Phase::AfterToolResult,
        EventKind::AfterStep { .. } => Phase::AfterStep,
        EventKind::Failed {
            phase: RunStage::Phase(p),
            ..
        }
        | EventKind::Cancelled {
            phase: RunStage::Phase(p),
        } if sequential(*p) => *p,
        _ => return None,
    })
}

/// Every invocation of a sequential phase (the onions' notes nest and are
/// left out), per run: the notes of that phase since the run's previous
/// event, closed by the phase's event or a failure inside it. Tool results
/// given between a resumed episode's `prepare_run` hooks and its respond
/// (the waiting calls given up, T7) leave that phase's notes open, and so
/// does a client's answer recorded meanwhile.
pub(super) fn invocations(events: &[Event]) -> Vec<Invocation<'_>> {
    let mut open: BTreeMap<(&str, Phase), Vec<&HookNote>> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        let run = e.run_id.as_str();
        match &e.kind {
            EventKind::Hook(n) if sequential(n.phase) => {
                open.entry((run, n.phase)).or_default().push(n);
            }
            // A client's answer may land while the run's hooks decide
            // (an answerable call, T9): it belongs to no phase.
            kind if beside_phases(kind) || matches!(kind, EventKind::Answered { .. }) => {}
            kind => {
                if let Some(phase) = closes(kind) {
                    out.push(Invocation {
                        phase,
                        notes: open.remove(&(run, phase)).unwrap_or_default(),
                        end: e,
                    });
                }
                if !tool_result_event(kind) {
                    open.retain(|(r, _), _| *r != run);
                }
            }
        }
    }
    out
}

/// An event of a tools block or of a results block.
fn tool_result_event(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::ToolStart { .. }
            | EventKind::ToolEnd { .. }
            | EventKind::AfterToolResult { .. }
            | EventKind::CommitToolResults { .. }
    )
}

/// Events that may come between a phase's events without being part of
/// the phase grammar: hook notes, resolver leaves, steers stored for the
/// run, and what hooks and `on_output` handlers wrote through the run's
/// facade (run metadata, hidden context messages, mutations, refused ones,
/// the visibility rewrites a run's own mutation makes and their delivery to
/// `history_rewritten` hooks, and compaction's progress inside
/// `resolve_model_context`).
pub(super) fn beside_phases(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Hook(_)
            | EventKind::ContextLeaf { .. }
            | EventKind::Steered { .. }
            | EventKind::OnOutput { .. }
            | EventKind::RunMetadata { .. }
            | EventKind::ContextMessage { .. }
            | EventKind::LeaseRenewed { .. }
            | EventKind::DeleteLearned { .. }
            | EventKind::CancelLearned { .. }
            | EventKind::CancelRequested { .. }
            | EventKind::Awaiting { .. }
            | EventKind::Mutated { .. }
            | EventKind::MutationRefused { .. }
            | EventKind::HistoryRewritten { .. }
            | EventKind::RewriteDelivered { .. }
            | EventKind::CompactionStarted { .. }
            | EventKind::Compacted { .. }
            | EventKind::CompactionSkipped { .. }
    )
}

/// The message an event says was committed, if it committed one.
pub(super) fn committed_message(kind: &EventKind) -> Option<&str> {
    match kind {
        EventKind::Admitted { trigger: m }
        | EventKind::Steered { message: m }
        | EventKind::Respond { message: m, .. }
        | EventKind::CommitStep { message: m, .. }
        | EventKind::CommitToolResults { message: m, .. }
        | EventKind::ContextMessage { message: m, .. } => Some(m),
        _ => None,
    }
}

/// Every message an event says was committed: [`committed_message`], and
/// the messages a mutation appended (SPEC H2).
pub(super) fn committed_messages(kind: &EventKind) -> Vec<&str> {
    match kind {
        EventKind::Mutated { appended, .. } => appended.iter().map(|s| s.as_str()).collect(),
        kind => committed_message(kind).into_iter().collect(),
    }
}

/// The thread version a run's own commit reports: messages, run metadata
/// (a hook's or an `on_output` handler's), hidden context messages. User
/// messages are commits too, but their events carry no version.
pub(super) fn run_commit_version(kind: &EventKind) -> Option<u64> {
    match kind {
        EventKind::Respond { version, .. }
        | EventKind::CommitStep { version, .. }
        | EventKind::CommitToolResults { version, .. }
        | EventKind::ContextMessage { version, .. } => Some(*version),
        // A write staged with tool results commits with them (K5).
        EventKind::RunMetadata { version } => *version,
        _ => None,
    }
}

/// The names of the scenario's hooks that handle `phase`, in composition order.
pub(super) fn handlers(s: &Scenario, phase: Phase) -> Vec<&str> {
    s.hooks
        .iter()
        .filter(|h| h.handles(phase))
        .map(|h| h.name.as_str())
        .collect()
}

/// The phases in which a hook shapes what a model call is sent.
pub(super) const CONTEXT_PHASES: [Phase; 4] = [
    Phase::PrepareRun,
    Phase::PrepareModelStep,
    Phase::ResolveModelContext,
    Phase::AroundModelCall,
];

/// Whether a registered hook (a harness user's, whose decisions no oracle
/// foresees) handles one of `phases`.
pub(super) fn registered_in(s: &Scenario, phases: &[Phase]) -> bool {
    s.hooks
        .iter()
        .any(|h| h.is_user() && phases.iter().any(|p| h.handles(*p)))
}

/// Texts a scenario's hooks write into model context themselves (a base,
/// a replacement, a system message): application messages, not stored ones,
/// so the oracles that match texts to stored messages leave them aside.
/// `None` when a registered hook shapes the context: any text a request
/// carries may then be that hook's, and matching texts judges nothing.
pub(super) fn hook_written(s: &Scenario) -> Option<Vec<&str>> {
    if registered_in(s, &CONTEXT_PHASES) {
        return None;
    }
    let mut out = Vec::new();
    for h in &s.hooks {
        match h.library() {
            Some(HookSpec::BaseContext(b)) => {
                out.extend(b.messages.iter().map(|m| m.text.as_str()))
            }
            Some(HookSpec::ReplaceMessages(r)) => {
                out.extend(r.messages.iter().map(|m| m.text.as_str()))
            }
            _ => {}
        }
    }
    Some(out)
}

/// Whether a hook chooses its own context (a window, a base, a replacement,
/// compaction's summary): then what a step sends is the hook's choice, not
/// the stored history.
pub(super) fn reshapes_context(s: &Scenario) -> bool {
    let compaction =
        |h: &crate::scenario::HookDef| matches!(h.library(), Some(HookSpec::Compaction(_)));
    reshaped(s) || s.hooks.iter().any(compaction)
}

/// A hash map for lookups on an oracle's hot path (a request's texts, a
/// message's id): SipHash with fixed keys, so nothing depends on the
/// process's random state. Never iterated for output: anything an oracle
/// reports is read in an order of its own (ids, positions).
pub(super) type LookupMap<K, V> =
    std::collections::HashMap<K, V, std::hash::BuildHasherDefault<std::hash::DefaultHasher>>;

/// A model message's text contents, joined.
/// [`model_text`], borrowed when the message has one text part (the
/// common case: no copy per message per request).
pub(super) fn model_text_ref(m: &ModelMessage) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    let mut texts = m.content.iter().filter_map(|c| match c {
        ModelContent::Text { text } => Some(text.as_str()),
        _ => None,
    });
    match (texts.next(), texts.next()) {
        (None, _) => Cow::Borrowed(""),
        (Some(one), None) => Cow::Borrowed(one),
        (Some(_), Some(_)) => Cow::Owned(model_text(m)),
    }
}

pub(super) fn model_text(m: &ModelMessage) -> String {
    m.content
        .iter()
        .filter_map(|c| match c {
            ModelContent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// An event of run `r` on thread `t` at time 0, for oracle unit tests.
#[cfg(test)]
pub(super) fn ev(kind: EventKind) -> Event {
    Event {
        at: 0,
        thread_id: "t".into(),
        run_id: "r".into(),
        worker: None,
        kind,
    }
}

/// A mutation at thread `version` that changes message `id`'s context
/// visibility from `before` to `after`, for tests.
#[cfg(test)]
pub(super) fn visibility_change(id: &str, version: u64, before: bool, after: bool) -> Event {
    use pai_runtime::{message::Visibility, store::VisibilityChange};
    let vis = |context| Visibility {
        transcript: true,
        context,
    };
    ev(EventKind::Mutated {
        version,
        appended: Vec::new(),
        metadata: Vec::new(),
        private: Vec::new(),
        visibility: vec![VisibilityChange {
            message: id.into(),
            before: vis(before),
            after: vis(after),
        }],
    })
}

/// A stored user message `id` at seq 1 with text "x", context-visible or
/// not, for tests.
#[cfg(test)]
pub(super) fn user_message(id: &str, context: bool) -> pai_runtime::Message {
    use pai_runtime::{
        Part, Role,
        message::{PaiMeta, Producer, Visibility},
    };
    pai_runtime::Message {
        id: id.into(),
        seq: 1,
        role: Role::User,
        parts: vec![Part::text("x")],
        visibility: Visibility {
            transcript: true,
            context,
        },
        pai: PaiMeta::new(Producer::User, None, None, 0),
    }
}

/// A stored thread holding `messages`, for tests.
#[cfg(test)]
pub(super) fn thread_of(messages: Vec<pai_runtime::Message>) -> StoredThread {
    StoredThread {
        id: "t".into(),
        agent: "a".into(),
        owner: "o".into(),
        incarnation: 1,
        version: 1,
        messages,
        metadata: Default::default(),
        private_metadata: Default::default(),
        runs: Vec::new(),
        lease_holder: None,
        lease_token: 0.into(),
    }
}

/// Steers a run left over that started a run of their own (A4): when a run
/// is admitted with a steer of run X as its trigger, every steer stored for
/// X is taken to belong to the new run (its context holds them all; until
/// it is claimed, they wait like a queued trigger, M1). Message id → the
/// run they started. Among workers the client may log a steer after the
/// worker logs the run it started, so the steers are gathered first.
/// Over-approximates (a steer X took is listed too): callers use it only
/// to leave messages unjudged.
pub(super) fn leftover_steers(events: &[Event]) -> BTreeMap<&str, &str> {
    let mut steers: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for e in events {
        if let EventKind::Steered { message } = &e.kind {
            steers.entry(e.run_id.as_str()).or_default().push(message);
        }
    }
    let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
    for e in events {
        let EventKind::Admitted { trigger } = &e.kind else {
            continue;
        };
        let from = steers
            .iter()
            .find(|(_, list)| list.contains(&trigger.as_str()))
            .map(|(run, _)| *run);
        if let Some(list) = from.and_then(|run| steers.remove(run)) {
            for m in list {
                owner.insert(m, e.run_id.as_str());
            }
        }
    }
    owner
}

/// Runs admitted on a thread before a later delete of it: they belong to
/// an incarnation the delete took, messages and all (H5), wherever their
/// commits fall in a merged log among workers.
pub(super) fn old_incarnation_runs(events: &[Event]) -> BTreeSet<(&str, &str)> {
    let mut admitted: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for e in events {
        match &e.kind {
            EventKind::Admitted { .. } => {
                admitted
                    .entry(e.thread_id.as_str())
                    .or_default()
                    .push(&e.run_id);
            }
            EventKind::ThreadDeleted { .. } => {
                let runs = admitted.remove(e.thread_id.as_str()).unwrap_or_default();
                out.extend(runs.into_iter().map(|r| (e.thread_id.as_str(), r)));
            }
            _ => {}
        }
    }
    out
}

/// Whether a hook picks the context or the request itself (a window, a
/// base, a replacement): then a request does not show the resolved context.
pub(super) fn reshaped(s: &crate::scenario::Scenario) -> bool {
    use crate::hooks::HookSpec;
    registered_in(s, &CONTEXT_PHASES)
        || s.hooks.iter().any(|h| {
            matches!(
                h.library(),
                Some(
                    HookSpec::RecentWindow(_)
                        | HookSpec::BaseContext(_)
                        | HookSpec::ReplaceMessages(_)
                )
            )
        })
}
