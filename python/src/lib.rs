//! `mnemon._native`: the engine for the `mnemon` Python package. One [`Engine`] holds the
//! servers' service over a store (the same operations, validation and results as MCP and the
//! HTTP API, in process: JSON in, JSON or Python values out); [`cli`] runs the `mnemon` command. Every call
//! releases the GIL, and one engine is safe to share between threads.

use std::sync::Arc;

use mnemon::Scope;
use mnemon_server::api::{RecallRounds, Target};
use mnemon_server::{ApiError, Principal, Service};
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    _native,
    NativeError,
    PyException,
    "An error of the engine: `args` holds its code, message and field."
);

/// An [`ApiError`] as a Python exception: `NativeError(code, message, field, retry_after,
/// differences)`, the last a JSON list of the differing pins of a `pin_mismatch` (else `None`).
fn raised(e: ApiError) -> PyErr {
    let differences = e.differences.as_ref().and_then(|d| serde_json::to_string(d).ok());
    NativeError::new_err((e.code.as_str().to_owned(), e.message, e.field, e.retry_after, differences))
}

/// The tool an operation names, and its arguments parsed from JSON text.
fn operation_and_args(
    operation: &str,
    args: &str,
) -> PyResult<(&'static mnemon_server::operations::Operation, serde_json::Value)> {
    let tool = mnemon_server::operations::tool(operation)
        .ok_or_else(|| PyValueError::new_err(format!("no operation named {operation:?}")))?;
    let args = serde_json::from_str(args)
        .map_err(|e| PyValueError::new_err(format!("arguments are not JSON: {e}")))?;
    Ok((tool, args))
}

/// The engine over one store (and the stores its data directory and roots hold).
#[pyclass(frozen, module = "mnemon._native")]
struct Engine {
    service: Arc<Service>,
}

/// Whose memory: the user (`default` when none is named) and agent, as the servers read them.
fn scope<'a>(user: Option<&'a str>, agent: Option<&'a str>) -> Scope<'a> {
    Service::scope(&Target { user, agent, store: None })
}

#[pymethods]
impl Engine {
    /// Opens the service configured by `mnemon mcp`'s flags (`["--store", path, "--embedder",
    /// "minilm", …]`).
    #[new]
    fn new(py: Python<'_>, flags: Vec<String>) -> PyResult<Engine> {
        let args = std::iter::once("mnemon".to_owned()).chain(flags);
        let service = py.detach(|| mnemon_cli::service_from_flags(args)).map_err(|e| {
            if let Some(open) = e.downcast_ref::<mnemon_cli::OpenError>() {
                raised(open.0.clone())
            } else if let Some(engine) = e.downcast_ref::<mnemon::Error>() {
                raised(ApiError::from(engine.clone()))
            } else {
                PyValueError::new_err(format!("{e:#}"))
            }
        })?;
        Ok(Engine { service })
    }

    /// Runs one operation (an MCP tool's name: `add_messages`, `recall_memories`, …) on its
    /// JSON arguments; its JSON result (as the servers give it).
    fn call(&self, py: Python<'_>, operation: &str, args: &str) -> PyResult<String> {
        let (tool, args) = operation_and_args(operation, args)?;
        let service = self.service.clone();
        let out = py.detach(move || tool.value(&service, &Principal::Admin, args)).map_err(raised)?;
        Ok(out.to_string())
    }

    /// Runs one operation on its JSON arguments, as [`Engine::call`] does; its result as Python
    /// values (dicts, lists, strings, numbers), built from the typed result without JSON.
    fn invoke(&self, py: Python<'_>, operation: &str, args: &str) -> PyResult<Py<PyAny>> {
        let (tool, args) = operation_and_args(operation, args)?;
        let service = self.service.clone();
        let out = py.detach(move || tool.run(&service, &Principal::Admin, args)).map_err(raised)?;
        Ok(pythonize::pythonize(py, &*out).map_err(|e| PyValueError::new_err(e.to_string()))?.unbind())
    }

    /// The records a scope holds, as JSON: `rounds` (oldest first), `facts` (active ones, in
    /// the order they were stored), `every_fact` (superseded ones too) or `decisions` (the
    /// decision log, in logical order).
    #[pyo3(signature = (what, user=None, agent=None, store=None))]
    fn records(
        &self,
        py: Python<'_>,
        what: &str,
        user: Option<&str>,
        agent: Option<&str>,
        store: Option<&str>,
    ) -> PyResult<String> {
        let scope = scope(user, agent);
        py.detach(|| {
            let memory = self.service.memory(store)?;
            let json = match what {
                "rounds" => serde_json::to_string(&memory.rounds(scope)?),
                "facts" => serde_json::to_string(&memory.active_facts(scope)?),
                "every_fact" => serde_json::to_string(&memory.all_facts(scope)?),
                "decisions" => serde_json::to_string(&memory.decisions(scope)?),
                _ => {
                    return Err(ApiError::input(
                        "what",
                        format!("{what:?} is not rounds, facts, every_fact or decisions"),
                    ))
                }
            };
            json.map_err(ApiError::internal)
        })
        .map_err(raised)
    }

