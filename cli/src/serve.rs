//! `mnemon mcp` and `mnemon serve`: the servers of `mnemon-server`, configured from flags.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mnemon::Config;
use mnemon_server::embedding::{Batched, Metered};
use mnemon_server::{HttpOptions, Service, Settings};

use crate::anyhow_lite::{Context as _, Fail};
use crate::EmbedArgs;

/// Which stores a server reaches.
#[derive(clap::Args)]
pub struct StoreArgs {
    /// The store requests reach when they name none [default: the global store in the data
    /// directory].
    #[arg(long)]
    db: Option<PathBuf>,
    /// The data directory: the global store, project stores, and store files clients name by
    /// a relative path [default: $MNEMON_DATA, else ~/.local/share/mnemon].
    #[arg(long)]
    data: Option<PathBuf>,
    /// A directory whose projects and store files clients may also name (repeatable). Nothing
    /// outside the data directory and these is ever opened for a client.
    #[arg(long = "root", value_name = "DIR")]
    roots: Vec<PathBuf>,
    #[command(flatten)]
    embed: EmbedArgs,
}

impl StoreArgs {
    fn service(&self) -> Result<Arc<Service>, Fail> {
        // Concurrent requests' texts embed in one batch (same vectors), timed for the metrics.
        let embed = EmbedArgs { batch: Some(self.embed.batch.unwrap_or(32)), ..self.embed.clone() };
        let embedder: Arc<dyn mnemon::Embedder> = Arc::new(Metered(Arc::new(Batched::new(embed.build()?))));
        let settings = Settings {
            data: self.data.clone().unwrap_or_else(mnemon::stores::data_dir),
            roots: self.roots.clone(),
            store: self.db.clone(),
            embedder,
            extractor: self.embed.build_extractor()?,
            // A server renders contexts for prompts: cap them by default.
            config: Config { context_budget: Some(4000), ..Config::default() },
        };
        Ok(Arc::new(Service::new(settings).map_err(|e| Fail::msg(e.message))?))
    }
}

/// `mnemon mcp`.
#[derive(clap::Args)]
pub struct McpArgs {
    #[command(flatten)]
    stores: StoreArgs,
}

/// `mnemon serve`.
#[derive(clap::Args)]
pub struct ServeArgs {
    #[command(flatten)]
    stores: StoreArgs,
    /// Where to listen. Any address but a loopback one needs a token.
    #[arg(long, default_value = "127.0.0.1:7424")]
    addr: SocketAddr,
    /// A file holding the bearer token clients must send (else $MNEMON_TOKEN; none: no auth,
    /// loopback only).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Largest request body, bytes.
    #[arg(long, default_value_t = 4 << 20)]
    body_limit: usize,
    /// Requests per second per token (per client address without a token), burst twice that.
    #[arg(long)]
    rate_limit: Option<u32>,
    /// Longest a request may take, seconds.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// Another host name MCP clients may reach the server by (repeatable).
    #[arg(long = "allowed-host")]
    allowed_hosts: Vec<String>,
}

fn runtime() -> Result<tokio::runtime::Runtime, Fail> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")
}

pub fn mcp(args: &McpArgs) -> Result<(), Fail> {
    let service = args.stores.service()?;
    runtime()?.block_on(mnemon_server::serve_stdio(service)).map_err(|e| Fail::msg(format!("mcp: {e}")))
}

pub fn serve(args: &ServeArgs) -> Result<(), Fail> {
    let token = match &args.token_file {
        Some(path) => Some(std::fs::read_to_string(path).context(format!("reading {}", path.display()))?),
        None => std::env::var("MNEMON_TOKEN").ok().filter(|t| !t.trim().is_empty()),
    };
    let options = HttpOptions {
        addr: args.addr,
        token: token.map(|t| t.trim().to_owned()),
        body_limit: args.body_limit,
        rate_limit: args.rate_limit,
        timeout: Duration::from_secs(args.timeout.max(1)),
        allowed_hosts: args.allowed_hosts.clone(),
    };
    let service = args.stores.service()?;
    runtime()?.block_on(mnemon_server::serve(service, options)).map_err(|e| Fail::msg(e.to_string()))
}
