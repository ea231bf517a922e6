"""Errors of the engine as Python exceptions: one class per error code of the servers' API, each
with the code, the message, the request field at fault (where there is one) and, for `busy`, the
seconds to wait before retrying. A failed call changes nothing in the store."""

from __future__ import annotations

import json
from typing import Dict, List, NamedTuple, Optional, Type


class MnemonError(Exception):
    """Any error of the engine."""

    code = "internal"

    def __init__(self, message: str, field: Optional[str] = None, retry_after: Optional[int] = None):
        super().__init__(message)
        self.message = message
        self.field = field
        self.retry_after = retry_after


class InvalidInput(MnemonError, ValueError):
    """A request field is not valid; `field` names it (`memories[2].content`)."""

    code = "invalid_input"


class EmptyMemory(InvalidInput):
    """A memory or a message with no content."""

    code = "empty_memory"


class BudgetTooSmall(InvalidInput):
    """A token budget too small for the context's frame."""

    code = "budget"


class NotFound(MnemonError, LookupError, ValueError):
    """No record with that key in that scope (a `ValueError` too, as mem0 raises for a missing
    memory)."""

    code = "not_found"


class PinDifference(NamedTuple):
    """One pin that differs: its key, the store's value and this configuration's (None: absent)."""

    key: str
    stored: Optional[str]
    expected: Optional[str]


class PinMismatch(MnemonError):
    """The store was built under another configuration (embedder, extractor, lexicons): every
    differing pin is in `differences` (and named in the message); a store of a schema this build
    cannot read has none."""

    code = "pin_mismatch"
    differences: List[PinDifference] = []


class Busy(MnemonError):
    """The store is busy; retry after `retry_after` seconds."""

    code = "busy"


class StoreFull(MnemonError):
    """The store reached its size limit."""

    code = "store_full"


class ModelUnavailable(MnemonError):
    """A model file the engine needs is missing or unreadable; the message names the file and
    the command that fetches it (`mnemon fetch-models`)."""

    code = "model_unavailable"


class Timeout(MnemonError, TimeoutError):
    """The call ran past its time limit and was given up."""

    code = "timeout"


_BY_CODE: Dict[str, Type[MnemonError]] = {
    cls.code: cls
    for cls in (
        MnemonError, InvalidInput, EmptyMemory, BudgetTooSmall, NotFound, PinMismatch, Busy, StoreFull,
        ModelUnavailable, Timeout,
    )
}


def from_native(error: BaseException) -> MnemonError:
    """The exception for a `mnemon._native.NativeError` (its args: code, message, field,
    retry_after, differences as JSON); another code than those above is a plain `MnemonError`
    keeping its code."""
    code, message, field, retry_after, differences = error.args
    cls = _BY_CODE.get(code, MnemonError)
    out = cls(message, field, retry_after)
    if cls is MnemonError:
        out.code = code
    if isinstance(out, PinMismatch) and differences:
        out.differences = [PinDifference(**d) for d in json.loads(differences)]
    return out
