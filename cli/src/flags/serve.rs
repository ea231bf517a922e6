//! The server commands: `mcp` and `serve`.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::common::ModelArgs;

/// Which stores a server reaches.
#[derive(clap::Args)]
pub struct ServerArgs {
    /// The store requests reach when they name none: a file or a postgres:// URL [default: the
    /// global store in the data directory].
    #[arg(long = "store", alias = "db", value_name = "REF")]
    pub store: Option<PathBuf>,
    /// The data directory: the global store, project stores, and store files clients name by
    /// a relative path [default: $MNEMON_DATA, else ~/.local/share/mnemon].
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// A directory whose projects and store files clients may also name (repeatable). Nothing
    /// outside the data directory and these is ever opened for a client.
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// Most read connections each store keeps open (file handles, or PostgreSQL connections:
    /// keep stores × (this + 2) under the database's `max_connections`); a read that finds
    /// them all busy waits for one up to the busy timeout, then answers `busy`.
    #[arg(long, default_value_t = 64)]
    pub max_readers: usize,
    /// Memory, in MiB, that the in-memory views of every store the server opens share; past it
    /// the least recently used views are dropped (and loaded again when next read).
    #[arg(long, default_value_t = 2048)]
    pub memory_mib: usize,
    /// Let a write create a store that does not exist yet (a new file in the data directory, a
    /// project's store). Off by default for `serve`: a request creates nothing but its records,
    /// and a read never creates anything. `mcp` (stdio, the user's own process) always may.
    #[arg(long)]
    pub create_stores: bool,
    /// The most store files the data directory (with `projects/`) may hold; a write that would
    /// create another is refused (`store_full`, naming `store`).
    #[arg(long, value_name = "N")]
    pub max_stores: Option<usize>,
    /// The most MiB one store file may grow to; a write past it is refused (`store_full`) and
    /// changes nothing.
    #[arg(long, value_name = "MIB")]
    pub max_store_mib: Option<u64>,
    /// The years a timestamp may name, `FROM-TO` (a message's or memory's `ts`, a question's
    /// `date` and `as_of`); any other is refused naming its field. Default 1900-2200.
    #[arg(long, value_name = "FROM-TO", value_parser = parse_years)]
    pub years: Option<std::ops::RangeInclusive<i32>>,
    /// Offer the destructive MCP tools `forget_user` and `move_memories` (off by default, so
    /// that a model steered by a prompt injection cannot wipe a user or empty a store).
    #[arg(long)]
    pub allow_destructive_tools: bool,
    #[command(flatten)]
    pub models: ModelArgs,
}

/// `mnemon mcp`.
#[derive(clap::Args)]
pub struct McpArgs {
    #[command(flatten)]
    pub stores: ServerArgs,
    /// Bind every call to this user: tools leave `user_id` out of their schemas, and a call
    /// naming another user is refused.
    #[arg(long)]
    pub user: Option<String>,
    /// Bind every call to this agent of `--user` too.
    #[arg(long, requires = "user")]
    pub agent: Option<String>,
}

/// `mnemon serve`.
#[derive(clap::Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub stores: ServerArgs,
    /// Where to listen. Any address but a loopback one needs a token.
    #[arg(long, default_value = "127.0.0.1:7424")]
    pub addr: SocketAddr,
    /// A file of bearer tokens, one per line: `TOKEN` or `TOKEN admin` (acts for the whole
    /// server), `TOKEN user=NAME [agent=NAME]` (bound to that user: its requests cannot name
    /// another). Else $MNEMON_TOKEN, one admin token; none: no auth, loopback only.
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// Largest request body, bytes.
    #[arg(long, default_value_t = 4 << 20)]
    pub body_limit: usize,
    /// Largest chat history POST /v1/import/chats takes, MiB (read as it arrives, never held
    /// whole).
    #[arg(long, value_name = "MIB", default_value_t = 512)]
    pub import_limit_mib: usize,
    /// Requests per second per token (per client address without a token), burst twice that.
    #[arg(long)]
    pub rate_limit: Option<u32>,
    /// Longest a request may take, seconds.
    #[arg(long, default_value_t = 30)]
    pub timeout: u64,
    /// Most requests under /v1 and /mcp served at once; past it a request waits up to
    /// --queue-wait-ms for a place, then is answered `overloaded` (503, Retry-After). Each store
    /// file opens this many read connections (at most --max-readers) when the server opens it.
    #[arg(long, default_value_t = 24)]
    pub max_in_flight: usize,
    /// How long a request past --max-in-flight waits for a place, milliseconds.
    #[arg(long, default_value_t = 20)]
    pub queue_wait_ms: u64,
    /// Longest a client may take to send a request's headers, and a connection may sit idle
    /// between requests, seconds; past it the connection is closed.
    #[arg(long, default_value_t = 10)]
    pub header_timeout: u64,
    /// Longest a client may take to send a request's body, seconds; the body is read before the
    /// request takes an in-flight place, and past this it is answered `408 request_timeout`.
    #[arg(long, default_value_t = 10)]
    pub body_timeout: u64,
    /// Most connections open at once from one client address; one more is closed at once.
    #[arg(long, default_value_t = 256)]
    pub max_connections_per_client: usize,
    /// Another name clients may reach the server by, `name` or `name:port` (repeatable).
    /// Loopback names and IP addresses always pass; any other `Host` is refused, so that a web
    /// page cannot reach the server through a name it re-points at this machine.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// A web origin allowed to call the server from a browser, `https://app.example`
    /// (repeatable). Without one, requests carrying any other `Origin` are refused and no CORS
    /// headers are sent.
    #[arg(long = "cors-origin", value_name = "ORIGIN")]
    pub cors_origins: Vec<String>,
    #[command(flatten)]
    pub upstream: UpstreamArgs,
}

/// The OpenAI-compatible proxy's upstream.
#[derive(clap::Args)]
pub struct UpstreamArgs {
    /// An OpenAI-compatible API to forward chat requests to, with memory: its base URL up to the
    /// version (`https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`). Then
    /// /openai/v1/chat/completions and /openai/v1/models answer (`mnemon proxy`: /v1/… too).
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,
    /// The environment variable holding the upstream's API key, sent as its bearer token.
    /// Without it, a caller's own `Authorization` goes upstream when the server has no tokens.
    #[arg(long, value_name = "NAME", requires = "upstream")]
    pub upstream_key_env: Option<String>,
    /// Token budget of the memory block the proxy adds to each chat request.
    #[arg(long, value_name = "TOKENS", default_value_t = 2000)]
    pub proxy_budget: usize,
    /// Longest the upstream may take to accept a connection or to send the next part of an
    /// answer, seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub upstream_timeout: u64,
}

/// `FROM-TO`, a range `Config::validate` accepts.
fn parse_years(s: &str) -> Result<std::ops::RangeInclusive<i32>, String> {
    let (from, to) = s.split_once('-').ok_or("expected FROM-TO, e.g. 1800-2200")?;
    let year = |y: &str| y.trim().parse::<i32>().map_err(|_| format!("{y:?} is not a year"));
    let years = year(from)?..=year(to)?;
    mnemon::config::Config { years: years.clone(), ..Default::default() }
        .validate()
        .map_err(|e| e.to_string())?;
    Ok(years)
}
