//! The comparison of a run's committed outcome with its twin's, thread by
//! thread and run by run, and the differences the rules allow:
//!
//! - A call run again under the same idempotency key (K5): tool starts
//!   are not part of the committed outcome, so nothing to allow.
//! - A cancel's or a delete's lateness (K6, H5), on a thread the timeline
//!   cancels or deletes: a run that ended cancelled in one of the two may
//!   have been cut at another point of the history the other holds. The
//!   cancel reached the store at another point of the run (faults move
//!   when the run gets where), and among workers the holder hears of it at
//!   its next exchange with the store. Up to where the cancelled one
//!   stopped they agree; there it may hold cancelled results
//!   (`source = cancelled`) where the other holds the calls' real results,
//!   and nothing after them but more cancelled results; the other may go
//!   on, and end otherwise (a cancel that came after it completed reached
//!   nothing). Both cancelled, they were cancelled alike. The cut run's
//!   end and steps, its run metadata (what its later steps' hooks wrote)
//!   and the compaction cursor of its thread (a later step's compaction)
//!   may differ.
//! - What the scenario's hooks make fault-sensitive (`mask.rs`): left out
//!   before comparing.
//!
//! Anything else is a violation naming the first differing line.

use std::fmt::Write as _;

use super::outcome::{COMPACTION_KEY, MessageOutcome, Outcome, RunOutcome, ThreadOutcome};

/// A difference the rules allow, where it was used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Allowed {
    /// A cancelled run cut at another point (K6, H5): thread, run.
    Cut(String, String),
}

/// Where two outcomes differ beyond what the rules allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Difference {
    /// The first differing line, and a small diff.
    pub(crate) message: String,
    /// It lies past a run of its thread the rules let be cut, whose cut
    /// may have decided what came after it.
    pub(crate) after_cut: bool,
}

/// The allowances `mine` needed to equal `theirs` (the twin's), or where
/// they differ.
pub(crate) fn compare(mine: &Outcome, theirs: &Outcome) -> Result<Vec<Allowed>, Difference> {
    let mut allowed = Vec::new();
    let same_threads = mine.threads.len() == theirs.threads.len()
        && mine
            .threads
            .iter()
            .zip(&theirs.threads)
            .all(|(a, b)| a.name == b.name);
    if !same_threads {
        let message = difference(&mine.lines(), &theirs.lines());
        let after_cut = false;
        return Err(Difference { message, after_cut });
    }
    for (a, b) in mine.threads.iter().zip(&theirs.threads) {
        let before = allowed.len();
        thread(a, b, &mut allowed).map_err(|(x, y)| Difference {
            message: difference(&x, &y),
            after_cut: allowed.len() > before,
        })?;
    }
    Ok(allowed)
}

/// The lines of two outcomes a difference is shown in.
type Lines = (Vec<String>, Vec<String>);

/// One thread: its runs pairwise (a cut allowed where the rules allow
/// one), then how many there are and the rest, the compaction cursor left
/// out where a run was cut. A difference is shown in the run where it lies (a run the rules
/// let differ is not shown), or in the whole thread.
fn thread(a: &ThreadOutcome, b: &ThreadOutcome, allowed: &mut Vec<Allowed>) -> Result<(), Lines> {
    let mut cut = false;
    for (x, y) in a.runs.iter().zip(&b.runs) {
        if x == y {
            continue;
        }
        if !cut_alike(x, y, &a.cancels) {
            let lines = |t: &ThreadOutcome, r: &RunOutcome| {
                let mut l = vec![t.name.clone()];
                l.extend(r.lines());
                l
            };
            return Err((lines(a, x), lines(b, y)));
        }
        cut = true;
        allowed.push(Allowed::Cut(a.name.clone(), x.name.clone()));
    }
    if a.runs.len() != b.runs.len() {
        return Err((a.lines(), b.lines()));
    }
    let private = |t: &ThreadOutcome| {
        let mut p = t.private.clone();
        if cut {
            p.remove(COMPACTION_KEY);
        }
        p
    };
    let same = a.metadata == b.metadata && private(a) == private(b) && a.loose == b.loose;
    same.then_some(()).ok_or_else(|| (a.lines(), b.lines()))
}

/// Whether two runs are one history, cut by a cancel or a delete of the
/// thread's timeline (giving one of `reasons`) where it reached one (or
/// both) of them: the run that ended cancelled holds what the other holds
/// up to where it stopped. Both cancelled, either may have stopped first,
/// and the cancel may have found the run queued in one and started in the
/// other, or a delete may have come first in one and a cancel in the other.
pub(crate) fn cut_alike(x: &RunOutcome, y: &RunOutcome, reasons: &[&str]) -> bool {
    let by_timeline = |r: &RunOutcome| {
        r.cancelled
            && r.reason
                .as_deref()
                .is_some_and(|why| reasons.contains(&why))
    };
    if x.trigger != y.trigger || !(by_timeline(x) || by_timeline(y)) {
        return false;
    }
    if x.cancelled && y.cancelled && !(by_timeline(x) && by_timeline(y)) && x.end != y.end {
        return false;
    }
    let cut = |s: &RunOutcome, o: &RunOutcome| {
        by_timeline(s) && s.waiting.is_empty() && stopped_within(&s.messages, &o.messages)
    };
    cut(x, y) || cut(y, x)
}

