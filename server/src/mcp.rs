//! The MCP server: the tools of [`crate::tools`] over rmcp, on stdio or streamable HTTP. A tool
//! that fails answers `isError` with the same error body as the HTTP API.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;

use crate::error::{ApiError, Code};
use crate::service::Service;
use crate::tools::{self, TOOLS};

/// What the server tells a client at `initialize`.
const INSTRUCTIONS: &str = "mnemon is this user's long-term memory. Before answering a question that \
earlier conversations or saved facts may bear on, call recall_memories with the question. When the \
user states something worth keeping (a preference, a fact about them, a decision), call save_memories \
with one concise statement per memory. Use update_memory or delete_memory when a memory is wrong.";

/// The MCP face of a [`Service`].
#[derive(Clone)]
pub struct Mcp {
    service: Arc<Service>,
    timeout: Option<Duration>,
}

impl Mcp {
    /// Serves `service`'s tools.
    pub fn new(service: Arc<Service>) -> Mcp {
        Mcp { service, timeout: None }
    }

    /// Answers `timeout` for a tool call that takes longer than `limit`.
    pub fn with_timeout(self, limit: Duration) -> Mcp {
        Mcp { timeout: Some(limit), ..self }
    }
}

fn tool(t: &tools::Tool) -> rmcp::model::Tool {
    let schema = match (t.schema)() {
        serde_json::Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    let mut tool = rmcp::model::Tool::new(t.name, t.description, schema);
    tool.annotations = Some(ToolAnnotations::from_raw(
        None,
        Some(t.read_only),
        Some(t.destructive),
        Some(t.read_only),
        Some(false),
    ));
    tool
}

impl ServerHandler for Mcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mnemon", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(TOOLS.iter().map(tool).collect()))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        tools::find(name).map(tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(t) = tools::find(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {:?}", request.name),
                Some(json!({"error": {"code": "not_found", "field": "name", "message": "unknown tool"}})),
            ));
        };
        let args = serde_json::Value::Object(request.arguments.unwrap_or_default());
        let started = crate::stopwatch();
        let call = tools::run(Arc::clone(&self.service), t, args);
        let result = match self.timeout {
            None => call.await,
            Some(limit) => tokio::time::timeout(limit, call).await.unwrap_or_else(|_| {
                Err(ApiError::new(
                    Code::Timeout,
                    format!("the call took longer than {} s", limit.as_secs_f32()),
                ))
            }),
        };
        let code = result.as_ref().err().map_or("ok", |e| e.code.as_str());
        metrics::counter!("mnemon_tool_calls_total", "tool" => t.name, "code" => code).increment(1);
        metrics::histogram!("mnemon_tool_call_seconds", "tool" => t.name)
            .record(started.elapsed().as_secs_f64());
        Ok(match result {
            Ok(out) => {
                let mut r = CallToolResult::success(vec![ContentBlock::text(out.text)]);
                r.structured_content = Some(out.json);
                r
            }
            Err(e) => CallToolResult::structured_error(e.body()),
        }
        .into())
    }
}

/// Serves MCP on stdin/stdout until the client closes it. Logs must go to stderr.
pub async fn serve_stdio(service: Arc<Service>) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    use rmcp::ServiceExt;
    let running = Mcp::new(service).serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
