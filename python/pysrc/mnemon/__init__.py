"""mnemon: a deterministic, local-first memory engine for LLM agents.

`Engine` opens a store in this process and runs the servers' operations on it; errors are the
classes of `mnemon.errors`."""

from . import _native
from .engine import Engine
from .errors import (
    BudgetTooSmall,
    Busy,
    EmptyMemory,
    InvalidInput,
    MnemonError,
    NotFound,
    PinMismatch,
    StoreFull,
    Timeout,
)

__all__ = [
    "BudgetTooSmall",
    "Busy",
    "EmptyMemory",
    "Engine",
    "InvalidInput",
    "MnemonError",
    "NotFound",
    "PinMismatch",
    "StoreFull",
    "Timeout",
    "_native",
]
