//! The timeline as checked: one action per entry, in time order (SPEC D5).

use std::collections::BTreeMap;

use serde_json::Value;

use super::field::{CheckError, Segment, fail};
use super::spec::{
    AfterEvent, AfterSpec, CallRef, CancelRun, CancelSpec, MutateSpec, TimelineEntry,
    VisibilitySpec,
};
use crate::hooks::TransformSpec;

/// One client action at a virtual time, or after a moment of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Moment {
    /// Virtual milliseconds from the start of the scenario (0 for an
    /// entry placed `after` a moment).
    pub at: u64,
    /// The moment of a run the action waits for, if placed `after` one.
    pub after: Option<After>,
    /// The client that acts: the identity it acts as (`alice` by default).
    pub client: String,
    /// The thread it acts on, by the name the scenario gives it.
    pub thread: String,
    /// What the client does.
    pub action: Action,
    /// The trusted handle a facade action acts through (`bind_thread`'s
    /// name), if not an unbound one.
    pub handle: Option<String>,
    /// The action must fail with an error containing this text.
    pub expect_error: Option<String>,
}

/// The moment of a run an entry is placed after (`after = { ... }`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct After {
    /// The run of the entry's thread's N-th send, from 1.
    pub run: usize,
    /// The moment.
    pub event: AfterEvent,
    /// With `commit_step`: the step, from 0 (0 otherwise).
    pub step: u32,
    /// With `wait`: which of the run's waits, from 1 (1 otherwise).
    pub nth: usize,
}

impl std::fmt::Display for After {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let run = self.run;
        match self.event {
            AfterEvent::CommitStep => write!(f, "after run {run} commits step {}", self.step),
            AfterEvent::Wait if self.nth == 1 => write!(f, "after run {run} waits"),
            AfterEvent::Wait => write!(f, "after run {run}'s wait {}", self.nth),
            AfterEvent::End => write!(f, "after run {run} ends"),
        }
    }
}

/// What a client does.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send this text as a user message: a new run, queued behind an active
    /// one.
    Send(String),
    /// Steer the active run with this text (SPEC A4); a send when none is
    /// active.
    Steer(String),
    /// Cancel the thread's current run, or (`Some(n)`) the run of its n-th send.
    Cancel(Option<usize>),
    /// Start watching the thread live (SPEC S2).
    Watch {
        /// The watcher's name, unique in the scenario; the transcript lists
        /// what it received under it.
        name: String,
        /// The watcher's own live (presentation-only) transforms, in order.
        live: Vec<TransformSpec>,
    },
    /// Approve a waiting approval call (SPEC T7).
    Approve(CallName),
    /// Deny a waiting approval call with a reason.
    Deny(CallName, String),
    /// Submit a client tool call's output.
    Submit(CallName, Value),
    /// The current run must wait on exactly these unanswered calls.
    ExpectWaiting(Vec<CallName>),
    /// A trusted writer's snapshot for later expectations (SPEC H3).
    ReadThread,
    /// A trusted writer's mutation (SPEC H2, H3).
    Mutate(MutateSpec),
    /// Delete the thread (SPEC H5).
    DeleteThread,
    /// Create the thread for the client (SPEC H5).
    CreateThread,
    /// Regenerate from the thread's N-th stored user message (SPEC R1).
    Regenerate(usize),
    /// A visibility rewrite (SPEC R1).
    SetVisibility(VisibilitySpec),
    /// Bind a trusted handle of this name to the thread's incarnation (SPEC H5).
    Bind(String),
}

impl Action {
    /// Whether it names a call by its id (`call`), not by tool and order.
    pub fn names_call_by_id(&self) -> bool {
        match self {
            Action::Approve(c) | Action::Deny(c, _) | Action::Submit(c, _) => c.by_id(),
            Action::ExpectWaiting(cs) => cs.iter().any(CallName::by_id),
            _ => false,
        }
    }

    /// The action's name, as the timeline writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Send(_) => "send",
            Action::Steer(_) => "steer",
            Action::Cancel(_) => "cancel",
            Action::Watch { .. } => "watch",
            Action::Approve(_) => "approve",
            Action::Deny(..) => "deny",
            Action::Submit(..) => "submit_result",
            Action::ExpectWaiting(_) => "expect_waiting",
            Action::ReadThread => "read_thread",
            Action::Mutate(_) => "mutate",
            Action::DeleteThread => "delete_thread",
            Action::CreateThread => "create_thread",
            Action::Regenerate(_) => "regenerate",
            Action::SetVisibility(_) => "set_visibility",
            Action::Bind(_) => "bind_thread",
        }
    }
}

