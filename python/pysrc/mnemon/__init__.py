"""mnemon: a deterministic, local-first memory engine for LLM agents.

`Memory` is mem0's `Memory` API over a mnemon store, with mnemon's own calls beside it;
`AsyncMemory` the same as coroutines; `Engine` runs the servers' operations by name. Errors are
the classes of `mnemon.errors`."""

from . import _native
from .engine import Engine
from .memory import AsyncMemory, Memory
from .errors import (
    BudgetTooSmall,
    Busy,
    EmptyMemory,
    InvalidInput,
    MnemonError,
    ModelUnavailable,
    NotFound,
    PinDifference,
    PinMismatch,
    StoreFull,
    Timeout,
)

__all__ = [
    "AsyncMemory",
    "Memory",
    "BudgetTooSmall",
    "Busy",
    "EmptyMemory",
    "Engine",
    "InvalidInput",
    "MnemonError",
    "ModelUnavailable",
    "NotFound",
    "PinDifference",
    "PinMismatch",
    "StoreFull",
    "Timeout",
    "_native",
]
