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
use crate::operations::{self, Operation, OPERATIONS};
use crate::principal::Principal;
use crate::service::Service;

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
    /// Whom calls act for when the transport says nothing (stdio); over HTTP, the token's
    /// principal.
    principal: Principal,
    /// Whether the gated tools (`forget_user`, `move_memories`) are offered.
    destructive: bool,
}

impl Mcp {
    /// Serves `service`'s tools, for the whole server, without the gated tools.
    pub fn new(service: Arc<Service>) -> Mcp {
        Mcp { service, timeout: None, principal: Principal::Admin, destructive: false }
    }

    /// Answers `timeout` for a tool call that takes longer than `limit`.
    pub fn with_timeout(self, limit: Duration) -> Mcp {
        Mcp { timeout: Some(limit), ..self }
    }

    /// Calls act for `principal` (on stdio; over HTTP the token decides).
    pub fn for_principal(self, principal: Principal) -> Mcp {
        Mcp { principal, ..self }
    }

    /// Offers the gated, destructive tools (`forget_user`, `move_memories`) too.
    pub fn with_destructive_tools(self, enabled: bool) -> Mcp {
        Mcp { destructive: enabled, ..self }
    }

    /// The principal of this request: the HTTP request's (set by authentication), else ours.
    fn caller(&self, context: &RequestContext<RoleServer>) -> Principal {
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>())
            .cloned()
            .unwrap_or_else(|| self.principal.clone())
    }

    /// The tools this server offers: every tool of the table, the gated ones only when enabled.
    fn offered(&self) -> impl Iterator<Item = &'static Operation> + '_ {
        OPERATIONS.iter().filter(|o| o.tool.is_some() && (self.destructive || !o.hints.gated))
    }
}

fn tool(op: &Operation, caller: &Principal) -> rmcp::model::Tool {
    let schema = match caller.schema((op.schema)()) {
        serde_json::Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    let about = op.tool.unwrap_or(operations::Tool { title: op.name, description: "" });
    let mut tool = rmcp::model::Tool::new(op.name, about.description, schema);
    tool.annotations = Some(ToolAnnotations::from_raw(
        Some(about.title.to_owned()),
        Some(op.hints.read_only),
        Some(op.hints.destructive),
        Some(op.hints.idempotent),
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
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = self.caller(&context);
        Ok(ListToolsResult::with_all_items(self.offered().map(|t| tool(t, &caller)).collect()))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.offered().find(|t| t.name == name).map(|t| tool(t, &self.principal))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(t) = self.offered().find(|t| t.name == request.name) else {
            if operations::tool(&request.name).is_some() {
                let e = ApiError {
                    field: Some("name".into()),
                    ..ApiError::new(
                        Code::Forbidden,
                        format!(
                            "{} is off on this server: destructive tools are offered only when it is \
                             started with --allow-destructive-tools",
                            request.name
                        ),
                    )
                };
                return Ok(CallToolResult::structured_error(e.body()).into());
            }
            return Err(ErrorData::invalid_params(
                format!("unknown tool {:?}", request.name),
                Some(json!({"error": {"code": "not_found", "field": "name", "message": "unknown tool"}})),
            ));
        };
        let args = serde_json::Value::Object(request.arguments.unwrap_or_default());
        let started = crate::stopwatch();
        let caller = self.caller(&context);
        let service = Arc::clone(&self.service);
        let call = crate::service::blocking(move || t.value(&service, &caller, args));
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
            // The text content mirrors the structured result, for clients that read only text.
            Ok(out) => {
                let mut r = CallToolResult::success(vec![ContentBlock::text(out.to_string())]);
                r.structured_content = Some(out);
                r
            }
            Err(e) => CallToolResult::structured_error(e.body()),
        }
        .into())
    }
}

/// Serves MCP on stdin/stdout until the client closes it. Logs must go to stderr.
/// Each line is checked before rmcp reads it ([`crate::jsonrpc`]): what is not JSON, or too
/// long, is answered here, so every request gets a reply.
pub async fn serve_stdio(mcp: Mcp) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    use rmcp::ServiceExt;
    let (to_rmcp, rmcp_in) = tokio::io::duplex(1 << 16);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(1 << 16);
    let (replies, replied) = tokio::sync::mpsc::unbounded_channel();
    let reader = tokio::spawn(crate::jsonrpc::filter_lines(tokio::io::stdin(), to_rmcp, replies));
    let writer = tokio::spawn(crate::jsonrpc::merge_lines(from_rmcp, replied, tokio::io::stdout()));
    let running = mcp.serve((rmcp_in, rmcp_out)).await?;
    running.waiting().await?;
    reader.await??;
    writer.await??;
    Ok(())
}
