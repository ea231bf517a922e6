// mnemon's HTTP API, typed: every operation of the server's OpenAPI document, with the errors
// as a union of codes. fetch-based, no runtime dependencies, Node 18 or later (or any runtime
// with fetch).

import { OPERATIONS } from "./generated.js";
import type * as T from "./generated.js";

export type * from "./generated.js";
export { ERROR_CODES, OPERATIONS } from "./generated.js";

/** How a client reaches a server. */
export interface ClientOptions {
  /** The server's base URL (default `http://127.0.0.1:7424`). */
  baseUrl?: string;
  /** A bearer token, when the server has tokens. */
  token?: string;
  /** The `fetch` to use (default the global one). */
  fetch?: typeof fetch;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
}

/** Per call: an abort signal, an idempotency key for a write, more headers. */
export interface CallOptions {
  signal?: AbortSignal;
  /** Sent as `Idempotency-Key`: a retried write with the same key stores nothing twice. */
  idempotencyKey?: string;
  headers?: Record<string, string>;
}

/** A chat history's bytes: a string, bytes, a Blob, or a stream of bytes (sent as it is read). */
export type Upload = string | Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

/** An error the server answered with: its stable `code`, the HTTP `status`, the `field` at fault. */
export class MnemonError extends Error {
  readonly code: T.ErrorCode;
  readonly status: number;
  readonly field?: string;
  /** Seconds to wait before a retry (`busy`, `overloaded`, `rate_limited`). */
  readonly retryAfter?: number;
  /** The whole error object as the server sent it (`pin_mismatch` adds `differences`). */
  readonly body: T.ApiError;

  constructor(status: number, body: T.ApiError, retryAfter?: number) {
    super(body.message);
    this.name = "MnemonError";
    this.code = body.code;
    this.status = status;
    this.field = body.field ?? undefined;
    this.retryAfter = retryAfter;
    this.body = body;
  }
}

type Args<K extends T.OperationId> = T.Operations[K]["args"];
type Answer<K extends T.OperationId> = T.Operations[K]["response"];

/** A client of one mnemon server. */
export class Mnemon {
  readonly baseUrl: string;
  private readonly token?: string;
  private readonly fetcher: typeof fetch;
  private readonly headers: Record<string, string>;

