//! `mnemon._native`: the engine for the `mnemon` Python package. One [`Engine`] holds the
//! servers' service over a store (the same operations, validation and results as MCP and the
//! HTTP API, in process: JSON in, JSON out); [`cli`] runs the `mnemon` command. Every call
//! releases the GIL, and one engine is safe to share between threads.

use std::sync::Arc;

use mnemon_server::{ApiError, Service};
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    _native,
    NativeError,
    PyException,
    "An error of the engine: `args` holds its code, message and field."
);

/// An [`ApiError`] as a Python exception: `NativeError(code, message, field, retry_after)`.
fn raised(e: ApiError) -> PyErr {
    NativeError::new_err((e.code.as_str().to_owned(), e.message, e.field, e.retry_after))
}

/// The engine over one store (and the stores its data directory and roots hold).
#[pyclass(frozen, module = "mnemon._native")]
struct Engine {
    service: Arc<Service>,
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
    /// JSON arguments; its JSON result.
    fn call(&self, py: Python<'_>, operation: &str, args: &str) -> PyResult<String> {
        let tool = mnemon_server::tools::find(operation)
            .ok_or_else(|| PyValueError::new_err(format!("no operation named {operation:?}")))?;
        let args: serde_json::Value = serde_json::from_str(args)
            .map_err(|e| PyValueError::new_err(format!("arguments are not JSON: {e}")))?;
        let service = self.service.clone();
        let out = py.detach(move || (tool.call)(&service, args)).map_err(raised)?;
        Ok(out.to_string())
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
    m.add("NativeError", m.py().get_type::<NativeError>())?;
    Ok(())
}
