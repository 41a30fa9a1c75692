//! SPEC K2 (and K1) among several workers, judged from what the store did:
//! a reference of each thread's lease, replayed from the store's log
//! (claims, writes that landed, their times), independent of the runtime's
//! lease code. No write under a token older than the thread's newest lands;
//! tokens only grow; no worker is handed a run's lease while another holds
//! it unexpired, by the store's clock; and a thread's next run is claimed
//! only once its current run has ended (K1). A write extends the lease only
//! when it commits (the store answers with the thread's new version): a run
//! taking its input (`run_messages`, `take_anchor`, `take_steer`) is fenced
//! but commits nothing, and leaves the expiry where the last commit put it.
//!
//! Each is judged per incarnation (SPEC H5): a deletion retires the
//! thread's lease and ends its runs, so the next incarnation's first claim
//! is legitimate whoever held the old lease, while tokens still only grow
//! across incarnations and no write lands between the deletion and that
//! claim (the deleted runs' writes are refused).

use std::collections::BTreeMap;

use super::observed::{ClusterObs, Violation};
use crate::scenario::OracleId;
use crate::world::ClusterEvent;
use pai_runtime::store::FencingToken;

/// One thread's lease as the reference sees it.
#[derive(Debug, Default)]
struct Lease<'a> {
    token: FencingToken,
    /// The worker holding it, and the run.
    holder: Option<(&'a str, &'a str)>,
    /// When the holder's lease runs out unless renewed.
    expires: u64,
    /// The thread's current run: claimed, not yet ended (K1).
    current: Option<&'a str>,
    /// The incarnation was deleted and nothing claimed since: no write may
    /// land (H5).
    deleted: Option<u64>,
}

pub(super) fn check(c: &ClusterObs) -> Vec<Violation> {
    let mut leases: BTreeMap<&str, Lease<'_>> = BTreeMap::new();
    let mut out = Vec::new();
    for r in &c.log {
        match &r.what {
            ClusterEvent::Claimed {
                from,
                thread,
                run,
                token,
                ..
            } => {
                let l = leases.entry(thread).or_default();
                out.extend(l.claim((r.at, c.lease_ms), (from, run, *token)));
            }
            ClusterEvent::Wrote {
                from,
                request,
                thread,
                run,
                token,
                next_token,
                releases,
                version,
                ..
            } => {
                let l = leases.entry(thread).or_default();
                if let Some(message) = l.refusal(from, request, *token) {
                    out.push(Violation::new(OracleId::K2, Some(run), message));
                    continue;
                }
                if version.is_some() {
                    l.expires = r.at + c.lease_ms;
                }
                if let Some(next) = next_token {
                    l.token = (*next).max(l.token);
                }
                if *releases {
                    l.holder = None;
                }
                if *releases && *request == "finish" {
                    l.current = None;
                }
            }
            ClusterEvent::Deleted {
                thread,
                incarnation,
                ..
            } => {
                let l = leases.entry(thread).or_default();
                l.holder = None;
                l.current = None;
                l.deleted = Some(*incarnation);
            }
            ClusterEvent::Refused { .. }
            | ClusterEvent::Fault { .. }
            | ClusterEvent::LostClaim { .. }
            | ClusterEvent::Stored { .. } => {}
        }
    }
    out
}

impl<'a> Lease<'a> {
    /// `from` claims `run` with `token` at `at`, for `lease_ms`: what that
    /// breaks (K2, K1). The lease is then `from`'s.
    fn claim(
        &mut self,
        (at, lease_ms): (u64, u64),
        (from, run, token): (&'a str, &'a str, FencingToken),
    ) -> Vec<Violation> {
        let mut out = Vec::new();
        if token <= self.token {
            let message = format!("token {token} handed out after token {}", self.token);
            out.push(Violation::new(OracleId::K2, Some(run), message));
        }
        if let Some((held_by, _)) = self.holder
            && at < self.expires
        {
            let message = format!(
                "{from} was given the lease at {at}ms while {held_by} held it until {}ms",
                self.expires
            );
            out.push(Violation::new(OracleId::K2, Some(run), message));
        }
        if let Some(other) = self.current.filter(|cur| *cur != run) {
            let message = format!("{from} claimed {run} while {other} had not ended");
            out.push(Violation::new(OracleId::K1, Some(run), message));
        }
        *self = Lease {
            token,
            holder: Some((from, run)),
            expires: at + lease_ms,
            current: Some(run),
            deleted: None,
        };
        out
    }

