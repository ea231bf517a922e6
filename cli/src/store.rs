//! The commands on one store: `context`, `recall`, `export`, `import`, `forget`, `backup`,
//! `reextract`, `consolidate`, `log`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use mnemon::config::Config;
use mnemon::{Memory, Query, Scope};

use crate::flags::{ModelArgs, OutputFormat, QueryArgs, StoreArg};
use crate::input::read_text;

impl QueryArgs {
    /// Opens the store with the models and the fusion the flags ask for.
    fn open(&self) -> Result<Memory> {
        self.models.open(&self.target.path()?, Config { rrf_k: self.fusion.rrf_k(), ..Config::default() })
    }

    fn query<'a>(&'a self, budget: Option<usize>, angles: &'a [&'a str]) -> Result<Query<'a>> {
        let (date, as_of) = mnemon_server::api::times(self.date.as_deref(), self.as_of.as_deref())?;
        Ok(Query {
            date,
            as_of,
            top_k: self.top_k,
            budget,
            angles,
            ranking: self.ranking.ranking(),
            ..Query::new(&self.question)
        })
    }
}

/// `mnemon context`: the block for a question (with `json`, and what went into it).
pub fn context(
    query: &QueryArgs,
    budget: Option<usize>,
    angles: &[String],
    profile: Option<usize>,
    whole_rounds: bool,
    json: bool,
) -> Result<()> {
    let memory = query.open()?;
    let angles: Vec<&str> = angles.iter().map(String::as_str).collect();
    let asked = mnemon::Query { profile, whole_rounds, ..query.query(budget, &angles)? };
    let context = memory.get_context(asked, query.target.scope())?;
    if json {
        println!("{}", serde_json::to_string_pretty(&context).context("json")?);
    } else {
        print!("{}", context.text);
        eprintln!(
            "{} rounds, {} notes, {} tokens{}",
            context.rounds.len(),
            context.notes.len(),
            context.tokens,
            if context.truncated {
                format!(", {} left out by the budget", context.omitted.len())
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

/// `mnemon recall`: the ranked rounds, as JSON.
pub fn recall(query: &QueryArgs) -> Result<()> {
    let memory = query.open()?;
    let recall = memory.recall(query.query(None, &[])?, query.target.scope())?;
    println!("{}", serde_json::to_string_pretty(&recall).context("json")?);
    Ok(())
}

/// `mnemon export`.
pub fn export(
    store: &StoreArg,
    scope: Scope<'_>,
    format: OutputFormat,
    as_of: Option<&str>,
    output: Option<&Path>,
) -> Result<()> {
    let memory = store.stored()?;
    let text = match mnemon_server::api::times(None, as_of)?.1 {
        Some(t) => memory.export_as_of(format.into(), &t, scope)?,
        None => memory.export(format.into(), scope)?,
    };
    match output {
        Some(path) => std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?,
        None => print!("{text}"),
    }
    Ok(())
}

/// `mnemon import`.
pub fn import(store: &StoreArg, file: &Path) -> Result<()> {
    let dump = read_text(file)?;
    let report = Memory::builder(store.path()?).import(&dump)?;
    println!("{}", serde_json::to_string(&report).context("json")?);
    Ok(())
}

/// `mnemon reextract`: the rounds sent through the extractor again, then every fact settled
/// again; what changed and which extractors the store knows, as JSON.
pub fn reextract(
    store: &StoreArg,
    user: Option<&str>,
    all: bool,
    rounds: &[String],
    models: &ModelArgs,
) -> Result<()> {
    if models.extractor.extractor.is_none() {
        bail!("reextract needs --extractor");
    }
    let memory = models.open(&store.path()?, Config::default())?;
    let keys: Vec<&str> = rounds.iter().map(String::as_str).collect();
    let which = match (all, keys.is_empty()) {
        (true, _) => mnemon::facts::Reextract::All,
        (false, false) => mnemon::facts::Reextract::Rounds(&keys),
        (false, true) => mnemon::facts::Reextract::Stale,
    };
    let report = memory.reextract(which, user.map(Scope::user))?;
    memory.flush()?;
    let users = match user {
        Some(u) => vec![u.to_owned()],
        None => memory.user_names()?,
    };
    let mut settled = Vec::new();
    for u in &users {
        settled.push((u.clone(), memory.consolidate(u.as_str())?));
    }
    let extractors = memory.extractors(user.map(Scope::user))?;
    let out = serde_json::json!({
        "reextract": report,
        "consolidate": settled.into_iter().collect::<std::collections::BTreeMap<_, _>>(),
        "extractors": extractors.iter().map(|e| serde_json::json!({
            "hash": e.hash, "current": e.current, "name": e.pins.get("extractor"),
            "rounds": e.rounds, "facts": e.facts,
        })).collect::<Vec<_>>(),
    });
    println!("{}", serde_json::to_string(&out).context("json")?);
    Ok(())
}

/// `mnemon consolidate`: condensing embeds the notes it makes; the conflict pass and decay need
/// no model.
pub fn consolidate(store: &StoreArg, scope: Scope<'_>, config: Config, models: &ModelArgs) -> Result<()> {
    let memory = match config.condense {
        Some(_) => models.open(&store.path()?, config)?,
        None => Memory::builder(store.path()?).stored().config(config).open()?,
    };
    let report = memory.consolidate(scope)?;
    println!("{}", serde_json::to_string(&report).context("json")?);
    Ok(())
}

/// `mnemon log`: the decision log, a line each.
pub fn log(store: &StoreArg, user: &str) -> Result<()> {
    for (n, d) in store.stored()?.decisions(user)?.iter().enumerate() {
        let other = d.other.as_deref().map(|o| format!(" of {o}")).unwrap_or_default();
        println!("#{} at {} {} {}{other} {}", n + 1, d.at, d.kind, d.record, d.detail);
    }
    Ok(())
}

/// `mnemon profile`: Markdown lines, or the JSON the HTTP API returns.
pub fn profile(store: &StoreArg, user: &str, agent: Option<&str>, json: bool) -> Result<()> {
    let profile = store.stored()?.profile(mnemon::Scope { user, agent })?;
    if json {
        println!("{}", serde_json::to_string_pretty(&profile).context("json")?);
    } else {
        print!("{}", profile.to_markdown());
    }
    Ok(())
}

/// `mnemon forget`: with the caches the store was written through, their entries go too.
pub fn forget(store: &StoreArg, user: &str, models: &ModelArgs) -> Result<()> {
    let memory = if models.embed_cache.is_some() || models.extractor.extractor.is_some() {
        models.open(&store.path()?, Config::default())?
    } else {
        store.stored()?
    };
    let report = memory.forget_user(user)?;
    println!("{}", serde_json::to_string(&report).context("json")?);
    Ok(())
}

/// `mnemon backup`.
pub fn backup(store: &StoreArg, out: &PathBuf) -> Result<()> {
    let db = store.path()?;
    let bytes = store.stored()?.backup(out)?;
    println!("{} -> {}: {bytes} bytes, quick_check ok", db.display(), out.display());
    Ok(())
}
