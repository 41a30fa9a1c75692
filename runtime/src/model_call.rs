//! `around_model_call` (SPEC L6, P6, P7): the attempt patch and the onion's `next`.

use std::borrow::Cow;
use std::fmt;

use serde::Serialize;

use crate::clock::Millis;
use crate::error::FailureCell;
use crate::future::HookFuture;
use crate::model::{BoxStream, ModelError, ModelRequest};
use crate::patch::RoutePatch;

/// What one provider attempt changes: a sparse route patch (P1–P3 apply to
/// this attempt only, P6) and an attempt timeout on the runtime's clock.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub struct AttemptPatch {
    /// The attempt's route patch.
    pub route: RoutePatch,
    /// Give up on this attempt after this many milliseconds. Combined with any
    /// outer timeout (the shorter wins); the run's own stop still wins over both.
    #[cfg_attr(
        feature = "schema",
        schemars(description = "The attempt's deadline in virtual milliseconds.")
    )]
    pub timeout_ms: Option<Millis>,
}

impl AttemptPatch {
    /// An attempt on another model: a fresh route (P1).
    pub fn model(name: impl Into<String>) -> AttemptPatch {
        AttemptPatch {
            route: RoutePatch {
                model: Some(name.into()),
                ..RoutePatch::default()
            },
            timeout_ms: None,
        }
    }

    /// An attempt with a timeout.
    pub fn timeout(ms: Millis) -> AttemptPatch {
        AttemptPatch {
            route: RoutePatch::default(),
            timeout_ms: Some(ms),
        }
    }

    /// The request this patch makes of `request`: `request` itself when
    /// the patch changes nothing (no copy of its messages on the hot path).
    pub(crate) fn applied<'r>(&self, request: &'r ModelRequest) -> Cow<'r, ModelRequest> {
        match self.route.is_empty() && self.timeout_ms.is_none() {
            true => Cow::Borrowed(request),
            false => Cow::Owned(self.apply(request)),
        }
    }

    /// The request this patch makes of `request`.
    pub(crate) fn apply(&self, request: &ModelRequest) -> ModelRequest {
        let mut next = request.clone();
        next.route.apply(&self.route);
        if self.route.tools.is_some() {
            next.tools = crate::model::offered(&next.registered, &next.route);
        }
        next.timeout_ms = match (request.timeout_ms, self.timeout_ms) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        next
    }
}

/// One link of the model-call onion: makes an attempt of `request` with `patch`.
pub(crate) trait ModelLink: Send + Sync {
    fn attempt<'s>(
        &'s self,
        request: &'s ModelRequest,
        patch: AttemptPatch,
    ) -> HookFuture<'s, Result<BoxStream, ModelError>>;
}

/// The `next` of `around_model_call`. Each [`call`](ModelNext::call) is one
/// provider attempt; it resolves once the provider stream exists (P7), so an
/// error while the stream is consumed is not seen here.
pub struct ModelNext<'a> {
    link: &'a dyn ModelLink,
    request: &'a ModelRequest,
    failure: &'a FailureCell,
}

impl fmt::Debug for ModelNext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelNext")
            .field("model", &self.request.route.model)
            .finish()
    }
}

impl<'a> ModelNext<'a> {
    pub(crate) fn new(
        link: &'a dyn ModelLink,
        request: &'a ModelRequest,
        failure: &'a FailureCell,
    ) -> ModelNext<'a> {
        ModelNext {
            link,
            request,
            failure,
        }
    }

    pub(crate) fn failure(&self) -> &'a FailureCell {
        self.failure
    }

    /// Makes one attempt with `patch` applied to the request this hook sees.
    pub fn call(&self, patch: AttemptPatch) -> HookFuture<'a, Result<BoxStream, ModelError>> {
        self.link.attempt(self.request, patch)
    }
}

/// A composition ends in the `next` it was given: the request and patch of
/// its innermost hook go on to whatever that `next` leads to.
impl ModelLink for ModelNext<'_> {
    fn attempt<'s>(
        &'s self,
        request: &'s ModelRequest,
        patch: AttemptPatch,
    ) -> HookFuture<'s, Result<BoxStream, ModelError>> {
        self.link.attempt(request, patch)
    }
}
