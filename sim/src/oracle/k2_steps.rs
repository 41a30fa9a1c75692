//! SPEC K2 (its property's second half): whatever pauses, crashes and
//! partitions came, no run's step is committed twice: each stored thread
//! holds at most one assistant message per (run, step).

use std::collections::BTreeMap;

use pai_runtime::{Role, store::StoredThread};

use super::observed::Violation;
use crate::scenario::OracleId;

pub(super) fn check(threads: &[StoredThread]) -> Vec<Violation> {
    let mut out = Vec::new();
    for t in threads {
        let mut seen: BTreeMap<(&str, u32), usize> = BTreeMap::new();
        for m in t.messages.iter().filter(|m| m.role == Role::Assistant) {
            if let (Some(run), Some(step)) = (m.pai.run_id.as_deref(), m.pai.step) {
                *seen.entry((run, step)).or_default() += 1;
            }
        }
        for ((run, step), n) in seen.into_iter().filter(|(_, n)| *n > 1) {
            let message = format!("step {step} is committed {n} times on thread {}", t.id);
            out.push(Violation::new(OracleId::K2Steps, Some(run), message));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use pai_runtime::{
        Message, Part,
        message::{PaiMeta, Producer, Visibility},
    };

    use super::*;

    fn step(id: &str, run: &str, step: u32) -> Message {
        Message {
            id: id.into(),
            seq: 0,
            role: Role::Assistant,
            parts: vec![Part::text("x")],
            visibility: Visibility::ALL,
            pai: PaiMeta::new(Producer::Model, Some(run), Some(step), 0),
        }
    }

    #[test]
    fn a_step_committed_twice_is_reported_once() {
        let mut t = crate::oracle::facts::thread_of(vec![step("a", "r", 0), step("b", "r", 1)]);
        assert!(check(std::slice::from_ref(&t)).is_empty());
        t.messages.push(step("c", "r", 1));
        let found = check(&[t]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].oracle, OracleId::K2Steps);
    }
}
