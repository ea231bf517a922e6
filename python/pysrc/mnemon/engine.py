"""`Engine`: a store opened in this process, running the servers' operations on Python values."""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any, Dict, Iterable, Iterator, Mapping, Optional, Union

from . import _native
from .errors import InvalidInput, MnemonError, from_native

PathLike = Union[str, "os.PathLike[str]"]

EMBEDDERS = ("minilm", "hashing")


@contextlib.contextmanager
def _raising() -> Iterator[None]:
    """Raises the engine's errors as their classes (`mnemon.errors`)."""
    try:
        yield
    except _native.NativeError as e:
        raise from_native(e) from None


class Engine:
    """The engine over a store: a SQLite file or a `postgres://` URL (default: the global store in
    the data directory, `$MNEMON_DATA` or `~/.local/share/mnemon`). `options` takes any other
    option of `mnemon mcp` by its name (`memory_mib=512`). Safe to share between threads; every
    call releases the GIL."""

    def __init__(
        self,
        store: Optional[PathLike] = None,
        *,
        data: Optional[PathLike] = None,
        roots: Iterable[PathLike] = (),
        embedder: str = "minilm",
        models: Optional[PathLike] = None,
        extractor: Optional[PathLike] = None,
        extract_cache: Optional[PathLike] = None,
        options: Optional[Mapping[str, Any]] = None,
    ):
        if embedder not in EMBEDDERS:
            raise InvalidInput(f"embedder must be one of {', '.join(EMBEDDERS)}, not {embedder!r}", "embedder")
        if extract_cache is not None and extractor is None:
            raise InvalidInput("extract_cache needs an extractor", "extract_cache")
        flags = ["--embedder", embedder]
        for name, value in (("--store", store), ("--data", data), ("--models", models)):
            if value is not None:
                flags += [name, os.fspath(value)]
        for root in roots:
            flags += ["--root", os.fspath(root)]
        if extractor is not None:
            flags += ["--extractor", os.fspath(extractor)]
        if extract_cache is not None:
            flags += ["--extract-cache", os.fspath(extract_cache)]
        for name, value in (options or {}).items():
            # Any other option of `mnemon mcp`, by its name (`memory_mib=512`, `spin=True`).
            flag = "--" + str(name).replace("_", "-")
            if value is True:
                flags.append(flag)
            elif value is not False and value is not None:
                flags += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
        self.extractor = extractor
        try:
            with _raising():
                self._native = _native.Engine(flags)
        except MnemonError:
            raise
        except ValueError as e:
            # The flags the native side refused (clap's message names the flag).
            raise InvalidInput(str(e)) from None

    def call(self, operation: str, **args: Any) -> Dict[str, Any]:
        """Runs one operation by its tool name (`save_memories`, `recall_memories`,
        `add_messages`, `search_memories`, `list_memories`, `get_memory`, `update_memory`,
        `delete_memory`, `count_memories`, `copy_memories`, `move_memories`, `export_memories`,
        `forget_user`) on keyword arguments, as the HTTP API takes them (`None` is JSON's null:
        `update_memory(title=None)` clears a title; leave an argument out to leave it as it is);
        its result."""
        with _raising():
            return self._native.invoke(operation, json.dumps(args, allow_nan=False))

    def flush(self, store: Optional[str] = None) -> None:
        """Waits until the store's extraction queue is empty."""
        with _raising():
            self._native.flush(store)

    def backup(self, out: PathLike, store: Optional[str] = None) -> int:
        """Copies the store to `out` while it stays usable; the bytes written."""
        with _raising():
            return self._native.backup(os.fspath(out), store)
