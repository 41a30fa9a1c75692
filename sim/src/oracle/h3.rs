//! SPEC H3: an expectation conflicts exactly when it says. Judged from the
//! store tap's records: every mutation or regeneration that carried an
//! expectation is compared again, here, with what its thread held when the
//! store took it. An expected version holds only if the thread is still at
//! it; expected private metadata holds if the private metadata is the same
//! map, whatever else changed. The store must commit when it holds and
//! refuse with a conflict when it does not, and a conflict reports the
//! version it found and whether the private metadata was what failed.

use pai_runtime::store::Expect;
use serde_json::{Map, Value};

use super::observed::{Observed, Violation};
use crate::scenario::OracleId;
use crate::world::{ExpectationRecord, Found, TapOutcome};

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    o.tap.expectations.iter().filter_map(judge).collect()
}

/// Whether `expect` holds against what the thread held (`None`: it expects
/// nothing).
fn holds(expect: &Expect, found: &Found) -> Option<bool> {
    match expect {
        Expect::Nothing => None,
        Expect::Version {
            version,
            incarnation,
        } => Some(*version == found.version && *incarnation == found.incarnation),
        Expect::PrivateMetadata {
            private,
            incarnation,
        } => Some(same_map(private, &found.private) && *incarnation == found.incarnation),
    }
}

/// Key by key, whatever order the maps keep.
fn same_map(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.len() == b.len() && a.iter().all(|(k, v)| b.get(k) == Some(v))
}

fn judge(r: &ExpectationRecord) -> Option<Violation> {
    let found = r.found.as_ref()?;
    let holds = holds(&r.expect, found)?;
    let what = || describe(r, found);
    let message = match (&r.outcome, holds) {
        (TapOutcome::Other, _) | (TapOutcome::Committed { .. }, true) => return None,
        (TapOutcome::Committed { version }, false) => {
            format!("{} committed as version {version}, though {}", r.op, what())
        }
        (TapOutcome::Conflict { .. }, true) => {
            format!("{} was refused as a conflict, though {}", r.op, what())
        }
        (
            TapOutcome::Conflict {
                version,
                incarnation,
                private_changed,
            },
            false,
        ) => {
            let private = matches!(&r.expect, Expect::PrivateMetadata { private, .. }
                if *private != found.private);
            if *version != found.version || *incarnation != found.incarnation {
                format!(
                    "{}'s conflict reports version {version} of incarnation {incarnation}, but the thread was at version {} of incarnation {}",
                    r.op, found.version, found.incarnation
                )
            } else if *private_changed != private {
                format!(
                    "{}'s conflict says private_changed={private_changed} for {}",
                    r.op,
                    expectation(&r.expect)
                )
            } else {
                return None;
            }
        }
    };
    Some(Violation::new(
        OracleId::H3,
        None,
        format!("on {}: {message}", r.thread),
    ))
}

fn expectation(expect: &Expect) -> String {
    match expect {
        Expect::Nothing => "no expectation".to_string(),
        Expect::Version {
            version,
            incarnation,
        } => format!("an expected version {version} of incarnation {incarnation}"),
        Expect::PrivateMetadata {
            private,
            incarnation,
        } => format!(
            "expected private metadata {} of incarnation {incarnation}",
            Value::Object(private.clone())
        ),
    }
}