    /// Why a write `request` from `from` under `token` must not have
    /// landed, if it must not: its incarnation was deleted (H5), or its
    /// token is not the newest (K2).
    fn refusal(&self, from: &str, request: &str, token: FencingToken) -> Option<String> {
        if let Some(incarnation) = self.deleted {
            return Some(format!(
                "{request} from {from} landed under token {token} after incarnation {incarnation} was deleted"
            ));
        }
        (token != self.token).then(|| {
            format!(
                "{request} from {from} landed under stale token {token} (newest {})",
                self.token
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::ClusterRecord;

    fn at(at: u64, what: ClusterEvent) -> ClusterRecord {
        ClusterRecord {
            at,
            after_event: 0,
            what,
        }
    }

    fn claim(from: &str, run: &str, token: u64) -> ClusterEvent {
        ClusterEvent::Claimed {
            from: from.into(),
            thread: "t".into(),
            run: run.into(),
            token: token.into(),
            episode: 1,
            takeover: None,
        }
    }

    fn write(from: &str, token: u64, request: &'static str, releases: bool) -> ClusterEvent {
        ClusterEvent::Wrote {
            version: Some(2),
            from: from.into(),
            request,
            thread: "t".into(),
            run: "r".into(),
            token: token.into(),
            next_token: None,
            releases,
            admitted: None,
            messages: Vec::new(),
            waits_on: Vec::new(),
            committed: false,
        }
    }

    fn judge(log: Vec<ClusterRecord>) -> Vec<(OracleId, String)> {
        let c = ClusterObs {
            log,
            lease_ms: 100,
            ..ClusterObs::default()
        };
        check(&c)
            .into_iter()
            .map(|v| (v.oracle.rule().expect("a built-in oracle"), v.message))
            .collect()
    }

    /// A takeover after expiry, and a write under the newest token, are fine.
    #[test]
    fn k2_a_takeover_after_expiry_is_allowed() {
        let found = judge(vec![
            at(0, claim("w1", "r", 1)),
            at(50, write("w1", 1, "append", false)),
            at(160, claim("w2", "r", 2)),
            at(170, write("w2", 2, "finish", true)),
        ]);
        assert_eq!(found, vec![]);
    }

    /// A write's landing renews the lease: a claim before the renewed
    /// expiry is a second holder at once; a stale write that lands, and a
    /// token that does not grow, are reported too.
    #[test]
    fn k2_two_holders_stale_writes_and_old_tokens_are_reported() {
        let found = judge(vec![
            at(0, claim("w1", "r", 1)),
            at(90, write("w1", 1, "renew", false)),
            at(150, claim("w2", "r", 2)),
            at(160, write("w1", 1, "append", false)),
            at(400, claim("w3", "r", 2)),
        ]);
        let oracles: Vec<OracleId> = found.iter().map(|(o, _)| *o).collect();
        assert_eq!(oracles, vec![OracleId::K2, OracleId::K2, OracleId::K2]);
        assert!(
            found[0].1.contains("while w1 held it until 190ms"),
            "{found:?}"
        );
        assert!(found[1].1.contains("stale token 1"), "{found:?}");
        assert!(
            found[2].1.contains("token 2 handed out after token 2"),
            "{found:?}"
        );
    }

    /// A run taking its input commits nothing and does not extend the
    /// lease: a takeover after the claim's expiry, though the holder took
    /// its input since, is no second holder.
    #[test]
    fn k2_a_fenced_read_does_not_extend_the_lease() {
        let mut read = write("w1", 1, "take_anchor", false);
        if let ClusterEvent::Wrote { version, .. } = &mut read {
            *version = None;
        }
        let found = judge(vec![
            at(0, claim("w1", "r", 1)),
            at(10, read),
            at(105, claim("w2", "r", 2)),
        ]);
        assert_eq!(found, vec![]);
    }

    fn deleted(incarnation: u64) -> ClusterEvent {
        ClusterEvent::Deleted {
            from: "client".into(),
            thread: "t".into(),
            incarnation,
            cancelled: vec!["r".into()],
        }
    }

    /// A deletion retires the lease and ends the runs: the next
    /// incarnation's first claim, while the deleted run's holder still
    /// thinks it holds an unexpired lease, is neither a second holder (K2)
    /// nor a run claimed before the current one ended (K1).
    #[test]
    fn a_new_incarnation_s_first_claim_is_legitimate() {
        let found = judge(vec![
            at(0, claim("w1", "r", 1)),
            at(10, write("w1", 1, "append", false)),
            at(20, deleted(1)),
            at(30, claim("w2", "q", 3)),
            at(40, write("w2", 3, "append", false)),
        ]);
        assert_eq!(found, vec![]);
    }

    /// Across incarnations tokens still only grow, and a write that lands
    /// between the deletion and the next claim (a deleted run's) is a
    /// stale write.
    #[test]
    fn after_a_deletion_tokens_grow_and_nothing_lands_before_a_claim() {
        let found = judge(vec![
            at(0, claim("w1", "r", 2)),
            at(20, deleted(1)),
            at(25, write("w1", 2, "append", false)),
            at(30, claim("w2", "q", 1)),
        ]);
        let oracles: Vec<OracleId> = found.iter().map(|(o, _)| *o).collect();
        assert_eq!(oracles, vec![OracleId::K2, OracleId::K2], "{found:?}");
        assert!(
            found[0].1.contains("after incarnation 1 was deleted"),
            "{found:?}"
        );
        assert!(
            found[1].1.contains("token 1 handed out after token 2"),
            "{found:?}"
        );
    }

    /// K1: a thread's next run is claimed only after its current run ended.
    #[test]
    fn k1_a_second_run_claimed_before_the_first_ended_is_reported() {
        let found = judge(vec![
            at(0, claim("w1", "r", 1)),
            at(10, write("w1", 1, "wait", true)),
            at(20, claim("w2", "q", 2)),
        ]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, OracleId::K1);
    }
}
