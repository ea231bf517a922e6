"""mnemon: a deterministic, local-first memory engine for LLM agents."""

from . import _native

__all__ = ["_native"]