fn describe(r: &ExpectationRecord, found: &Found) -> String {
    format!(
        "it had {} and the thread held version {} of incarnation {} with private metadata {}",
        expectation(&r.expect),
        found.version,
        found.incarnation,
        Value::Object(found.private.clone())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(expect: Expect, found: (u64, Value), outcome: TapOutcome) -> ExpectationRecord {
        let Value::Object(private) = found.1 else {
            panic!("an object")
        };
        ExpectationRecord {
            thread: "main".into(),
            op: "mutate",
            after_event: 0,
            expect,
            found: Some(Found {
                incarnation: 1,
                version: found.0,
                private,
            }),
            outcome,
        }
    }

    fn private(v: Value) -> Expect {
        let Value::Object(m) = v else {
            panic!("an object")
        };
        Expect::PrivateMetadata {
            private: m,
            incarnation: 1,
        }
    }

    #[test]
    fn h3_a_held_expectation_that_commits_is_quiet() {
        let ok = TapOutcome::Committed { version: 6 };
        let r = record(
            Expect::Version {
                version: 5,
                incarnation: 1,
            },
            (5, json!({})),
            ok.clone(),
        );
        assert_eq!(judge(&r), None);
        let r = record(private(json!({"c": 1})), (9, json!({"c": 1})), ok);
        assert_eq!(judge(&r), None, "unrelated changes do not conflict");
    }

    #[test]
    fn h3_a_stale_version_that_commits_is_caught() {
        let r = record(
            Expect::Version {
                version: 4,
                incarnation: 1,
            },
            (5, json!({})),
            TapOutcome::Committed { version: 6 },
        );
        let v = judge(&r).expect("a violation");
        assert_eq!(v.oracle, OracleId::H3);
        assert!(
            v.message.contains("committed as version 6"),
            "{}",
            v.message
        );
    }

    #[test]
    fn h3_a_conflict_on_an_unrelated_change_is_caught() {
        let conflict = TapOutcome::Conflict {
            version: 9,
            incarnation: 1,
            private_changed: true,
        };
        let r = record(
            private(json!({"c": 1, "d": 2})),
            (9, json!({"d": 2, "c": 1})),
            conflict,
        );
        let v = judge(&r).expect("a violation");
        assert!(v.message.contains("refused as a conflict"), "{}", v.message);
    }

    #[test]
    fn h3_a_conflict_must_report_what_it_found() {
        let wrong_version = TapOutcome::Conflict {
            version: 3,
            incarnation: 1,
            private_changed: false,
        };
        let r = record(
            Expect::Version {
                version: 2,
                incarnation: 1,
            },
            (4, json!({})),
            wrong_version,
        );
        assert!(judge(&r).is_some());
        let wrong_flag = TapOutcome::Conflict {
            version: 4,
            incarnation: 1,
            private_changed: true,
        };
        let r = record(
            Expect::Version {
                version: 2,
                incarnation: 1,
            },
            (4, json!({})),
            wrong_flag,
        );
        assert!(judge(&r).is_some());
        let right = TapOutcome::Conflict {
            version: 4,
            incarnation: 1,
            private_changed: true,
        };
        let r = record(private(json!({"c": 1})), (4, json!({"c": 2})), right);
        assert_eq!(judge(&r), None);
    }

    #[test]
    fn h3_a_conflict_across_incarnations_names_the_incarnation() {
        let read_in_two = Expect::PrivateMetadata {
            private: serde_json::Map::new(),
            incarnation: 2,
        };
        let says_changed = TapOutcome::Conflict {
            version: 4,
            incarnation: 1,
            private_changed: true,
        };
        let r = record(read_in_two.clone(), (4, json!({})), says_changed);
        let v = judge(&r).expect("the private metadata did not change");
        assert!(v.message.contains("private_changed=true"), "{}", v.message);
        let wrong_incarnation = TapOutcome::Conflict {
            version: 4,
            incarnation: 2,
            private_changed: false,
        };
        let r = record(read_in_two.clone(), (4, json!({})), wrong_incarnation);
        assert!(judge(&r).is_some());
        let right = TapOutcome::Conflict {
            version: 4,
            incarnation: 1,
            private_changed: false,
        };
        assert_eq!(judge(&record(read_in_two, (4, json!({})), right)), None);
    }

    #[test]
    fn h3_other_refusals_and_missing_threads_are_not_judged() {
        let r = record(
            Expect::Version {
                version: 1,
                incarnation: 1,
            },
            (4, json!({})),
            TapOutcome::Other,
        );
        assert_eq!(judge(&r), None);
        let mut r = record(
            Expect::Version {
                version: 1,
                incarnation: 1,
            },
            (4, json!({})),
            TapOutcome::Committed { version: 5 },
        );
        r.found = None;
        assert_eq!(judge(&r), None);
    }
}