    /// The rounds that best answer a question, ranked (not rendered), with their facts, as
    /// JSON: `{"query", "user_id", "agent_id", "store", "top_k", "date", "as_of"}` in.
    fn recall(&self, py: Python<'_>, args: &str) -> PyResult<String> {
        let args: serde_json::Value = serde_json::from_str(args)
            .map_err(|e| PyValueError::new_err(format!("arguments are not JSON: {e}")))?;
        let args: RecallRounds = mnemon_server::error::parse(args).map_err(raised)?;
        py.detach(|| serde_json::to_string(&self.service.recall_rounds(&args)?).map_err(ApiError::internal))
            .map_err(raised)
    }

    /// The relevance scores (`0..=1`) of these cosines under the store's embedder's
    /// calibration: what a search hit's `score` is for its cosine.
    #[pyo3(signature = (cosines, store=None))]
    fn relevance_scores(&self, py: Python<'_>, cosines: Vec<f32>, store: Option<&str>) -> PyResult<Vec<f32>> {
        py.detach(|| {
            let calibration = self.service.memory(store)?.calibration()?;
            Ok::<_, ApiError>(cosines.into_iter().map(|c| calibration.score(c)).collect())
        })
        .map_err(raised)
    }

    /// The users the store holds records of, sorted, as JSON.
    #[pyo3(signature = (store=None))]
    fn users(&self, py: Python<'_>, store: Option<&str>) -> PyResult<String> {
        py.detach(|| {
            let users = self.service.memory(store)?.user_names()?;
            serde_json::to_string(&users).map_err(ApiError::internal)
        })
        .map_err(raised)
    }

    /// Loads a JSONL dump into the store (created with the dump's pins when there is none; an
    /// existing one must have the same pins, and the dump's users no records there yet); the
    /// report as JSON.
    #[pyo3(signature = (dump, store=None))]
    fn import_dump(&self, py: Python<'_>, dump: &str, store: Option<&str>) -> PyResult<String> {
        py.detach(|| {
            let path = self.service.path_of(store)?;
            let report = mnemon::Memory::builder(path).import(dump)?;
            serde_json::to_string(&report).map_err(ApiError::internal)
        })
        .map_err(raised)
    }

    /// Imports a chat history file (`chatgpt`, `claude` or `jsonl`) into the scope, one
    /// conversation per session and transaction; the report as JSON.
    #[pyo3(signature = (path, format, user=None, agent=None, store=None))]
    fn import_chats(
        &self,
        py: Python<'_>,
        path: std::path::PathBuf,
        format: &str,
        user: Option<&str>,
        agent: Option<&str>,
        store: Option<&str>,
    ) -> PyResult<String> {
        py.detach(|| {
            let args =
                serde_json::json!({"format": format, "user_id": user, "agent_id": agent, "store": store});
            let req: mnemon_server::api::ImportChats = mnemon_server::error::parse(args)?;
            let file = std::fs::File::open(&path)
                .map_err(|e| ApiError::input("path", format!("cannot be read: {e}")))?;
            let report = self.service.import_chats(&req, std::io::BufReader::new(file))?;
            serde_json::to_string(&report).map_err(ApiError::internal)
        })
        .map_err(raised)
    }

    /// Waits until the store's extraction queue is empty.
    #[pyo3(signature = (store=None))]
    fn flush(&self, py: Python<'_>, store: Option<&str>) -> PyResult<()> {
        py.detach(|| self.service.memory(store)?.flush().map_err(ApiError::from)).map_err(raised)
    }

    /// Copies the store to `out` while it stays usable; the bytes written.
    #[pyo3(signature = (out, store=None))]
    fn backup(&self, py: Python<'_>, out: std::path::PathBuf, store: Option<&str>) -> PyResult<u64> {
        py.detach(|| self.service.memory(store)?.backup(&out).map_err(ApiError::from)).map_err(raised)
    }
}

/// Which of `metadata` (a JSON array of objects, or nulls for none) pass the metadata condition
/// `condition` (JSON, mem0's filter language), read and tested by the engine's own filter; a
/// condition that cannot be read is a `NativeError` naming its place under `filter.metadata`.
#[pyfunction]
fn metadata_matches(condition: &str, metadata: &str) -> PyResult<Vec<bool>> {
    let bad = |e: serde_json::Error| raised(ApiError::input("filter.metadata", e.to_string()));
    let condition: serde_json::Value = serde_json::from_str(condition).map_err(bad)?;
    let items: Vec<serde_json::Value> = serde_json::from_str(metadata).map_err(bad)?;
    let filter =
        mnemon::notes::MetadataFilter::parse(&condition, "filter.metadata").map_err(|e| raised(e.into()))?;
    Ok(items.iter().map(|m| filter.holds(m)).collect())
}

/// Runs the `mnemon` command on `args` (the first is the program's name); its exit status.
#[pyfunction]
fn cli(py: Python<'_>, args: Vec<String>) -> i32 {
    let code = py.detach(|| mnemon_cli::main_with(args));
    // `ExitCode` hides its number: success is 0, anything else 1.
    if code == std::process::ExitCode::SUCCESS {
        0
    } else {
        1
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Engine>()?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(metadata_matches, m)?)?;
    m.add("NativeError", m.py().get_type::<NativeError>())?;
    Ok(())
}
