//! The error a hook returns (SPEC L4), and the cell that keeps the first
//! hook failure inside an onion.

use std::sync::Mutex;

use crate::model::ModelError;

/// The error a hook returns to fail its run (SPEC L4).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HookError {
    /// What went wrong, in words: the error's `Display` text, which the
    /// failed run reports (SPEC L4).
    pub message: String,
    /// Set when this is a provider error passed through from `next`: it is
    /// the provider's failure, not the hook's, so an outer hook may still
    /// recover from it.
    model: Option<ModelError>,
}

impl HookError {
    /// A hook's own failure with this message: its run fails, later hooks of
    /// the phase do not run, and nothing uncommitted is stored (SPEC L4).
    pub fn new(message: impl Into<String>) -> HookError {
        HookError {
            message: message.into(),
            model: None,
        }
    }

    /// The provider error this passes through, if it is one.
    pub fn model_error(&self) -> Option<&ModelError> {
        self.model.as_ref()
    }

    /// The provider error this passes through, or `None` for a hook's own failure.
    pub(crate) fn into_model_error(self) -> Result<ModelError, HookError> {
        match self.model {
            Some(e) => Ok(e),
            None => Err(self),
        }
    }
}

/// What every hook phase returns.
pub type HookResult<T> = Result<T, HookError>;

impl From<ModelError> for HookError {
    fn from(e: ModelError) -> HookError {
        HookError {
            message: e.to_string(),
            model: Some(e),
        }
    }
}

/// The first hook failure inside an onion. It fails the run even when an
/// outer hook catches what its `next` returned (SPEC L4).
#[derive(Debug, Default)]
pub(crate) struct FailureCell(Mutex<Option<HookError>>);

impl FailureCell {
    pub(crate) fn record(&self, e: &HookError) {
        let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(e.clone());
        }
    }

    pub(crate) fn take(&self) -> Option<HookError> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A provider error passed through a hook stays recognizable, so an
    /// outer hook may recover from it; a hook's own error is not one.
    #[test]
    fn provider_errors_are_told_apart_from_hook_errors() {
        let passed = HookError::from(ModelError::Timeout(5));
        assert_eq!(passed.model_error(), Some(&ModelError::Timeout(5)));
        assert_eq!(passed.into_model_error(), Ok(ModelError::Timeout(5)));
        let own = HookError::new("policy says no");
        assert_eq!(own.model_error(), None);
        assert_eq!(own.clone().into_model_error(), Err(own));
    }
}