/// A call a timeline action names (SPEC T7, T9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallName {
    /// The `nth` call of `tool` stored on the thread (from 1).
    Nth { tool: String, nth: usize },
    /// `call = "#N"`: the N-th call the timeline saw the thread store
    /// (from 1), whatever became of it since.
    Seen(usize),
    /// `call = "<id>"`: a call id as the runtime wrote it.
    Id(String),
}

impl std::fmt::Display for CallName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallName::Nth { tool, nth } => write!(f, "{tool}#{nth}"),
            CallName::Seen(n) => write!(f, "#{n}"),
            CallName::Id(id) => f.write_str(id),
        }
    }
}

impl CallName {
    /// Whether it names the call by its id (`call`), not by tool and order.
    pub fn by_id(&self) -> bool {
        !matches!(self, CallName::Nth { .. })
    }
}

pub(super) fn timeline(
    entries: Vec<TimelineEntry>,
    limit_ms: u64,
) -> Result<Vec<Moment>, CheckError> {
    if entries.is_empty() {
        return fail(
            &[Segment::Key("timeline")],
            "expected at least one [[timeline]] entry",
        );
    }
    super::handles::check(&entries)?;
    let mut out = Vec::with_capacity(entries.len());
    let mut watchers = BTreeMap::new();
    for (i, t) in entries.into_iter().enumerate() {
        check_fields(i, &t, limit_ms)?;
        out.push((i, moment(i, t, &mut watchers)?));
    }
    let keys =
        super::play_order::play_keys_of(out.iter().map(|(_, m)| m.after.is_none().then_some(m.at)));
    let mut keyed: Vec<(u64, (usize, Moment))> = keys.into_iter().zip(out).collect();
    keyed.sort_by_key(|(k, _)| *k);
    let played: Vec<(usize, Moment)> = keyed.into_iter().map(|(_, m)| m).collect();
    sent_before(&played)?;
    Ok(played.into_iter().map(|(_, m)| m).collect())
}

/// An entry placed after a moment of the thread's N-th send's run comes
/// after that send in play order (else it would wait for a run whose send
/// waits behind it).
fn sent_before(played: &[(usize, Moment)]) -> Result<(), CheckError> {
    let mut sends: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, m) in played {
        if let Some(a) = &m.after {
            let sent = sends.get(m.thread.as_str()).copied().unwrap_or(0);
            if sent < a.run {
                let at = [
                    Segment::Key("timeline"),
                    Segment::Index(*i),
                    Segment::Key("after"),
                    Segment::Key("run"),
                ];
                let message = format!(
                    "run {} of thread {:?} is its send #{}, but only {sent} send(s) of that thread come before this entry",
                    a.run, m.thread, a.run
                );
                return fail(&at, message);
            }
        }
        if matches!(m.action, Action::Send(_)) {
            *sends.entry(m.thread.as_str()).or_default() += 1;
        }
    }
    Ok(())
}

/// The `i`th entry's `after`, checked: not with `at`, a run from 1, `step`
/// exactly with `commit_step`, `nth` (from 1) only with `wait`.
fn after(i: usize, at_ms: u64, a: &AfterSpec) -> Result<After, CheckError> {
    let at = |field: Option<&'static str>| {
        let mut path = vec![
            Segment::Key("timeline"),
            Segment::Index(i),
            Segment::Key("after"),
        ];
        path.extend(field.map(Segment::Key));
        path
    };
    if at_ms != 0 {
        return fail(
            &at(None),
            "an entry is placed at a time (`at`) or after a moment (`after`), not both",
        );
    }
    if a.run == 0 {
        return fail(&at(Some("run")), "counts the thread's sends from 1");
    }
    let step = match (a.event, a.step) {
        (AfterEvent::CommitStep, Some(k)) => k,
        (AfterEvent::CommitStep, None) => {
            return fail(
                &at(None),
                "`commit_step` needs the `step` it commits (from 0)",
            );
        }
        (_, Some(_)) => return fail(&at(Some("step")), "`step` goes with `commit_step`"),
        (_, None) => 0,
    };
    let nth = match (a.event, a.nth) {
        (_, Some(0)) => return fail(&at(Some("nth")), "counts the run's waits from 1"),
        (AfterEvent::Wait, n) => n.unwrap_or(1),
        (_, Some(_)) => return fail(&at(Some("nth")), "`nth` goes with `wait`"),
        (_, None) => 1,
    };
    Ok(After {
        run: a.run,
        event: a.event,
        step,
        nth,
    })
}