/// Whether `s` (a run that was cancelled) stopped within `o`'s history:
/// `o` begins with `s`'s messages, but for where `s` stopped, which may
/// hold cancelled results for calls `o` has real results of, and nothing
/// after them but cancelled results.
fn stopped_within(s: &[MessageOutcome], o: &[MessageOutcome]) -> bool {
    // Where a run stopped, its step's results may be gathered otherwise
    // into tool messages (a taker closes every open call in one; the
    // holder committed some before the cancel's closing write).
    let (s, o) = (&results_joined(s), &results_joined(o));
    let Some(i) = s.iter().zip(o).position(|(m, n)| m != n) else {
        return s.len() <= o.len();
    };
    stopped_here(&s[i], &o[i]) && s[i + 1..].iter().all(MessageOutcome::only_cancelled)
}

/// `messages` with each run of tool messages of one step made one (the
/// first's head, every result in order).
fn results_joined(messages: &[MessageOutcome]) -> Vec<MessageOutcome> {
    let mut out: Vec<MessageOutcome> = Vec::with_capacity(messages.len());
    for m in messages {
        match out.last_mut() {
            Some(prev) if tool_results(prev) && tool_results(m) && step_of(prev) == step_of(m) => {
                prev.parts.extend(m.parts.iter().cloned());
            }
            _ => out.push(m.clone()),
        }
    }
    out
}

/// Whether `m` is a tool message of results only.
fn tool_results(m: &MessageOutcome) -> bool {
    m.head.contains(" tool by tool ") && m.parts.iter().all(|p| p.result.is_some())
}

/// The step a message's head names (`step=N`), if any.
fn step_of(m: &MessageOutcome) -> Option<&str> {
    m.head.split_whitespace().find(|w| w.starts_with("step="))
}

/// Whether `s` is `o` with some of its results cancelled instead (the
/// run stopped before those calls finished) and at least one so.
fn stopped_here(s: &MessageOutcome, o: &MessageOutcome) -> bool {
    if s.head != o.head || s.parts.len() != o.parts.len() {
        return false;
    }
    let mut cancelled = false;
    for (p, q) in s.parts.iter().zip(&o.parts) {
        if p == q {
            continue;
        }
        match (&p.result, &q.result) {
            (Some((call, true)), Some((theirs, _))) if call == theirs => cancelled = true,
            _ => return false,
        }
    }
    cancelled
}

/// The most lines of diff a difference shows.
const SHOWN: usize = 16;

/// The violation's message: the first line where `mine` and `theirs`
/// differ (numbered within what is shown: the thread, or the thread's
/// run where the difference lies), and a small diff (its first hunk).
pub(crate) fn difference(mine: &[String], theirs: &[String]) -> String {
    let at = mine
        .iter()
        .zip(theirs)
        .position(|(a, b)| a != b)
        .unwrap_or(mine.len().min(theirs.len()));
    let line = |l: &[String]| {
        l.get(at)
            .map_or("(nothing)".to_string(), |s| s.trim().to_string())
    };
    let mut out = format!(
        "the committed outcome differs from the fault-free twin's at line {}: this run has `{}`, the twin `{}`",
        at + 1,
        line(mine),
        line(theirs)
    );
    let (a, b) = (theirs.join("\n") + "\n", mine.join("\n") + "\n");
    let diff = similar::TextDiff::from_lines(&a, &b);
    let hunk = diff.unified_diff().context_radius(2).iter_hunks().next();
    let text = hunk.map(|h| h.to_string()).unwrap_or_default();
    let _ = write!(out, "\n    --- twin\n    +++ this run");
    for l in text.lines().take(SHOWN) {
        let _ = write!(out, "\n    {l}");
    }
    if text.lines().count() > SHOWN {
        out.push_str("\n    ...");
    }
    out
}

/// The transcript's `twin:` line of a run the comparison passed.
pub(crate) fn judged_line(mine: &Outcome, allowed: &[Allowed]) -> String {
    let mut line = "judged: the committed outcome equals the fault-free twin's".to_string();
    if !allowed.is_empty() {
        let cuts: Vec<String> = allowed
            .iter()
            .map(|Allowed::Cut(t, r)| format!("run {r} of {t}"))
            .collect();
        let _ = write!(
            line,
            ", but for a cancel's lateness (K6, H5): {} cut at another point",
            cuts.join(", ")
        );
    }
    if !mine.masked.is_empty() {
        let _ = write!(line, "; not compared: {}", mine.masked.join("; "));
    }
    line
}
