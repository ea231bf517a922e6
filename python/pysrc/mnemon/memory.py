"""`Memory`: mem0's `Memory` API (mem0ai 2.2.1, and the 1.x call forms) over a mnemon store,
plus mnemon's own calls; `AsyncMemory`: the same as coroutines.

How mem0's concepts map (README, "Python"):

- `add(..., infer=True)` (the default) stores the messages verbatim as conversation rounds, each
  turn with the call's metadata; when the memory has an extractor, facts are extracted from them
  before `add` returns, and a fact that updates an older one supersedes it (mem0's `UPDATE`
  event). `infer=False` stores each message as a direct memory (a note) with its metadata.
- `search` ranks notes, facts and the rounds no fact was extracted from, together, by their
  relevance `score`: the cosine between the query and the record through the embedder's
  calibration, so that 0.50 is the floor of `low` relevance (an unrelated record scores below
  it), 0.75 of `medium` and 0.90 of `high`; `threshold` drops records below it.
- `history` reads the decision log: a fact that superseded another, and the one it superseded,
  show it as an `UPDATE` with both values.
- ids are mnemon's record keys: `n-…` for notes, a round's key, `<round key>/<n>` for facts.
- `user_id` and `agent_id` are mnemon's scope; `run_id` is a note's metadata key `run_id` and a
  round's session.

The library reads no clock. This layer does in two places, and only there: the store's service
stamps the current UTC time on writes that carry none (mem0's `add` has no timestamp; here
`timestamp=` and a message's `ts` give one), and `show_expired=False` compares
`expiration_date` with today's UTC date.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import functools
import hashlib
import json
import logging
import os
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from .engine import EMBEDDERS, Engine, PathLike, _raising
from .errors import InvalidInput, NotFound

log = logging.getLogger("mnemon")

ENTITY_KEYS = ("user_id", "agent_id", "run_id")
# Keys mem0 lifts out of a memory's payload to the top level of its dict.
PROMOTED = ("user_id", "agent_id", "run_id", "actor_id", "role", "attributed_to", "expiration_date")
DEFAULT_USER = "default"
PROCEDURAL = "procedural_memory"
_UNSET = object()
# Records the engine returns per call at most.
_PAGE = 1000

Messages = Union[str, Mapping[str, Any], Sequence[Mapping[str, Any]]]


def _entity(value: Any, name: str) -> Optional[str]:
    """mem0's id rules: coerced to str, trimmed, never empty, no inner whitespace."""
    if value is None:
        return None
    text = str(value).strip()
    if not text:
        raise InvalidInput(f"Invalid {name}: cannot be empty or whitespace-only. Provide a valid identifier.", name)
    if any(c.isspace() for c in text):
        raise InvalidInput(f"Invalid {name}: cannot contain whitespace. Provide a valid identifier without spaces.", name)
    return text


class _Scope:
    """Whose records a call reaches: mnemon's user and agent, and mem0's run."""

    def __init__(self, user_id: Optional[str], agent_id: Optional[str], run_id: Optional[str]):
        self.user_id, self.agent_id, self.run_id = user_id, agent_id, run_id

    @property
    def user(self) -> str:
        return self.user_id or DEFAULT_USER

    def target(self) -> Dict[str, Any]:
        """The engine's scope arguments."""
        out: Dict[str, Any] = {"user_id": self.user}
        if self.agent_id is not None:
            out["agent_id"] = self.agent_id
        return out

    def stamp(self) -> Dict[str, Any]:
        """The entity keys a result dict carries."""
        return {k: v for k, v in (("user_id", self.user_id), ("agent_id", self.agent_id), ("run_id", self.run_id)) if v}


def _split_filters(
    filters: Optional[Mapping[str, Any]], method: str, **top_level: Any
) -> Tuple[_Scope, Optional[Dict[str, Any]]]:
    """The scope and the metadata conditions of a `filters` dict (None: none); the entity ids
    may also come as keyword arguments (mem0 1.x), and must then agree with `filters`."""
    if filters is not None and not isinstance(filters, Mapping):
        raise InvalidInput("filters must be a dict", "filters")
    rest = dict(filters or {})
    ids: Dict[str, Optional[str]] = {}
    for key in ENTITY_KEYS:
        given, in_filters = top_level.get(key), rest.pop(key, None)
        if given is not None and in_filters is not None and str(given).strip() != str(in_filters).strip():
            raise InvalidInput(f"{key} is given twice, as {given!r} and in filters as {in_filters!r}", key)
        ids[key] = _entity(given if given is not None else in_filters, key)
    if not any(ids.values()):
        raise InvalidInput(
            f"{method}() needs at least one of user_id, agent_id, run_id "
            "(filters={'user_id': 'u1'}, or user_id='u1')",
            "filters",
        )
    return _Scope(ids["user_id"], ids["agent_id"], ids["run_id"]), rest or None


