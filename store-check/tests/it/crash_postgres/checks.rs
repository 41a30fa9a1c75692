//! What the stored thread must show after a round, and the doctored
//! threads each check must reject (so none passes vacuously).

use super::*;

/// Every check on a round's stored threads; an empty list when all hold.
pub(crate) fn check(c: &Case) -> Vec<String> {
    let mut errors = Vec::new();
    check_run(c, &mut errors);
    check_steps(c, &mut errors);
    check_results(c, &mut errors);
    check_takeover(c, &mut errors);
    check_authors(c, &mut errors);
    check_tool_starts(c, &mut errors);
    errors
}

macro_rules! ensure {
    ($errors:expr, $cond:expr, $($fmt:tt)+) => {
        if !$cond {
            $errors.push(format!($($fmt)+));
        }
    };
}

/// The run completed, all its steps committed, the model ended it.
pub(crate) fn check_run(c: &Case, errors: &mut Vec<String>) {
    let Some(r) = c.last.runs.iter().find(|r| r.id == c.run) else {
        errors.push(format!("run {} is gone", c.run));
        return;
    };
    ensure!(
        errors,
        r.status == RunStatus::Completed && r.reason.is_none(),
        "the run is not completed by the model: {:?} ({:?})",
        r.status,
        r.reason
    );
    ensure!(
        errors,
        r.steps == STEPS,
        "the run committed {} steps, not {STEPS}",
        r.steps
    );
}

/// Sequence numbers 1, 2, ...; each step's assistant message once (K2).
pub(crate) fn check_steps(c: &Case, errors: &mut Vec<String>) {
    for (k, m) in c.last.messages.iter().enumerate() {
        ensure!(
            errors,
            m.seq == k as u64 + 1,
            "sequence numbers not consecutive: message {k} has seq {}",
            m.seq
        );
    }
    let mut steps: BTreeMap<u32, usize> = BTreeMap::new();
    for m in c.last.messages.iter().filter(|m| m.role == Role::Assistant) {
        let step = m.pai.step.unwrap_or(u32::MAX);
        ensure!(
            errors,
            m.pai.producer == Producer::Model && m.pai.run_id.as_deref() == Some(&c.run),
            "assistant message {} is not the run's model output",
            m.id
        );
        *steps.entry(step).or_default() += 1;
    }
    for step in 0..STEPS {
        let n = steps.remove(&step).unwrap_or(0);
        ensure!(errors, n == 1, "step {step} committed {n} times");
    }
    ensure!(
        errors,
        steps.is_empty(),
        "steps beyond the run's: {steps:?}"
    );
}

/// Every tool call once, with exactly one result, under its key (K5).
pub(crate) fn check_results(c: &Case, errors: &mut Vec<String>) {
    let mut calls: BTreeMap<&str, usize> = BTreeMap::new();
    let mut results: BTreeMap<&str, usize> = BTreeMap::new();
    for part in c.last.messages.iter().flat_map(|m| &m.parts) {
        match part {
            Part::ToolCall { call_id, .. } => *calls.entry(call_id).or_default() += 1,
            Part::ToolResult {
                call_id, output, ..
            } => {
                *results.entry(call_id).or_default() += 1;
                let key = format!("{}/{call_id}", c.run);
                ensure!(
                    errors,
                    output["key"] == json!(key),
                    "result of {call_id} ran under key {}",
                    output["key"]
                );
            }
            Part::Text { .. } => {}
        }
    }
    ensure!(
        errors,
        calls.len() == STEPS as usize - 1,
        "{} distinct tool calls, not {}",
        calls.len(),
        STEPS - 1
    );
    for (call, n) in &calls {
        let got = results.remove(call).unwrap_or(0);
        ensure!(errors, *n == 1, "call {call} committed {n} times");
        ensure!(errors, got == 1, "call {call} has {got} results");
    }
    ensure!(
        errors,
        results.is_empty(),
        "results without a call: {results:?}"
    );
}

