//! Typed run metadata: durable data an agent attaches to each run, stored
//! as JSON and read back into the agent's own type (seed: "persist durable
//! application state through typed run metadata").

use std::any::{TypeId, type_name};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A type an agent may keep as run metadata: it starts as `Default` and
/// survives waiting and resume as JSON.
pub trait RunMetadata: Serialize + DeserializeOwned + Default + Send + Sync + 'static {}

impl<T: Serialize + DeserializeOwned + Default + Send + Sync + 'static> RunMetadata for T {}

/// The run metadata type an agent names; `()` when it names none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MetaType {
    id: TypeId,
    name: &'static str,
}

impl MetaType {
    pub(crate) fn of<M: 'static>() -> MetaType {
        MetaType {
            id: TypeId::of::<M>(),
            name: type_name::<M>(),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        self.name
    }

    /// Refuses `M` unless it is this type: one agent, one metadata type.
    pub(crate) fn expect<M: 'static>(self) -> Result<(), String> {
        if TypeId::of::<M>() == self.id {
            return Ok(());
        }
        Err(format!(
            "this agent's run metadata is {}, not {}",
            self.name,
            type_name::<M>()
        ))
    }
}

/// Reads stored metadata (`None`: never written, so the default).
pub(crate) fn decode<M: RunMetadata>(stored: Option<&Value>) -> Result<M, String> {
    match stored {
        None => Ok(M::default()),
        Some(v) => M::deserialize(v).map_err(|e| format!("stored run metadata: {e}")),
    }
}

pub(crate) fn encode<M: RunMetadata>(value: &M) -> Result<Value, String> {
    serde_json::to_value(value).map_err(|e| format!("run metadata did not serialize: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Budget {
        spent: u32,
    }

    #[test]
    fn metadata_starts_as_default_and_round_trips() {
        assert_eq!(decode::<Budget>(None), Ok(Budget::default()));
        let v = encode(&Budget { spent: 3 }).unwrap();
        assert_eq!(decode::<Budget>(Some(&v)), Ok(Budget { spent: 3 }));
        let bad = decode::<Budget>(Some(&Value::from("x")));
        assert!(bad.is_err());
    }

    #[test]
    fn one_agent_one_metadata_type() {
        let t = MetaType::of::<Budget>();
        assert_eq!(t.expect::<Budget>(), Ok(()));
        assert!(t.expect::<u32>().is_err_and(|e| e.contains("Budget")));
    }
}
