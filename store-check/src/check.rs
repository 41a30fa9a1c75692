//! Checking one reply against what the model expects.

use pai_runtime::store::FencingToken;
use pai_runtime::store::{AdminReply, RunReply};
use pai_runtime::{StoreError, store::StoreReply};

use crate::model::{ClaimExpect, Expected, Model};

/// A reply that is not what the model expects: what it should have been.
#[derive(Debug, Clone)]
pub(crate) struct Mismatch {
    pub(crate) expected: String,
    /// A rule this mismatch breaks more precisely than the step's own, if any.
    pub(crate) rule: Option<&'static str>,
}

fn mismatch(expected: String, rule: Option<&'static str>) -> Mismatch {
    Mismatch { expected, rule }
}

/// Checks `got` against `expect`; on success, the model learns the tokens
/// the store handed out.
pub(crate) fn check_reply(
    model: &mut Model,
    expect: &Expected,
    got: &Result<StoreReply, StoreError>,
) -> Result<(), Mismatch> {
    match expect {
        Expected::Reply(want) if want == got => Ok(()),
        Expected::Reply(want) => Err(mismatch(format!("{want:?}"), None)),
        Expected::Claim(None) => match got {
            Ok(StoreReply::Admin(AdminReply::Claimed(None))) => Ok(()),
            _ => Err(mismatch(
                "Ok(Claimed(None)): no run can be taken".into(),
                None,
            )),
        },
        Expected::Claim(Some(want)) => {
            let token = check_claim(model, want, got)?;
            model.adopt_token(want.thread, token);
            Ok(())
        }
        Expected::Lease {
            thread,
            episode,
            version,
        } => {
            let floor = model.threads[*thread].lease.token;
            match got {
                Ok(StoreReply::Run(RunReply::Lease {
                    token,
                    episode: e,
                    version: v,
                })) if *token > floor && e == episode && v == version => {
                    model.adopt_token(*thread, *token);
                    Ok(())
                }
                Ok(StoreReply::Run(RunReply::Lease { token, .. })) if *token <= floor => {
                    Err(mismatch(
                        format!(
                            "Ok(Lease {{ token: > {floor} (tokens only grow), episode: {episode} }})"
                        ),
                        Some("K2"),
                    ))
                }
                _ => Err(mismatch(
                    format!(
                        "Ok(Lease {{ token: > {floor}, episode: {episode}, version: {version} }})"
                    ),
                    None,
                )),
            }
        }
    }
}

fn check_claim(
    model: &Model,
    want: &ClaimExpect,
    got: &Result<StoreReply, StoreError>,
) -> Result<FencingToken, Mismatch> {
    let thread = &model.threads[want.thread].id;
    let takeover = match &want.takeover {
        None => "None".to_string(),
        Some((from, token)) => format!(
            "Some(Takeover {{ from: {}, token: {token}, .. }})",
            from.as_ref()
                .map_or("any".to_string(), |f| format!("{f:?}"))
        ),
    };
    let described = format!(
        "Ok(Claimed(Some(Claimed {{ thread: {thread:?}, run: {:?}, resumed: {}, cancel_requested: {}, \
         token: > {} (tokens only grow), episode: {}, steps: {}, takeover: {takeover}, version: {} }})))",
        want.run,
        want.resumed,
        want.cancel_requested,
        want.floor,
        want.episode,
        want.steps,
        want.version
    );
    let Ok(StoreReply::Admin(AdminReply::Claimed(Some(c)))) = got else {
        return Err(mismatch(described, None));
    };
    let takeover_ok = match (&want.takeover, &c.takeover) {
        (None, None) => true,
        (Some((from, token)), Some(t)) => {
            t.token == *token && from.as_ref().is_none_or(|f| Some(f) == t.from.as_ref())
        }
        _ => false,
    };
    if c.token <= want.floor {
        return Err(mismatch(described, Some("K2")));
    }
    let same = c.thread == *thread
        && c.run == want.run
        && c.resumed == want.resumed
        && c.cancel_requested == want.cancel_requested
        && c.episode == want.episode
        && c.steps == want.steps
        && c.version == want.version
        && takeover_ok;
    match same {
        true => Ok(c.token),
        false => Err(mismatch(described, None)),
    }
}