/// `a` held the run when it died; `b` took it over: a newer token, a
/// later episode (K2, K3).
pub(crate) fn check_takeover(c: &Case, errors: &mut Vec<String>) {
    let (before, after) = (run_of(&c.at_kill, &c.run), run_of(&c.last, &c.run));
    ensure!(
        errors,
        before.status == RunStatus::Running && c.at_kill.lease_holder.as_ref() == Some(&c.run),
        "a did not hold the running run when killed: {:?}",
        before.status
    );
    ensure!(
        errors,
        c.last.lease_token > c.at_kill.lease_token,
        "the lease token did not grow past a's {} (now {}): no takeover",
        c.at_kill.lease_token,
        c.last.lease_token
    );
    ensure!(
        errors,
        after.episodes > before.episodes && after.episodes >= 2,
        "no later episode: {} when a died, {} at the end",
        before.episodes,
        after.episodes
    );
}

/// The workers named in a message: a step's text or a tool result's `by`.
pub(crate) fn authors(m: &Message) -> Vec<String> {
    m.parts
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } if m.role == Role::Assistant => {
                text.rsplit_once(" by ").map(|(_, w)| w.to_string())
            }
            Part::ToolResult { output, .. } => output["by"].as_str().map(str::to_string),
            _ => None,
        })
        .collect()
}

/// What `a` left is kept as it was (X3); everything after it is `b`'s:
/// nothing of `a` landed after its death or under its token.
pub(crate) fn check_authors(c: &Case, errors: &mut Vec<String>) {
    let (left, last) = (&c.at_kill.messages, &c.last.messages);
    let kept = left.len() <= last.len() && last[..left.len()] == left[..];
    ensure!(
        errors,
        kept,
        "what a left was not kept: {} messages then, the first {} now differ",
        left.len(),
        left.len().min(last.len())
    );
    for m in left {
        let by = authors(m);
        ensure!(
            errors,
            by.iter().all(|w| w == "a"),
            "message {} before a's death is by {by:?}",
            m.id
        );
    }
    let later = last.get(left.len()..).unwrap_or_default();
    for m in later {
        let by = authors(m);
        ensure!(
            errors,
            by.iter().all(|w| w == "b"),
            "message {} after a's death is by {by:?}",
            m.id
        );
    }
    let of_b = later.iter().filter(|m| !authors(m).is_empty()).count();
    ensure!(errors, of_b > 0, "nothing of b after a's death");
}

/// The idempotency keys of `run`'s tool calls in `t`.
pub(crate) fn call_keys(t: &StoredThread, run: &str) -> BTreeSet<String> {
    (t.messages.iter().flat_map(|m| &m.parts))
        .filter_map(|p| match p {
            Part::ToolCall { call_id, .. } => Some(format!("{run}/{call_id}")),
            _ => None,
        })
        .collect()
}

/// The committed results in `t`: idempotency key to the worker that ran it.
pub(crate) fn result_keys(t: &StoredThread) -> BTreeMap<String, String> {
    t.messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult { output, .. } => Some((
                output["key"].as_str()?.to_string(),
                output["by"].as_str()?.to_string(),
            )),
            _ => None,
        })
        .collect()
}

/// K5 from the tool's own log: no worker started a call twice; a call
/// whose result was committed before `a` died was not run again; every
/// committed result comes from a logged start of the worker it names.
pub(crate) fn check_tool_starts(c: &Case, errors: &mut Vec<String>) {
    let done_at_kill = result_keys(&c.at_kill);
    let calls = call_keys(&c.last, &c.run);
    let mut seen = BTreeSet::new();
    for (worker, key) in &c.starts {
        ensure!(
            errors,
            seen.insert((worker.as_str(), key.as_str())),
            "{worker} started {key} twice"
        );
        ensure!(
            errors,
            calls.contains(key),
            "{worker} started {key}, a call the thread does not hold"
        );
        ensure!(
            errors,
            worker == "a" || !done_at_kill.contains_key(key),
            "{key}, committed before a's death, was run again by {worker} (K5)"
        );
    }
    for (key, by) in result_keys(&c.last) {
        ensure!(
            errors,
            seen.contains(&(by.as_str(), key.as_str())),
            "the result of {key} names {by}, whose start of it was not logged"
        );
    }
}