/// The `i`th entry's own fields: `live` only with `watch`, a time before
/// the scenario's limit, a client and a thread.
fn check_fields(i: usize, t: &TimelineEntry, limit_ms: u64) -> Result<(), CheckError> {
    let at = [Segment::Key("timeline"), Segment::Index(i)];
    if !t.live.is_empty() && t.watch.is_none() {
        return fail(&at, "`live` goes with `watch`");
    }
    if t.at >= limit_ms {
        let at = [
            Segment::Key("timeline"),
            Segment::Index(i),
            Segment::Key("at"),
        ];
        let message = format!(
            "{}ms is past the scenario's virtual-time limit of {limit_ms}ms (time_limit_ms), so it would never happen",
            t.at
        );
        return fail(&at, message);
    }
    for (field, value) in [("client", &t.client), ("thread", &t.thread)] {
        if value.is_empty() {
            let at = [
                Segment::Key("timeline"),
                Segment::Index(i),
                Segment::Key(field),
            ];
            return fail(&at, "must not be empty");
        }
    }
    Ok(())
}

/// The `i`th entry as a moment: its one action (a trusted writer's, a
/// client's, or an answer) and what error it expects, if any.
fn moment(
    i: usize,
    t: TimelineEntry,
    watchers: &mut BTreeMap<String, usize>,
) -> Result<Moment, CheckError> {
    let facade = facade_action(i, &t)?;
    let no_answers = answers_none(&t);
    let action = action(i, t.send, t.steer, t.cancel, t.watch, t.live, watchers);
    let action = match (facade, action) {
        (Some(f), Err(Ok(false))) if no_answers => Ok(f),
        (Some(_), _) => {
            let at = [Segment::Key("timeline"), Segment::Index(i)];
            return fail(&at, "expected exactly one action in a timeline entry");
        }
        (None, a) => a,
    };
    let action = action.or_else(|none| {
        answer(
            i,
            none,
            t.approve,
            t.deny,
            t.submit_result,
            t.expect_waiting,
        )
    })?;
    if t.expect_error.as_ref().is_some_and(String::is_empty) {
        let at = [
            Segment::Key("timeline"),
            Segment::Index(i),
            Segment::Key("expect_error"),
        ];
        return fail(&at, "must not be empty: it would match every error");
    }
    let placed = t.after.as_ref().map(|a| after(i, t.at, a)).transpose()?;
    Ok(Moment {
        at: t.at,
        after: placed,
        client: t.client,
        thread: t.thread,
        action,
        handle: t.handle,
        expect_error: t.expect_error,
    })
}

/// Whether an entry names none of the answer actions.
fn answers_none(t: &TimelineEntry) -> bool {
    t.approve.is_none()
        && t.deny.is_none()
        && t.submit_result.is_none()
        && t.expect_waiting.is_none()
}

/// The trusted writer's action of an entry, if it names one (SPEC H2–H5,
/// R1); more than one of them is an error.
fn facade_action(i: usize, t: &TimelineEntry) -> Result<Option<Action>, CheckError> {
    let at = [Segment::Key("timeline"), Segment::Index(i)];
    let mut found = Vec::new();
    if t.read_thread {
        found.push(Action::ReadThread);
    }
    if let Some(m) = &t.mutate {
        found.push(Action::Mutate(m.clone()));
    }
    if t.delete_thread {
        found.push(Action::DeleteThread);
    }
    if t.create_thread {
        found.push(Action::CreateThread);
    }
    if let Some(n) = t.regenerate {
        if n == 0 {
            return fail(
                &at,
                "regenerate = N counts the thread's user messages from 1",
            );
        }
        found.push(Action::Regenerate(n));
    }
    if let Some(v) = t.set_visibility {
        if v.message == 0 {
            return fail(
                &at,
                "set_visibility's message counts stored messages from 1",
            );
        }
        found.push(Action::SetVisibility(v));
    }
    if let Some(name) = &t.bind_thread {
        found.push(Action::Bind(name.clone()));
    }
    match found.len() {
        0 | 1 => Ok(found.pop()),
        _ => fail(&at, "expected exactly one action in a timeline entry"),
    }
}

