//! `mnemon mcp` and `mnemon serve`: the servers of `mnemon-server`, configured from flags.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _, Result};
use mnemon::config::Config;
use mnemon_server::embedding::{Batched, Metered};
use mnemon_server::mcp::Mcp;
use mnemon_server::principal::parse_token_file;
use mnemon_server::proxy::Upstream;
use mnemon_server::{HttpOptions, Principal, Service, Settings};

use crate::flags::{McpArgs, ModelArgs, ServeArgs, ServerArgs, UpstreamArgs};

impl ServerArgs {
    /// The service over these stores; each store file opens `readers` read connections at once
    /// (as many as the server serves requests at once).
    pub(crate) fn service(&self, readers: usize, create_stores: bool) -> Result<Arc<Service>> {
        // Concurrent requests' texts embed in one batch (same vectors), timed for the metrics.
        let models =
            ModelArgs { embed_batch: Some(self.models.embed_batch.unwrap_or(32)), ..self.models.clone() };
        let embedder: Arc<dyn mnemon::embed::Embedder> =
            Arc::new(Metered(Arc::new(Batched::new(models.embedder()?))));
        let settings = Settings {
            data: self.data.clone().unwrap_or_else(mnemon::stores::data_dir),
            roots: self.roots.clone(),
            store: self.store.clone(),
            embedder,
            extractor: self.models.extractor()?,
            // A server renders contexts for prompts: cap them by default.
            config: Config {
                context_budget: Some(4000),
                max_readers: self.max_readers,
                min_readers: readers.min(self.max_readers),
                max_store_bytes: self.max_store_mib.map(|m| m << 20),
                years: self.years.clone().unwrap_or(mnemon::config::YEARS),
                ..Config::default()
            },
            memory_budget: Some(mnemon::config::MemoryBudget::new(self.memory_mib << 20)),
            create_stores,
            max_stores: self.max_stores,
        };
        Ok(Arc::new(Service::new(settings).map_err(|e| anyhow::Error::new(crate::OpenError(e)))?))
    }
}

pub fn mcp(args: &McpArgs) -> Result<()> {
    let principal = match &args.user {
        None => Principal::Admin,
        Some(user) => Principal::user(user, args.agent.as_deref()).map_err(|e| anyhow!("--user: {e}"))?,
    };
    let mcp = Mcp::new(args.stores.service(0, true)?)
        .for_principal(principal)
        .with_destructive_tools(args.stores.allow_destructive_tools);
    mnemon_server::run_stdio(mcp).map_err(|e| anyhow!("mcp: {e}"))
}

impl UpstreamArgs {
    /// The proxy's upstream, if one is named; `at_root`: also at `/v1/chat/completions`.
    fn upstream(&self, at_root: bool) -> Result<Option<Upstream>> {
        let Some(url) = &self.upstream else {
            if at_root {
                bail!("mnemon proxy needs --upstream URL (an OpenAI-compatible API, e.g. https://api.openai.com/v1)");
            }
            return Ok(None);
        };
        let key = match &self.upstream_key_env {
            None => None,
            Some(name) => Some(
                std::env::var(name)
                    .ok()
                    .filter(|k| !k.trim().is_empty())
                    .ok_or_else(|| anyhow!("--upstream-key-env: ${name} is not set"))?
                    .trim()
                    .to_owned(),
            ),
        };
        Ok(Some(Upstream {
            key,
            budget: self.proxy_budget,
            timeout: Duration::from_secs(self.upstream_timeout.max(1)),
            at_root,
            ..Upstream::new(url.clone())
        }))
    }
}

/// `mnemon serve`, and `mnemon proxy` (`proxy`: the chat routes at `/v1` too).
pub fn serve(args: &ServeArgs, proxy: bool) -> Result<()> {
    let (token, grants) = match &args.token_file {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            (None, parse_token_file(&text).map_err(|e| anyhow!("{}: {e}", path.display()))?)
        }
        None => (std::env::var("MNEMON_TOKEN").ok().filter(|t| !t.trim().is_empty()), Vec::new()),
    };
    let options = HttpOptions {
        addr: args.addr,
        token: token.map(|t| t.trim().to_owned()),
        grants,
        destructive_tools: args.stores.allow_destructive_tools,
        body_limit: args.body_limit,
        rate_limit: args.rate_limit,
        timeout: Duration::from_secs(args.timeout.max(1)),
        max_in_flight: args.max_in_flight,
        queue_wait: Duration::from_millis(args.queue_wait_ms),
        allowed_hosts: args.allowed_hosts.clone(),
        cors_origins: args.cors_origins.clone(),
        header_timeout: Duration::from_secs(args.header_timeout.max(1)),
        body_timeout: Duration::from_secs(args.body_timeout.max(1)),
        max_connections_per_client: args.max_connections_per_client,
        upstream: args.upstream.upstream(proxy)?,
        import_limit: args.import_limit_mib << 20,
    };
    let service = args.stores.service(args.max_in_flight, args.stores.create_stores)?;
    mnemon_server::run_http(service, options).map_err(|e| anyhow!(e.to_string()))
}