/// Copies of a passing case, each broken the way one check must catch,
/// with a piece of the error that check gives.
pub(crate) fn doctored(c: &Case) -> Vec<(&'static str, Case)> {
    let edit = |f: &dyn Fn(&mut Case)| {
        let mut d = c.clone();
        f(&mut d);
        d
    };
    vec![
        ("committed 2 times", edit(&|d| duplicate_step(&mut d.last))),
        ("has 0 results", edit(&|d| drop_result(&mut d.last))),
        ("not consecutive", edit(&|d| d.last.messages[1].seq += 1)),
        (
            "not completed",
            edit(&|d| set_status(d, RunStatus::Running)),
        ),
        (
            "did not grow",
            edit(&|d| d.last.lease_token = d.at_kill.lease_token),
        ),
        ("no later episode", edit(&|d| copy_episodes(d))),
        (
            "after a's death is by",
            edit(&|d| relabel_last_step(&mut d.last)),
        ),
        (
            "was not kept",
            edit(&|d| d.at_kill.messages[0].parts.clear()),
        ),
        ("nothing of b", edit(&|d| d.last = d.at_kill.clone())),
        ("run again by b", edit(&|d| rerun_committed(d))),
        ("twice", edit(&|d| d.starts.push(d.starts[0].clone()))),
    ]
}

pub(crate) fn run_mut<'a>(t: &'a mut StoredThread, run: &str) -> &'a mut RunRecord {
    t.runs.iter_mut().find(|r| r.id == run).expect("the run")
}

/// The first step's message committed again at the end.
pub(crate) fn duplicate_step(t: &mut StoredThread) {
    let mut m = (t.messages.iter())
        .find(|m| m.role == Role::Assistant)
        .cloned()
        .expect("a step");
    m.id = format!("{}_again", m.id).into();
    m.seq = t.messages.len() as u64 + 1;
    t.messages.push(m);
}

/// The last tool result lost, sequence numbers closed up.
pub(crate) fn drop_result(t: &mut StoredThread) {
    let at = (t.messages.iter())
        .rposition(|m| m.role == Role::Tool)
        .expect("a result");
    t.messages.remove(at);
    for (k, m) in t.messages.iter_mut().enumerate() {
        m.seq = k as u64 + 1;
    }
}

pub(crate) fn set_status(c: &mut Case, status: RunStatus) {
    run_mut(&mut c.last, &c.run).status = status;
}

pub(crate) fn copy_episodes(c: &mut Case) {
    let episodes = run_of(&c.at_kill, &c.run).episodes;
    run_mut(&mut c.last, &c.run).episodes = episodes;
}

/// The last step claims to be `a`'s.
pub(crate) fn relabel_last_step(t: &mut StoredThread) {
    let m = (t.messages.iter_mut())
        .rfind(|m| m.role == Role::Assistant)
        .expect("a step");
    for part in &mut m.parts {
        if let Part::Text { text } = part {
            *text = text.replace(" by b", " by a");
        }
    }
}

/// `b` logged a start of a call whose result `a` had committed.
pub(crate) fn rerun_committed(c: &mut Case) {
    let key = (result_keys(&c.at_kill).into_keys().next()).expect("a result before the kill");
    c.starts.push(("b".to_string(), key));
}

/// Every doctored copy of a passing case must be rejected, by the check
/// it was broken for.
pub(crate) fn checks_fire(c: &Case) {
    for (want, d) in doctored(c) {
        let errors = check(&d);
        assert!(
            errors.iter().any(|e| e.contains(want)),
            "a doctored thread ({want}) passed the checks: {errors:?}"
        );
    }
}