def _note_condition(scope: _Scope, conditions: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The metadata condition notes must pass: the caller's, and the run's."""
    if scope.run_id is None:
        return conditions
    run = {"run_id": scope.run_id}
    return {"AND": [run, conditions]} if conditions else run


def _md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def _today() -> str:
    return _dt.datetime.now(_dt.timezone.utc).date().isoformat()


def _expired(metadata: Mapping[str, Any]) -> bool:
    until = metadata.get("expiration_date")
    return isinstance(until, str) and until[:10] < _today()


def _expiration(value: Any) -> Optional[str]:
    """mem0's `expiration_date`: a date, a datetime or `YYYY-MM-DD` text."""
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        return value.date().isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return _dt.date.fromisoformat(value.strip()[:10]).isoformat()
        except ValueError:
            pass
    raise InvalidInput(f"expiration_date must be a date or YYYY-MM-DD text, not {value!r}", "expiration_date")


def _timestamp(value: Any) -> Optional[str]:
    """A caller's time: ISO 8601 text, a datetime (naive: UTC) or Unix seconds."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidInput("timestamp must be ISO 8601 text, a datetime or Unix seconds", "timestamp")
    if isinstance(value, (int, float)):
        value = _dt.datetime.fromtimestamp(value, _dt.timezone.utc)
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return value.isoformat()
    if isinstance(value, str):
        return value
    raise InvalidInput("timestamp must be ISO 8601 text, a datetime or Unix seconds", "timestamp")


def _messages(messages: Messages) -> List[Mapping[str, Any]]:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if isinstance(messages, Mapping):
        return [messages]
    if isinstance(messages, list):
        return messages
    raise InvalidInput("messages must be str, dict, or list[dict]", "messages")


def _note_item(note: Mapping[str, Any], score: Optional[float] = None, *, with_score: bool = True) -> Dict[str, Any]:
    """A note as mem0's memory dict."""
    meta = dict(note.get("metadata") or {})
    item: Dict[str, Any] = {
        "id": note["key"],
        "memory": note["content"],
        "hash": _md5(note["content"]),
        "metadata": None,
        "created_at": note.get("ts"),
        "updated_at": note.get("updated"),
    }
    if with_score:
        item["score"] = score
    _with_promoted(item, meta)
    if note.get("agent"):
        item["agent_id"] = note["agent"]
    item["record"] = "note"
    return item


def _round_of(fact_key: str) -> str:
    """The key of the round a fact came from (a fact's key is `<round key>/<n>`)."""
    return fact_key.rsplit("/", 1)[0]


def _round_metadata(rnd: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """The caller's metadata of a round: its turns' metadata merged, the user's turn first."""
    merged: Dict[str, Any] = {}
    for turn in sorted(rnd.get("turns", []), key=lambda t: t.get("role") != "user"):
        for key, value in (turn.get("metadata") or {}).items():
            merged.setdefault(key, value)
    return merged or None


def _with_promoted(item: Dict[str, Any], metadata: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """mem0's split of a payload: the promoted keys at the top level, the rest in `metadata`."""
    rest = dict(metadata or {})
    for key in PROMOTED:
        if key in rest:
            item[key] = rest.pop(key)
    item["metadata"] = rest or None
    return item


def _fact_item(
    fact: Mapping[str, Any],
    score: Optional[float] = None,
    rnd: Optional[Mapping[str, Any]] = None,
    *,
    with_score: bool = True,
) -> Dict[str, Any]:
    """A fact as mem0's memory dict: its round's metadata, and where it comes from (`round`,
    `valid_time`, the triple, what it `supersedes`) at the top level."""
    item: Dict[str, Any] = {
        "id": fact["key"],
        "memory": fact["content"],
        "hash": _md5(fact["content"]),
        "metadata": None,
        "created_at": rnd.get("ts") if rnd else None,
        "updated_at": None,
    }
    if with_score:
        item["score"] = score
    _with_promoted(item, _round_metadata(rnd) if rnd else None)
    if fact.get("agent"):
        item["agent_id"] = fact["agent"]
    item["record"] = "fact"
    item["round"] = _round_of(fact["key"])
    for key in ("valid_time", "mention", "subject", "predicate", "object"):
        if fact.get(key) is not None:
            item[key] = fact[key]
    if fact.get("supersedes"):
        item["supersedes"] = fact["supersedes"]
    return item


def _round_text(turns: Iterable[Mapping[str, Any]]) -> str:
    turns = list(turns)
    said = [t["content"] for t in turns if t.get("role") == "user"]
    return "\n".join(said) if said else "\n".join(t["content"] for t in turns)


def _round_item(rnd: Mapping[str, Any], score: Optional[float] = None, *, with_score: bool = True) -> Dict[str, Any]:
    """A round as mem0's memory dict: what the user said, the metadata its messages came with;
    its `session` and whole `turns` at the top level."""
    text = _round_text(rnd["turns"])
    item: Dict[str, Any] = {
        "id": rnd["key"],
        "memory": text,
        "hash": _md5(text),
        "metadata": None,
        "created_at": rnd.get("ts"),
        "updated_at": None,
    }
    if with_score:
        item["score"] = score
    _with_promoted(item, _round_metadata(rnd))
    if rnd.get("agent"):
        item["agent_id"] = rnd["agent"]
    item["record"] = "round"
    item["session"] = rnd["session"]
    item["turns"] = [{"role": t["role"], "content": t["content"]} for t in rnd["turns"]]
    return item


def _without_identity(metadata: Dict[str, Any], context: str) -> Dict[str, Any]:
    """Caller metadata without identity keys: scope comes from the entity ids only."""
    for key in ENTITY_KEYS + ("actor_id",):
        if key in metadata:
            log.warning("%s: ignoring metadata[%r]: identity fields cannot be set through metadata", context, key)
            metadata.pop(key)
    return metadata


class Memory:
    """A mnemon store behind mem0's `Memory` API (and mnemon's own calls). Safe to share between
    threads: every call releases the GIL.

    `Memory()` opens the global store in the data directory (`$MNEMON_DATA`, else
    `~/.local/share/mnemon`) with the MiniLM embedder, and the extractor `$MNEMON_EXTRACTOR` names
    (a GGUF or a JSON script of facts, `default`, or `none`), else the pinned one when its model is
    in the models folder. `Memory.from_config(dict)` and `Memory(config)` take mem0's config
    shape (`vector_store.config.path` is the store; an `llm` or `embedder` of another provider is
    noted in the log and not used: mnemon runs its own pinned local models) or mnemon's keys
    (`store`, `embedder`, `extractor`, `extract_cache`, `models`, `data`, `roots`, and any
    `mnemon mcp` option by its name). `Memory.open(location, ...)` takes them as arguments."""

    def __init__(self, config: Optional[Mapping[str, Any]] = None):
        if config is not None and not isinstance(config, Mapping):
            dump = getattr(config, "model_dump", None)
            if dump is None:
                raise InvalidInput("config must be a dict", "config")
            config = dump()
        self._engine = Engine(**_engine_options(dict(config or {})))
        self._extracts = self._engine.extractor is not None

    @classmethod
    def from_config(cls, config_dict: Mapping[str, Any]) -> "Memory":
        """mem0's constructor from a config dict (see the class)."""
        return cls(config_dict)

    @classmethod
    def open(
        cls,
        location: Optional[PathLike] = None,
        *,
        embedder: str = "minilm",
        extractor: Optional[PathLike] = None,
        config: Optional[Mapping[str, Any]] = None,
        **options: Any,
    ) -> "Memory":
        """Opens a store: a SQLite file (created if missing), a project directory or a
        `postgres://` URL; `embedder` is `minilm` or `hashing` (no model, no meaning: for tests);
        `extractor` a GGUF model (`default`: the pinned one in the models folder) or a JSON script
        of facts; `config` and `options` any other engine option (`extract_cache`, `models`,
        `memory_mib`, …)."""
        merged = dict(config or {})
        merged.update(options)
        merged["embedder"] = embedder
        merged["extractor"] = extractor
        if location is not None:
            merged["store"] = location
        return cls(merged)

    # --- mem0's API -------------------------------------------------------------------------

    def add(
        self,
        messages: Messages,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        metadata: Optional[Dict[str, Any]] = None,
        timestamp: Any = None,
        expiration_date: Any = None,
        infer: bool = True,
        memory_type: Optional[str] = None,
        prompt: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Stores messages: `infer=True` as conversation rounds (with facts when the memory has an
        extractor), each turn keeping `metadata`; `infer=False` each message as a note with it. `messages` is a string
        (a user message), one message dict or a list of them; a message may carry `ts` (its time),
        `name` (the speaker) and `id`. `timestamp` is the default time (mem0's open-source
        `Memory` refuses it; here it is kept). Returns `{"results": [...]}`, one dict per record
        written, with its `event` (`ADD`, or `UPDATE` for a fact that superseded another, with
        `previous_memory` and `previous_id`) and `record` (`note`, `round` or `fact`)."""
        scope = _Scope(_entity(user_id, "user_id"), _entity(agent_id, "agent_id"), _entity(run_id, "run_id"))
        if not (scope.user_id or scope.agent_id or scope.run_id):
            raise InvalidInput("At least one of 'user_id', 'agent_id', or 'run_id' must be provided.", "user_id")
        if memory_type is not None and memory_type != PROCEDURAL:
            raise InvalidInput(
                f"Invalid 'memory_type'. Please pass {PROCEDURAL} to create procedural memories.", "memory_type"
            )
        if prompt is not None:
            raise InvalidInput("prompt: mnemon extracts with its pinned prompt; a custom one is not supported", "prompt")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidInput("metadata must be a dict", "metadata")
        ts = _timestamp(timestamp)
        expires = _expiration(expiration_date)
        listed = _messages(messages)
        metadata = _without_identity(dict(metadata or {}), "add()")
        if infer and memory_type is None:
            if expires:
                metadata["expiration_date"] = expires
            return {"results": self._add_rounds(listed, scope, ts, metadata)}
        return {"results": self._add_notes(listed, scope, ts, metadata, expires, memory_type)}

    def _add_notes(
        self,
        listed: List[Mapping[str, Any]],
        scope: _Scope,
        ts: Optional[str],
        metadata: Dict[str, Any],
        expires: Optional[str],
        memory_type: Optional[str],
    ) -> List[Dict[str, Any]]:
        memories = []
        for i, m in enumerate(listed):
            if not isinstance(m, Mapping) or m.get("role") is None or m.get("content") is None:
                raise InvalidInput("a message needs `role` and `content`", f"messages[{i}]")
            if m["role"] == "system":
                continue
            meta = dict(metadata)
            meta["role"] = m["role"]
            if m.get("name"):
                meta["actor_id"] = m["name"]
            if scope.run_id:
                meta["run_id"] = scope.run_id
            if expires:
                meta["expiration_date"] = expires
            memory: Dict[str, Any] = {"content": m["content"], "metadata": meta}
            if memory_type == PROCEDURAL:
                memory["kind"] = "procedural"
            when = m.get("ts") or ts
            if when:
                memory["ts"] = _timestamp(when)
            memories.append(memory)
        if not memories:
            return []
        saved = self._engine.call("save_memories", memories=memories, **scope.target())["memories"]
        out = []
        for memory, result in zip(memories, saved):
            item = {"id": result["key"], "memory": memory["content"], "event": "ADD" if result["stored"] else "NONE"}
            item["record"] = "note"
            out.append(item)
        return out

    def _add_rounds(
        self, listed: List[Mapping[str, Any]], scope: _Scope, ts: Optional[str], metadata: Dict[str, Any]
    ) -> List[Dict[str, Any]]:
        sent = []
        for i, m in enumerate(listed):
            if not isinstance(m, Mapping) or m.get("role") is None or m.get("content") is None:
                raise InvalidInput("a message needs `role` and `content`", f"messages[{i}]")
            if m["role"] == "system":
                continue
            message: Dict[str, Any] = {"role": m["role"], "content": m["content"]}
            when = m.get("ts") or ts
            if when:
                message["ts"] = _timestamp(when)
            if scope.run_id:
                message["session"] = scope.run_id
            if m.get("name"):
                message["speaker"] = m["name"]
            if m.get("id") is not None:
                message["id"] = str(m["id"])
            if metadata:
                message["metadata"] = metadata
            sent.append(message)
        if not sent:
            return []
        added = self._engine.call("add_messages", messages=sent, **scope.target())
        stored = added["stored"]
        out = []
        rounds = {r["key"]: r for r in self._records("rounds", scope)} if stored else {}
        for key in stored:
            if key in rounds:
                item = _round_item(rounds[key], with_score=False)
                out.append({"id": key, "memory": item["memory"], "event": "ADD", "record": "round"})
        if self._extracts and stored:
            self._engine.flush()
            out.extend(self._new_facts(set(stored), scope))
        return out

    def _new_facts(self, rounds: set, scope: _Scope) -> List[Dict[str, Any]]:
        """The facts extracted from `rounds`, with what each superseded."""
        facts = [f for f in self._records("facts", scope) if _round_of(f["key"]) in rounds]
        if not facts:
            return []
        superseded: Dict[str, List[str]] = {}
        for d in self._records("decisions", scope):
            if d["kind"] == "fact.superseded" and d.get("other"):
                superseded.setdefault(d["other"], []).append(d["record"])
        out = []
        for f in facts:
            item: Dict[str, Any] = {"id": f["key"], "memory": f["content"], "event": "ADD", "record": "fact"}
            older = superseded.get(f["key"])
            if older:
                previous = self._engine.call("get_memory", key=older[-1], **scope.target())
                item.update(event="UPDATE", previous_memory=previous["content"], previous_id=older[-1])
            out.append(item)
        return out

    def search(
        self,
        query: str,
        *,
        top_k: int = 20,
        filters: Optional[Dict[str, Any]] = None,
        threshold: Optional[float] = 0.1,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        limit: Optional[int] = None,
        rerank: bool = False,
        explain: bool = False,
        reference_date: Any = None,
        show_expired: bool = False,
        date: Optional[str] = None,
    ) -> Dict[str, Any]:
        """The records that best match `query`: notes, facts and rounds no fact came from,
        ranked together by `score`, the relevance of the record to the query (its cosine through
        the embedder's calibration: 0.50 and above is relevant), those below `threshold` dropped; at most `top_k` (`limit`, mem0 1.x). `filters` holds the
        entity ids (or pass them as keywords, mem0 1.x) and metadata conditions (`{"key": value}`,
        `{"key": {"gte": 3}}`, `eq ne in nin gt gte lt lte contains icontains`, `"*"`, `AND`
        `OR` `NOT`): a note's metadata, a round's (what its messages came with), a fact's round's.
        `rerank` and `explain` are mem0 options without a counterpart here: refused when true."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query must be a non-empty string", "query")
        if rerank:
            raise InvalidInput("rerank: mnemon has no reranker; its ranking is deterministic", "rerank")
        if explain:
            raise InvalidInput("explain: not supported; every result carries its score", "explain")
        top_k = _check_top_k(limit if limit is not None else top_k)
        if threshold is None:
            threshold = 0.1
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise InvalidInput(f"Invalid threshold: {threshold!r}. Must be between 0 and 1 (inclusive).", "threshold")
        scope, conditions = _split_filters(filters, "search", user_id=user_id, agent_id=agent_id, run_id=run_id)
        if reference_date is not None and date is None:
            date = _timestamp(reference_date)
        if top_k == 0:
            return {"results": []}
        args: Dict[str, Any] = {"query": query, "limit": min(top_k, _PAGE), **scope.target()}
        if date:
            args["date"] = date
        notes = _note_condition(scope, conditions)
        found = self._engine.call("search_memories", **args, **_filtered(notes), facts=notes is None)
        ranked: List[Dict[str, Any]] = []
        for hit in found["hits"]:
            note = hit["note"]
            if not show_expired and _expired(note.get("metadata") or {}):
                continue
            ranked.append(_note_item(note, hit["score"]))
        # Facts and rounds: a round keeps the metadata its messages came with, a fact its round's;
        # a condition or a run is tested after ranking, on four times as many (as mem0 does).
        narrowed = conditions is not None or scope.run_id is not None
        depth = min(_PAGE, max(4 * top_k, 60)) if narrowed else min(top_k, _PAGE)
        if notes is not None:
            found = self._engine.call("search_memories", **dict(args, limit=depth), facts=True)
        recall: Dict[str, Any] = {"query": query, "top_k": depth, **scope.target()}
        if date:
            recall["date"] = date
        recalled = json.loads(self._native("recall", json.dumps(recall)))["rounds"]
        rounds = {r["key"]: r for r in recalled}
        facts = found.get("facts", [])
        if facts and (narrowed or not show_expired):
            # A fact's round may rank below the recalled ones: read what is missing.
            for key in {_round_of(h["fact"]["key"]) for h in facts} - set(rounds):
                rounds[key] = self._engine.call("get_memory", key=key, **scope.target())
        keep = self._passing(conditions, scope, list(rounds.values()), show_expired)
        for hit in facts:
            rnd = rounds.get(_round_of(hit["fact"]["key"]))
            if rnd is None or keep(rnd):
                ranked.append(_fact_item(hit["fact"], hit["score"], rnd))
        extracted: Optional[set] = None
        bare: List[Dict[str, Any]] = []
        for rnd in recalled:
            if rnd["facts"] or not keep(rnd):
                continue
            if extracted is None:
                extracted = self._extracted_rounds(scope)
            if rnd["key"] not in extracted:
                bare.append(rnd)
        if bare:
            scores = self._native("relevance_scores", [r["cosine"] for r in bare], None)
            ranked.extend(_round_item(rnd, score) for rnd, score in zip(bare, scores))
        ranked = [_stamped(r, scope) for r in ranked if r["score"] >= threshold]
        order = {"note": 0, "fact": 1, "round": 2}
        ranked.sort(key=lambda r: (-r["score"], order[r["record"]]))
        return {"results": ranked[:top_k]}

    def get(self, memory_id: str) -> Optional[Dict[str, Any]]:
        """The record with this id as mem0's memory dict (with `score` None), or None."""
        found = self._locate(memory_id)
        if found is None:
            return None
        user, record = found
        kind = record.get("record")
        if kind == "note":
            item = _note_item(record)
        elif kind == "fact":
            rnd = self._engine.call("get_memory", key=_round_of(memory_id), user_id=user)
            item = _fact_item(record, None, rnd)
        else:
            item = _round_item(record)
        item.setdefault("user_id", user)
        return item

    def get_all(
        self,
        *,
        filters: Optional[Dict[str, Any]] = None,
        top_k: int = 20,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        limit: Optional[int] = None,
        show_expired: bool = False,
    ) -> Dict[str, Any]:
        """The scope's records, at most `top_k` (`limit`, mem0 1.x): notes newest first, then
        active facts newest first, then the rounds no fact came from, newest first. `filters` as
        in `search` (a round's metadata is what its messages came with; a fact's, its round's)."""
        top_k = _check_top_k(limit if limit is not None else top_k)
        scope, conditions = _split_filters(filters, "get_all", user_id=user_id, agent_id=agent_id, run_id=run_id)
        out: List[Dict[str, Any]] = []
        for note in self._listed(scope, _note_condition(scope, conditions)):
            if len(out) >= top_k:
                break
            if show_expired or not _expired(note.get("metadata") or {}):
                out.append(_note_item(note, with_score=False))
        if len(out) < top_k:
            rounds = self._records("rounds", scope)
            keep = self._passing(conditions, scope, rounds, show_expired)
            by_key = {r["key"]: r for r in rounds}
            with_facts = self._extracted_rounds(scope)
            for f in reversed(self._records("facts", scope)):
                rnd = by_key.get(_round_of(f["key"]))
                if rnd is not None and keep(rnd):
                    out.append(_fact_item(f, None, rnd, with_score=False))
            for r in reversed(rounds):
                if r["key"] not in with_facts and keep(r):
                    out.append(_round_item(r, with_score=False))
        return {"results": [_stamped(r, scope) for r in out[:top_k]]}

    def update(
        self,
        memory_id: str,
        text: Optional[str] = None,
        metadata: Optional[Dict[str, Any]] = None,
        expiration_date: Any = _UNSET,
        data: Optional[str] = None,
    ) -> Dict[str, str]:
        """Changes a note's text and metadata (merged into what it has; identity keys are
        ignored) or its `expiration_date` (None clears it). Facts and rounds are what was said:
        they cannot be edited (delete them instead)."""
        if text is None:
            text = data
        if text is None and metadata is None and expiration_date is _UNSET:
            raise InvalidInput("At least one of text, metadata, or expiration_date must be provided.", "text")
        found = self._locate(memory_id)
        if found is None:
            raise NotFound(f"Memory with id {memory_id} not found", "memory_id")
        user, record = found
        if record.get("record") != "note":
            raise InvalidInput(
                f"{memory_id} is a {record.get('record')}: facts and rounds record what was said and cannot be "
                "edited; delete it, or add what changed",
                "memory_id",
            )
        args: Dict[str, Any] = {"key": memory_id, "user_id": user}
        if text is not None:
            args["content"] = text
        if metadata is not None or expiration_date is not _UNSET:
            merged = dict(record.get("metadata") or {})
            merged.update(_without_identity(dict(metadata or {}), "update()"))
            if expiration_date is not _UNSET:
                until = _expiration(expiration_date)
                if until is None:
                    merged.pop("expiration_date", None)
                else:
                    merged["expiration_date"] = until
            args["metadata"] = merged
        self._engine.call("update_memory", **args)
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str) -> Dict[str, str]:
        """Deletes a note, a round (with its facts) or a fact; nothing of it stays in the store."""
        found = self._locate(memory_id)
        if found is None:
            raise NotFound(f"Memory with id {memory_id} not found", "memory_id")
        self._engine.call("delete_memory", key=memory_id, user_id=found[0])
        return {"message": "Memory deleted successfully!"}

    def delete_all(
        self, user_id: Optional[str] = None, agent_id: Optional[str] = None, run_id: Optional[str] = None
    ) -> Dict[str, str]:
        """Deletes a scope's records: a user alone forgets the user (every record and the
        decision log); with `agent_id`, the records private to that agent; with `run_id`, the
        notes of that run and the rounds of that session."""
        scope = _Scope(_entity(user_id, "user_id"), _entity(agent_id, "agent_id"), _entity(run_id, "run_id"))
        if not (scope.user_id or scope.agent_id or scope.run_id):
            raise InvalidInput(
                "At least one filter is required to delete all memories. If you want to delete all memories, "
                "use the `reset()` method.",
                "user_id",
            )
        if scope.agent_id is None and scope.run_id is None:
            self._engine.call("forget_user", user_id=scope.user)
            return {"message": "Memories deleted successfully!"}
        doomed = [
            n["key"]
            for n in self._listed(scope, _note_condition(scope, None), include_condensed=True)
            if scope.agent_id is None or n.get("agent") == scope.agent_id
        ]
        for r in self._records("rounds", scope):
            if (scope.agent_id is None or r.get("agent") == scope.agent_id) and (
                scope.run_id is None or r["session"] == scope.run_id
            ):
                doomed.append(r["key"])
        for key in doomed:
            self._engine.call("delete_memory", key=key, **scope.target())
        return {"message": "Memories deleted successfully!"}

    def history(self, memory_id: str) -> List[Dict[str, Any]]:
        """What the decision log says about a record, oldest first, as mem0's history rows:
        `ADD` when it was stored, `UPDATE` for an edit (the log keeps which fields changed, not
        the old text) or a supersession (both values, and the rule in `detail`), `DELETE`."""
        found = self._locate(memory_id)
        if found is None:
            return []
        user, record = found
        scope = _Scope(user, None, None)
        current = record.get("content") if record.get("record") != "round" else _round_text(record["turns"])
        contents: Dict[str, Optional[str]] = {memory_id: current}

        def content(key: str) -> Optional[str]:
            if key not in contents:
                try:
                    contents[key] = self._engine.call("get_memory", key=key, user_id=user).get("content")
                except NotFound:
                    contents[key] = None
            return contents[key]

        log_rows = [d for d in self._records("decisions", scope) if memory_id in (d["record"], d.get("other"))]
        # The log keeps which fields an edit changed, not the text before it: the current text is
        # what the last edit of the content (or the write, when none) left.
        edits = [i for i, d in enumerate(log_rows) if d["kind"] == "note.updated" and "content" in _detail(d).get("fields", [])]
        last_text = edits[-1] if edits else None
        rows = []
        for i, d in enumerate(log_rows):
            kind = d["kind"]
            detail = _detail(d)
            old = new = None
            if kind in ("note.stored", "fact.stored", "round.stored") and d["record"] == memory_id:
                event, new = "ADD", current if last_text is None else None
            elif kind == "note.updated":
                event, new = "UPDATE", current if i == last_text else None
            elif kind == "fact.superseded":
                event, old, new = "UPDATE", content(d["record"]), content(d["other"])
            elif kind.endswith(".deleted"):
                event = "DELETE"
            else:
                continue
            rows.append(
                {
                    "id": f"{d['at']}:{kind}:{d['record']}",
                    "memory_id": memory_id,
                    "old_memory": old,
                    "new_memory": new,
                    "event": event,
                    "created_at": d["at"],
                    "updated_at": None,
                    "is_deleted": event == "DELETE",
                    "actor_id": None,
                    "role": None,
                    "decision": kind,
                    "detail": detail,
                }
            )
        # One write can log a fact and what it superseded at the same logical time: the record's
        # own `ADD` first, a `DELETE` last.
        rank = {"ADD": 0, "UPDATE": 1, "DELETE": 2}
        rows.sort(key=lambda r: (r["created_at"], rank[r["event"]]))
        return rows

    def reset(self) -> None:
        """Forgets every user of the store."""
        for user in self.users():
            self._engine.call("forget_user", user_id=user)

    def close(self) -> None:
        """Nothing to release early: the store closes with the object."""

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- mnemon's own calls -----------------------------------------------------------------

    def get_context(
        self,
        query: str,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        budget: Optional[int] = None,
        top_k: Optional[int] = None,
        angles: Sequence[str] = (),
        date: Optional[str] = None,
        as_of: Optional[str] = None,
        profile: Optional[int] = None,
        whole_rounds: bool = False,
    ) -> Dict[str, Any]:
        """The prompt-ready block for a question (`context`), with the keys of the records in
        it, its token count and whether anything was cut. `profile`: open the block with the
        user's current facts by relation, in at most that many tokens of the budget.
        `whole_rounds`: show every round whole (by default a long assistant reply shows only the
        sentences that bear on the question, each run of left-out sentences marked "[…]")."""
        args = _some(query=query, user_id=user_id, agent_id=agent_id, budget=budget, top_k=top_k, date=date, as_of=as_of, profile=profile)
        if whole_rounds:
            args["whole_rounds"] = True
        if angles:
            args["angles"] = list(angles)
        return self._engine.call("recall_memories", **args)

    def recall(
        self,
        query: str,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        top_k: Optional[int] = None,
        date: Optional[str] = None,
        as_of: Optional[str] = None,
    ) -> Dict[str, Any]:
        """The rounds that best answer a question, ranked, each with its score, cosine and facts
        (`{"rounds": [...], "anchor", "window"}`)."""
        args = _some(query=query, user_id=user_id, agent_id=agent_id, top_k=top_k, date=date, as_of=as_of)
        return json.loads(self._native("recall", json.dumps(args)))

    def remember(
        self, memories: Sequence[Union[str, Mapping[str, Any]]], *, user_id: Optional[str] = None, agent_id: Optional[str] = None
    ) -> Dict[str, Any]:
        """Saves notes: strings, or dicts with `content` and optional `title`, `tags`, `metadata`,
        `kind`, `importance`, `ts`. Returns each one's key and whether it was stored."""
        return self._engine.call("save_memories", memories=list(memories), **_some(user_id=user_id, agent_id=agent_id))

    def list(
        self,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        filter: Optional[Mapping[str, Any]] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        include_condensed: bool = False,
    ) -> Dict[str, Any]:
        """A page of notes, newest first (`{"notes": [...], "next": cursor or None}`); `filter`
        takes `tags_any`, `tags_all`, `kinds`, `after`, `before`, `min_tokens`, `max_tokens` and
        `metadata`."""
        args = _some(user_id=user_id, agent_id=agent_id, filter=filter, limit=limit, cursor=cursor)
        return self._engine.call("list_memories", include_condensed=include_condensed, **args)

    def export(
        self,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        format: str = "markdown",
        as_of: Optional[str] = None,
    ) -> str:
        """Everything the scope holds, as Markdown or plain text (`format="text"`, with the
        decision log)."""
        return self._engine.call("export_memories", format=format, **_some(user_id=user_id, agent_id=agent_id, as_of=as_of))["text"]

    def import_(self, dump: str) -> Dict[str, Any]:
        """Loads a JSONL dump (`mnemon export --format jsonl`) into the store."""
        return json.loads(self._native("import_dump", dump, None))

    def import_chats(
        self, path: PathLike, format: str, *, user_id: Optional[str] = None, agent_id: Optional[str] = None
    ) -> Dict[str, Any]:
        """Imports a user's chat history: ChatGPT's or Claude's `conversations.json` (their data
        exports) or mnemon's JSONL (`format`: `chatgpt`, `claude`, `jsonl`). Each conversation
        is stored as a session with its real times, only what the user saw in the app (the
        branch shown, user and assistant text, attachments by name); unreadable entries are
        skipped and named. Run again, nothing new is stored. Returns `{"tally": {...},
        "rounds_stored", "rounds_duplicate", "skipped": [{"entry", "reason"}]}`."""
        return json.loads(self._native("import_chats", os.fspath(path), format, user_id, agent_id, None))

    def forget_user(self, user_id: str) -> Dict[str, Any]:
        """Removes a user's every record and decision from the store."""
        return self._engine.call("forget_user", user_id=user_id)

    def facts(self, *, user_id: Optional[str] = None, agent_id: Optional[str] = None) -> List[Dict[str, Any]]:
        """The scope's active facts, in the order they were stored."""
        return self._records("facts", _Scope(user_id, agent_id, None))

    def profile(self, *, user_id: Optional[str] = None, agent_id: Optional[str] = None) -> Dict[str, Any]:
        """What the user holds true now: `{"relations": [{"relation", "facts": [...]}]}`, the
        user's current facts grouped by relation, each with its `value`, `since` (the day it
        holds since), `round` and `changes` (how many earlier facts it replaced)."""
        return self._engine.call("get_profile", **_some(user_id=user_id, agent_id=agent_id))

    def rounds(self, *, user_id: Optional[str] = None, agent_id: Optional[str] = None) -> List[Dict[str, Any]]:
        """The scope's rounds, oldest first."""
        return self._records("rounds", _Scope(user_id, agent_id, None))

    def decisions(self, *, user_id: Optional[str] = None, agent_id: Optional[str] = None) -> List[Dict[str, Any]]:
        """The scope's decision log, in logical order."""
        return self._records("decisions", _Scope(user_id, agent_id, None))

    def users(self) -> List[str]:
        """The store's users."""
        return json.loads(self._native("users", None))

    def flush(self) -> None:
        """Waits until every round waiting for extraction is done."""
        self._engine.flush()

    def backup(self, out: PathLike) -> int:
        """Copies the store to `out` while it stays usable; the bytes written."""
        return self._engine.backup(out)

    @property
    def engine(self) -> Engine:
        """The engine underneath (every operation of the servers, by name)."""
        return self._engine

    # --- helpers ----------------------------------------------------------------------------

    def _native(self, name: str, *args: Any) -> Any:
        with _raising():
            return getattr(self._engine._native, name)(*args)

    def _records(self, what: str, scope: _Scope) -> List[Dict[str, Any]]:
        return json.loads(self._native("records", what, scope.user, scope.agent_id))

    def _passing(
        self, conditions: Optional[Dict[str, Any]], scope: _Scope, rounds: List[Dict[str, Any]], show_expired: bool
    ) -> Any:
        """A test of a round (by its key) against the run, the metadata conditions (tested by the
        engine's own filter) and expiry."""
        passing = {r["key"] for r in rounds}
        if conditions:
            metadata = [_round_metadata(r) for r in rounds]
            with _raising():
                verdicts = _native.metadata_matches(json.dumps(conditions), json.dumps(metadata))
            passing = {r["key"] for r, ok in zip(rounds, verdicts) if ok}
        return lambda r: (
            r["key"] in passing
            and (scope.run_id is None or r["session"] == scope.run_id)
            and (show_expired or not _expired(_round_metadata(r) or {}))
        )

    def _listed(
        self, scope: _Scope, condition: Optional[Dict[str, Any]], include_condensed: bool = False
    ) -> Iterator[Dict[str, Any]]:
        """The scope's notes passing `condition`, newest first, read a page at a time as asked."""
        cursor = None
        while True:
            args: Dict[str, Any] = {"limit": _PAGE, **scope.target(), **_filtered(condition)}
            if include_condensed:
                args["include_condensed"] = True
            if cursor:
                args["cursor"] = cursor
            page = self._engine.call("list_memories", **args)
            yield from page["notes"]
            cursor = page.get("next")
            if not cursor:
                return

    def _extracted_rounds(self, scope: _Scope) -> set:
        """The keys of the rounds any fact came from (superseded ones too): such a round is
        represented by its facts, never by its text."""
        if not self._extracts:
            return set()
        return {_round_of(f["key"]) for f in self._records("every_fact", scope)}

    def _locate(self, memory_id: str) -> Optional[Tuple[str, Dict[str, Any]]]:
        """The user holding a record and the record (its `record` names its kind), or None."""
        if not isinstance(memory_id, str) or not memory_id.strip():
            raise InvalidInput("memory_id must be a non-empty string", "memory_id")
        for user in self.users():
            try:
                return user, self._engine.call("get_memory", key=memory_id, user_id=user)
            except NotFound:
                continue
        return None


def _detail(decision: Mapping[str, Any]) -> Dict[str, Any]:
    try:
        detail = json.loads(decision.get("detail") or "{}")
    except ValueError:
        return {}
    return detail if isinstance(detail, dict) else {}


def _filtered(condition: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """The `filter` argument of a metadata condition (none: no argument)."""
    return {} if condition is None else {"filter": {"metadata": condition}}


def _stamped(item: Dict[str, Any], scope: _Scope) -> Dict[str, Any]:
    """The entity ids of the call on a result that does not carry its own."""
    for key, value in scope.stamp().items():
        item.setdefault(key, value)
    return item


def _check_top_k(top_k: Any) -> int:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise InvalidInput(f"Invalid top_k: {top_k!r}. Must be a non-negative integer.", "top_k")
    return top_k


def _some(**kwargs: Any) -> Dict[str, Any]:
    return {k: v for k, v in kwargs.items() if v is not None}


_MEM0_IGNORED = ("llm", "history_db_path", "version", "custom_fact_extraction_prompt",
                 "custom_update_memory_prompt", "graph_store", "reranker")
_ENGINE_KEYS = ("store", "data", "roots", "embedder", "models", "extractor", "extract_cache")


def _engine_options(config: Dict[str, Any]) -> Dict[str, Any]:
    """Engine arguments from mem0's or mnemon's config dict."""
    out: Dict[str, Any] = {}
    vector_store = config.pop("vector_store", None)
    if vector_store is not None:
        if not isinstance(vector_store, Mapping):
            raise InvalidInput("vector_store must be a dict", "vector_store")
        inner = dict(vector_store.get("config") or {})
        where = inner.get("path") or inner.get("url") or inner.get("connection_string")
        if where:
            out["store"] = where
        if vector_store.get("provider") not in (None, "mnemon"):
            log.info("vector_store.provider %r: mnemon keeps vectors in its own store", vector_store.get("provider"))
    embedder = config.get("embedder")
    if isinstance(embedder, Mapping):
        config.pop("embedder")
        model = (embedder.get("config") or {}).get("model")
        if embedder.get("provider") == "mnemon" and model:
            out["embedder"] = model
        else:
            log.info("embedder %r: mnemon embeds with its pinned local model", embedder.get("provider"))
    for key in _MEM0_IGNORED:
        if key in config:
            log.info("config[%r]: not used by mnemon, which runs its own pinned local models", key)
            config.pop(key)
    for key in _ENGINE_KEYS:
        if key in config:
            out[key] = config.pop(key)
    if out.get("embedder") is None:
        out["embedder"] = "minilm"
    if out["embedder"] not in EMBEDDERS:
        raise InvalidInput(f"embedder must be one of {', '.join(EMBEDDERS)}, not {out['embedder']!r}", "embedder")
    if "extractor" not in out:
        out["extractor"] = _default_extractor(out.get("models"))
    if out.get("extractor") == "none":
        out["extractor"] = None
    if out.get("extractor") is None:
        out.pop("extractor", None)
        out.pop("extract_cache", None)
    out["options"] = config
    return out


def _default_extractor(models: Optional[PathLike]) -> Optional[str]:
    """`$MNEMON_EXTRACTOR` when set (a model or script path, `default`, or `none`); else
    `default` when the pinned extractor's model is in the models folder; else None."""
    chosen = os.environ.get("MNEMON_EXTRACTOR")
    if chosen:
        return chosen
    folder = models or os.environ.get("MNEMON_MODELS") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "mnemon", "models"
    )
    path = os.path.join(folder, "gguf", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
    if os.path.isfile(path):
        return "default"
    log.info("no extractor model at %s: rounds are stored without facts (mnemon fetch-models --extractor)", path)
    return None


def _to_thread(method: Any) -> Any:
    @functools.wraps(method)
    async def call(self: "AsyncMemory", *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(getattr(self._memory, method.__name__), *args, **kwargs)

    return call


class AsyncMemory:
    """`Memory` with every call a coroutine (run on a worker thread; the engine releases the GIL,
    so calls run in parallel)."""

    def __init__(self, config: Optional[Mapping[str, Any]] = None, *, memory: Optional[Memory] = None):
        self._memory = memory if memory is not None else Memory(config)

    @classmethod
    def from_config(cls, config_dict: Mapping[str, Any]) -> "AsyncMemory":
        return cls(config_dict)

    @classmethod
    def open(cls, location: Optional[PathLike] = None, **kwargs: Any) -> "AsyncMemory":
        return cls(memory=Memory.open(location, **kwargs))

    @property
    def sync(self) -> Memory:
        """The `Memory` underneath."""
        return self._memory

    add = _to_thread(Memory.add)
    search = _to_thread(Memory.search)
    get = _to_thread(Memory.get)
    get_all = _to_thread(Memory.get_all)
    update = _to_thread(Memory.update)
    delete = _to_thread(Memory.delete)
    delete_all = _to_thread(Memory.delete_all)
    history = _to_thread(Memory.history)
    reset = _to_thread(Memory.reset)
    get_context = _to_thread(Memory.get_context)
    recall = _to_thread(Memory.recall)
    remember = _to_thread(Memory.remember)
    list = _to_thread(Memory.list)
    export = _to_thread(Memory.export)
    import_ = _to_thread(Memory.import_)
    import_chats = _to_thread(Memory.import_chats)
    forget_user = _to_thread(Memory.forget_user)
    facts = _to_thread(Memory.facts)
    profile = _to_thread(Memory.profile)
    rounds = _to_thread(Memory.rounds)
    decisions = _to_thread(Memory.decisions)
    users = _to_thread(Memory.users)
    flush = _to_thread(Memory.flush)
    backup = _to_thread(Memory.backup)

    async def close(self) -> None:
        self._memory.close()

    async def __aenter__(self) -> "AsyncMemory":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