/// A client action of the first kinds (send, steer, cancel, watch), or
/// `Err(false)` when the entry has none of them (`Err(true)`: more than one).
fn action(
    i: usize,
    send: Option<String>,
    steer: Option<String>,
    cancel: CancelSpec,
    watch: Option<String>,
    live: Vec<TransformSpec>,
    watchers: &mut BTreeMap<String, usize>,
) -> Result<Action, Result<bool, CheckError>> {
    let at = [Segment::Key("timeline"), Segment::Index(i)];
    let cancel = match cancel {
        CancelSpec::Current(false) => None,
        CancelSpec::Current(true) => Some(None),
        CancelSpec::Run(CancelRun { run: 0 }) => {
            return Err(fail(&at, "cancel = { run = N } counts sends from 1"));
        }
        CancelSpec::Run(CancelRun { run }) => Some(Some(run)),
    };
    let given = usize::from(send.is_some())
        + usize::from(steer.is_some())
        + usize::from(cancel.is_some())
        + usize::from(watch.is_some());
    if given > 1 {
        return Err(Ok(true));
    }
    Ok(match (send, steer, cancel, watch) {
        (Some(text), _, _, _) => Action::Send(text),
        (_, Some(text), _, _) => Action::Steer(text),
        (_, _, Some(run), _) => Action::Cancel(run),
        (_, _, _, Some(name)) => {
            if name.is_empty() {
                let at = [
                    Segment::Key("timeline"),
                    Segment::Index(i),
                    Segment::Key("watch"),
                ];
                return Err(fail(&at, "a watcher needs a name"));
            }
            if let Some(j) = watchers.insert(name.clone(), i) {
                let message = format!("watcher {name:?} is already named by timeline[{j}]");
                return Err(fail(&at, message));
            }
            Action::Watch { name, live }
        }
        _ => return Err(Ok(false)),
    })
}

/// The answer actions (SPEC T7, T9) and the waiting check, for an entry
/// with no other action (`other`: it had more than one of those).
fn answer(
    i: usize,
    other: Result<bool, CheckError>,
    approve: Option<CallRef>,
    deny: Option<super::spec::DenySpec>,
    submit: Option<super::spec::SubmitSpec>,
    expect_waiting: Option<Vec<CallRef>>,
) -> Result<Action, CheckError> {
    let at = [Segment::Key("timeline"), Segment::Index(i)];
    let several = other?;
    let given = usize::from(approve.is_some())
        + usize::from(deny.is_some())
        + usize::from(submit.is_some())
        + usize::from(expect_waiting.is_some());
    if several || given != 1 {
        let all = "send, steer, cancel, watch, approve, deny, submit_result, expect_waiting, read_thread, mutate, delete_thread, create_thread, regenerate, set_visibility, bind_thread";
        return fail(&at, format!("expected exactly one of {all}"));
    }
    let call = |field: &'static str,
                tool: Option<String>,
                nth: Option<usize>,
                id: Option<String>| { call_name(i, field, tool, nth, id) };
    Ok(match (approve, deny, submit, expect_waiting) {
        (Some(c), ..) => Action::Approve(call("approve", c.tool, c.nth, c.call)?),
        (_, Some(d), ..) => Action::Deny(call("deny", d.tool, d.nth, d.call)?, d.reason),
        (_, _, Some(s), _) => {
            Action::Submit(call("submit_result", s.tool, s.nth, s.call)?, s.output)
        }
        (_, _, _, Some(calls)) => {
            let names = calls
                .into_iter()
                .map(|c| call("expect_waiting", c.tool, c.nth, c.call));
            Action::ExpectWaiting(names.collect::<Result<_, _>>()?)
        }
        _ => unreachable!("exactly one was counted"),
    })
}

/// The call an answer names: by `tool` (and `nth`, from 1) or by `call`
/// (`"#N"` from 1, or an id), exactly one way.
fn call_name(
    i: usize,
    field: &'static str,
    tool: Option<String>,
    nth: Option<usize>,
    id: Option<String>,
) -> Result<CallName, CheckError> {
    let at = [
        Segment::Key("timeline"),
        Segment::Index(i),
        Segment::Key(field),
    ];
    match (tool, nth, id) {
        (Some(_), _, Some(_)) => fail(
            &at,
            "names its call two ways: give `tool` (with `nth`) or `call`, not both",
        ),
        (None, Some(_), Some(_)) => fail(
            &at,
            "`nth` counts a tool's calls: it goes with `tool`, not `call`",
        ),
        (None, _, None) => fail(
            &at,
            "needs the call it names: `tool` (with `nth`) or `call`",
        ),
        (Some(tool), _, _) if tool.is_empty() => fail(&at, "needs the tool whose call it names"),
        (Some(_), Some(0), _) => fail(&at, "nth counts a tool's calls from 1"),
        (Some(tool), nth, None) => Ok(CallName::Nth {
            tool,
            nth: nth.unwrap_or(1),
        }),
        (None, None, Some(id)) => match id.strip_prefix('#') {
            _ if id.is_empty() => fail(&at, "`call` needs a call id, or #N"),
            Some(n) => match n.parse::<usize>() {
                Ok(n) if n >= 1 => Ok(CallName::Seen(n)),
                _ => fail(
                    &at,
                    format!("`call = {id:?}`: #N counts the thread's calls from 1"),
                ),
            },
            None => Ok(CallName::Id(id)),
        },
    }
}

#[cfg(test)]
#[path = "answers_tests.rs"]
mod tests;
