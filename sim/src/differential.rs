//! Differential runs (issue 25): the same scenario with the same seed on two
//! stores must give byte-identical transcripts, event logs and stored
//! threads (SPEC D1: a store is part of "any machine"). A store backend that
//! does not write a change back shows here, and nowhere on memory alone.

use crate::report::{Report, SimError};
use crate::run::simulate_against;
use crate::scenario::Scenario;
use crate::world::StoreKind;

/// The store a run on `store` is compared against.
pub fn other_store(store: StoreKind) -> StoreKind {
    match store {
        StoreKind::Memory => StoreKind::Sqlite,
        StoreKind::Sqlite => StoreKind::Memory,
    }
}

/// The first way two reports of one scenario and seed differ, or `None`
/// when their transcripts, event logs and stored threads are identical.
/// `names` name the two runs (their stores) in the message.
pub fn compare(a: &Report, b: &Report, names: (&str, &str)) -> Option<String> {
    let (an, bn) = names;
    if a.transcript != b.transcript {
        let d = crate::format::diff(&a.transcript, &b.transcript, an, bn);
        return Some(format!("the transcripts on {an} and {bn} differ:\n{d}"));
    }
    if a.events != b.events {
        let at = a
            .events
            .iter()
            .zip(&b.events)
            .position(|(x, y)| x != y)
            .unwrap_or(a.events.len().min(b.events.len()));
        let show = |es: &[pai_runtime::Event]| {
            es.get(at)
                .map_or("(no event)".to_string(), |e| format!("{e:?}"))
        };
        return Some(format!(
            "the event logs on {an} and {bn} differ at event {at} ({} and {} events):\n  {an}: {}\n  {bn}: {}",
            a.events.len(),
            b.events.len(),
            show(&a.events),
            show(&b.events)
        ));
    }
    if a.threads != b.threads {
        let (ta, tb) = (threads_text(a), threads_text(b));
        let d = crate::format::diff(&ta, &tb, an, bn);
        return Some(format!("the stored threads on {an} and {bn} differ:\n{d}"));
    }
    None
}

/// The stored threads as one stable text, every field included (a field
/// serde skips must differ visibly too).
fn threads_text(r: &Report) -> String {
    format!("{:#?}\n", r.threads)
}

/// Runs `s` with `seed` on the store [`other_store`] of `store` and compares
/// it with `report`, the run on `store`: the difference, if any.
pub fn across_stores(
    s: &Scenario,
    seed: u64,
    store: StoreKind,
    report: &Report,
) -> Result<Option<String>, SimError> {
    let other = other_store(store);
    // Judged against the first run's twin, as D4's second run is.
    let theirs = simulate_against(s, seed, other, &report.twin)?;
    Ok(compare(report, &theirs, (store.as_str(), other.as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> Report {
        let spec = crate::fuzz::case(5);
        let s = Scenario::from_spec(spec).expect("a generated case is valid");
        crate::run::simulate(&s, s.seed).expect("runs")
    }

    /// SPEC D1: identical runs compare equal; a transcript line, an event or
    /// a stored field changed on one side is named, with the two stores.
    #[test]
    fn d1_compare_names_the_first_difference() {
        let a = report();
        assert_eq!(compare(&a, &a.clone(), ("memory", "sqlite")), None);

        let mut b = a.clone();
        b.transcript.push_str("one more line\n");
        let m = compare(&a, &b, ("memory", "sqlite")).expect("differs");
        assert!(m.contains("transcripts on memory and sqlite differ"), "{m}");
        assert!(m.contains("+one more line"), "{m}");

        let mut b = a.clone();
        b.events.pop();
        let m = compare(&a, &b, ("memory", "sqlite")).expect("differs");
        assert!(m.contains("event logs"), "{m}");

        assert!(!a.threads.is_empty(), "the case stores a thread");
        let mut b = a.clone();
        b.threads[0].owner.push('!');
        let m = compare(&a, &b, ("memory", "sqlite")).expect("differs");
        assert!(
            m.contains("stored threads on memory and sqlite differ"),
            "{m}"
        );
    }

    #[test]
    fn the_other_store_of_each_store() {
        assert_eq!(other_store(StoreKind::Memory), StoreKind::Sqlite);
        assert_eq!(other_store(StoreKind::Sqlite), StoreKind::Memory);
    }
}
