//! Typed tool handles: a tool registered with its input and output types
//! kept, so what is attached to it (`on_output`, SPEC T6) is checked against
//! those types by the compiler.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::approval::NeedsApproval;
use super::dyn_tool::{FnTool, Tool, ToolCx, ToolError, ToolKind, ToolOutcome, ToolSpec};
use crate::future::HookFuture;

/// A tool with its input type `I` and output type `O`. Register it with
/// [`crate::Agent::typed_tool`]; attach an output handler with
/// [`crate::Agent::on_output`].
pub struct TypedTool<I, O> {
    tool: Arc<dyn Tool>,
    _types: PhantomData<fn(I) -> O>,
}

impl<I, O> Clone for TypedTool<I, O> {
    fn clone(&self) -> Self {
        TypedTool {
            tool: self.tool.clone(),
            _types: PhantomData,
        }
    }
}

impl<I, O> fmt::Debug for TypedTool<I, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedTool")
            .field("name", &self.tool.spec().name)
            .field("kind", &self.tool.kind())
            .finish()
    }
}

impl<I, O> TypedTool<I, O> {
    /// The tool's name, as model tool calls name it.
    pub fn name(&self) -> &str {
        &self.tool.spec().name
    }

    /// Who executes the tool's calls: the runtime, once a client approves, or
    /// the client.
    pub fn kind(&self) -> ToolKind {
        self.tool.kind()
    }

    /// The tool behind the typed handle.
    pub fn tool(&self) -> Arc<dyn Tool> {
        self.tool.clone()
    }
}

impl TypedTool<Value, Value> {
    /// A tool whose input and output are JSON values, such as a tool whose
    /// types are known only at run time (a scripted tool of a simulator).
    pub fn dynamic(tool: Arc<dyn Tool>) -> Self {
        TypedTool {
            tool,
            _types: PhantomData,
        }
    }
}

/// A backend tool over typed input and output; `approval` says which calls
/// wait for a client's approval before they run (SPEC T7): `true` (every
/// call), `false` (none) or a [`NeedsApproval`] decided per call, such as
/// `NeedsApproval::when(|b: &Booking| b.fare > 500)`.
pub fn typed_tool<I, O, F, Fut>(
    name: &str,
    description: &str,
    approval: impl Into<NeedsApproval>,
    f: F,
) -> TypedTool<I, O>
where
    I: DeserializeOwned + Send + 'static,
    O: Serialize + Send + 'static,
    F: Fn(ToolCx, I) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
{
    TypedTool {
        tool: Arc::new(FnTool::new(name, description, f).with_approval(approval.into())),
        _types: PhantomData,
    }
}

/// A client tool: the runtime never runs it; the run waits until a client
/// submits an output, which must deserialize into `O` (SPEC T7).
pub fn client_tool<I, O>(name: &str, description: &str) -> TypedTool<I, O>
where
    I: DeserializeOwned + Send + 'static,
    O: DeserializeOwned + Send + 'static,
{
    TypedTool {
        tool: Arc::new(ClientTool::<O> {
            spec: ToolSpec {
                name: name.to_string(),
                description: description.to_string(),
            },
            _output: PhantomData,
        }),
        _types: PhantomData,
    }
}

struct ClientTool<O> {
    spec: ToolSpec,
    _output: PhantomData<fn() -> O>,
}

impl<O: DeserializeOwned + Send + 'static> Tool for ClientTool<O> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Client
    }

    fn call(&self, _cx: ToolCx, _input: Value) -> HookFuture<'_, ToolOutcome> {
        HookFuture::ready(ToolOutcome::Throw(format!(
            "client tool {} has no backend",
            self.spec.name
        )))
    }

    fn check_output(&self, output: &Value) -> Result<(), String> {
        O::deserialize(output).map(drop).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Pick {
        #[allow(dead_code)]
        choice: String,
    }

    #[test]
    fn t7_client_tools_check_outputs_against_their_type() {
        let t = client_tool::<Value, Pick>("pick", "the user picks");
        assert_eq!(t.kind(), ToolKind::Client);
        assert_eq!(
            t.tool().check_output(&serde_json::json!({"choice": "a"})),
            Ok(())
        );
        let bad = t.tool().check_output(&serde_json::json!({"choice": 3}));
        assert!(bad.is_err_and(|e| e.contains("invalid type")));
    }

    #[test]
    fn t7_approval_tools_say_so() {
        let t = typed_tool("send", "sends", true, |_cx, i: u32| async move {
            Ok::<_, ToolError>(i)
        });
        assert_eq!((t.name(), t.kind()), ("send", ToolKind::Approval));
        let backend = typed_tool("b", "b", false, |_cx, i: u32| async move {
            Ok::<_, ToolError>(i)
        });
        assert_eq!(backend.kind(), ToolKind::Backend);
    }
}