  constructor(options: ClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? "http://127.0.0.1:7424").replace(/\/+$/, "");
    this.token = options.token;
    this.fetcher = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.headers = options.headers ?? {};
  }

  /** Calls operation `op` with `args` (its path, query or body fields, as the document says). */
  async call<K extends T.OperationId>(op: K, args: Args<K>, options: CallOptions = {}): Promise<Answer<K>> {
    const response = await this.send(op, args as Record<string, unknown>, undefined, options);
    const spec = OPERATIONS[op];
    return (spec.text ? await response.text() : await response.json()) as Answer<K>;
  }

  /** The response of `op`, checked: an error status throws its `MnemonError`. */
  private async send(
    op: T.OperationId,
    args: Record<string, unknown>,
    upload: Upload | undefined,
    options: CallOptions,
  ): Promise<Response> {
    const spec = OPERATIONS[op];
    const rest: Record<string, unknown> = { ...(args ?? {}) };
    let path: string = spec.path;
    for (const name of spec.pathParams as readonly string[]) {
      const value = rest[name];
      if (typeof value !== "string" || value === "") {
        throw new TypeError(`${op}: \`${name}\` is required`);
      }
      path = path.replace(`{${name}}`, encodeURIComponent(value));
      delete rest[name];
    }
    const headers: Record<string, string> = { ...this.headers, ...options.headers };
    if (this.token) headers["Authorization"] = `Bearer ${this.token}`;
    if (options.idempotencyKey) headers["Idempotency-Key"] = options.idempotencyKey;
    const init: RequestInit & { duplex?: "half" } = { method: spec.method, headers, signal: options.signal };
    if (spec.args === "body") {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(rest);
    } else {
      const query = new URLSearchParams();
      for (const [k, v] of Object.entries(rest)) {
        if (v !== undefined && v !== null) query.set(k, String(v));
      }
      if ([...query].length) path += `?${query}`;
    }
    if (upload !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = body(upload);
      // A stream is sent as it is read (fetch needs to be told it will not wait for the answer).
      if (init.body instanceof ReadableStream) init.duplex = "half";
    }
    const response = await this.fetcher(this.baseUrl + path, init);
    if (!response.ok) throw await errorOf(response);
    return response;
  }

  // --- memories -------------------------------------------------------------------------

  /** Saves memories: concise statements worth keeping across conversations. */
  saveMemories(args: T.SaveMemories, options?: CallOptions): Promise<T.Saved> {
    return this.call("save_memories", args, options);
  }
  /** The prompt-ready block for a question: memories and conversation, ranked, within a budget. */
  recallMemories(args: T.RecallMemories, options?: CallOptions): Promise<T.Recalled> {
    return this.call("recall_memories", args, options);
  }
  /** Searches memories, scored and filtered. */
  searchMemories(args: T.SearchMemories, options?: CallOptions): Promise<Answer<"search_memories">> {
    return this.call("search_memories", args, options);
  }
  /** A page of memories, newest first, filtered. */
  listMemories(args: T.ListMemories, options?: CallOptions): Promise<Answer<"list_memories">> {
    return this.call("list_memories", args, options);
  }
  /** A memory, round or fact by its key. */
  getMemory(args: Args<"get_memory">, options?: CallOptions): Promise<Answer<"get_memory">> {
    return this.call("get_memory", args, options);
  }
  /** Edits a memory. */
  updateMemory(args: Args<"update_memory">, options?: CallOptions): Promise<Answer<"update_memory">> {
    return this.call("update_memory", args, options);
  }
  /** Deletes a memory, a round with its facts, or a fact. */
  deleteMemory(args: Args<"delete_memory">, options?: CallOptions): Promise<Answer<"delete_memory">> {
    return this.call("delete_memory", args, options);
  }
  /** Counts what the scope sees. */
  countMemories(args: Args<"count_memories"> = {}, options?: CallOptions): Promise<T.Counts> {
    return this.call("count_memories", args, options);
  }
  /** Copies memories to another store. */
  copyMemories(args: Args<"copy_memories">, options?: CallOptions): Promise<Answer<"copy_memories">> {
    return this.call("copy_memories", args, options);
  }
  /** Moves memories to another store. */
  moveMemories(args: Args<"move_memories">, options?: CallOptions): Promise<Answer<"move_memories">> {
    return this.call("move_memories", args, options);
  }

  // --- conversation ---------------------------------------------------------------------

  /** Stores conversation messages verbatim (a user turn and the reply form a round). */
  addMessages(args: T.AddMessages, options?: CallOptions): Promise<T.Added> {
    return this.call("add_messages", args, options);
  }
  /** What the user holds true now: current facts by relation. */
  getProfile(args: Args<"get_profile"> = {}, options?: CallOptions): Promise<Answer<"get_profile">> {
    return this.call("get_profile", args, options);
  }

  /**
   * Imports a chat history (ChatGPT's or Claude's `conversations.json`, or mnemon's JSONL): the
   * file is sent as it is read, so a stream of any size needs no buffer here.
   */
  async importChats(file: Upload, args: Args<"import_chats">, options: CallOptions = {}): Promise<T.Imported> {
    const response = await this.send("import_chats", args as Record<string, unknown>, file, options);
    return (await response.json()) as T.Imported;
  }

  // --- export and browsing --------------------------------------------------------------

  /** Everything the scope holds, as Markdown (`format: "text"` for text, `"jsonl"` for a dump). */
  exportMemories(args: Args<"export_memories"> = {}, options?: CallOptions): Promise<string> {
    return this.call("export_memories", args, options);
  }
  /** The same export as a stream of text, read as the server sends it. */
  async *exportStream(args: Args<"export_memories"> = {}, options: CallOptions = {}): AsyncGenerator<string> {
    const response = await this.send("export_memories", args as Record<string, unknown>, undefined, options);
    if (!response.body) return;
    const decoder = new TextDecoder();
    const reader = response.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const text = decoder.decode(value, { stream: true });
        if (text) yield text;
      }
      const tail = decoder.decode();
      if (tail) yield tail;
    } finally {
      reader.releaseLock();
    }
  }
  /** The stores the server holds. */
  listStores(options?: CallOptions): Promise<T.StoreList> {
    return this.call("list_stores", {}, options);
  }
  /** The users a store holds records of. */
  listUsers(args: Args<"list_users"> = {}, options?: CallOptions): Promise<Answer<"list_users">> {
    return this.call("list_users", args, options);
  }
  /** A page of the scope's timeline: rounds, facts and supersessions. */
  readTimeline(args: T.ReadTimeline, options?: CallOptions): Promise<T.TimelinePage> {
    return this.call("read_timeline", args, options);
  }
  /** A page of the scope's decision log. */
  readDecisions(args: T.ReadDecisions, options?: CallOptions): Promise<T.DecisionPage> {
    return this.call("read_decisions", args, options);
  }
  /** What the scope stored per month. */
  readActivity(args: Args<"read_activity"> = {}, options?: CallOptions): Promise<T.Activity> {
    return this.call("read_activity", args, options);
  }
  /** Forgets a user: every record and decision (`everywhere`: in every store). */
  forgetUser(args: Args<"forget_user">, options?: CallOptions): Promise<T.Forgotten> {
    return this.call("forget_user", args, options);
  }

  // --- the server -----------------------------------------------------------------------

  /** Liveness, and a read of the server's store. */
  health(options?: CallOptions): Promise<T.Health> {
    return this.call("health", {}, options);
  }
  /** Prometheus metrics (a token that acts for the whole server). */
  metrics(options?: CallOptions): Promise<string> {
    return this.call("metrics", {}, options);
  }
}

function body(upload: Upload): BodyInit {
  if (typeof upload === "string" || upload instanceof Uint8Array || upload instanceof ArrayBuffer) {
    return upload as BodyInit;
  }
  if (typeof Blob !== "undefined" && upload instanceof Blob) return upload;
  if (upload instanceof ReadableStream) return upload;
  const iterator = (upload as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await iterator.next();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    async cancel() {
      await iterator.return?.();
    },
  });
}

/** The `MnemonError` of an error response (one in another shape becomes `internal`). */
async function errorOf(response: Response): Promise<MnemonError> {
  const text = await response.text();
  const retry = Number(response.headers.get("Retry-After") ?? "");
  let error: T.ApiError;
  try {
    error = (JSON.parse(text) as T.ErrorBody).error;
    if (!error || typeof error.code !== "string") throw new Error("not the error shape");
  } catch {
    error = { code: "internal", message: text || response.statusText || `HTTP ${response.status}` };
  }
  return new MnemonError(response.status, error, Number.isFinite(retry) && retry > 0 ? retry : undefined);
}
