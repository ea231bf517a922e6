//! The `mnemon` command: thin glue over the library. Its flags are all in `flags`; each command
//! is a function of its module. Logs go to stderr; results to stdout. A library as well as a
//! binary, so that the Python package runs the same command ([`main_with`]).

mod bench;
mod demo;
mod doctor;
mod eval;
mod extract;
mod flags;
mod fuzz;
mod import_chats;
mod ingest;
mod input;
mod loadtest;
mod models;
mod notes;
mod serve;
mod store;

use std::ffi::OsString;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Parser;
use mnemon::Scope;

use flags::{Cli, Command};

/// Runs the command on `args` (the first is the program's name), as `mnemon` does: logs to
/// stderr (`MNEMON_LOG`, default `warn`), results to stdout, `--help` and bad flags as clap
/// prints them (which ends the process, as for the binary).
pub fn main_with<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    // A host process (Python) may have set a subscriber already, or call this twice.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MNEMON_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .without_time()
        .try_init();
    let cli = Cli::parse_from(args);
    match run(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Ingest { store, user, format, max_users, models, file } => {
            ingest::run(&store.path()?, user, format, max_users, &models, &file)?
        }
        Command::ImportChats { store, user, format, dry_run, models, file } => {
            import_chats::run(&store.path()?, &user, format, dry_run, &models, &file)?
        }
        Command::Context { query, budget, angles, profile, whole_rounds, json } => {
            store::context(&query, budget, &angles, profile, whole_rounds, json)?
        }
        Command::Recall { query } => store::recall(&query)?,
        Command::Export { store, user, agent, format, as_of, output } => store::export(
            &store,
            Scope::user(&user).with_agent(agent.as_deref()),
            format,
            as_of.as_deref(),
            output.as_deref(),
        )?,
        Command::Import { store, file } => store::import(&store, &file)?,
        Command::Reextract { store, user, all, round, models } => {
            store::reextract(&store, user.as_deref(), all, &round, &models)?
        }
        Command::Consolidate {
            store,
            user,
            agent,
            condense,
            condense_batch,
            models,
            decay,
            half_life,
            floor,
        } => {
            let decay = decay.then_some(mnemon::config::Decay { half_life_days: half_life, floor });
            let condense = condense.map(|keep| mnemon::config::Condense { keep, batch: condense_batch });
            let config = mnemon::config::Config { decay, condense, ..mnemon::config::Config::default() };
            store::consolidate(&store, Scope::user(&user).with_agent(agent.as_deref()), config, &models)?
        }
        Command::Log { store, user } => store::log(&store, &user)?,
        Command::Profile { store, user, agent, json } => {
            store::profile(&store, &user, agent.as_deref(), json)?
        }
        Command::Forget { store, user, models } => store::forget(&store, &user, &models)?,
        Command::Fuzz { cases, seed, target } => {
            let tallies = fuzz::run(cases, seed, target.as_deref(), |t| {
                input::parse_jsonl_text(t, "fuzz")
                    .is_ok_and(|m| mnemon::rounds::validate_messages(&m).is_ok())
            })?;
            println!(
                "| target | cases | accepted | rejected (typed error) | panics |\n|---|---|---|---|---|"
            );
            let mut total = fuzz::Tally::default();
            for (name, t) in &tallies {
                println!("| {name} | {} | {} | {} | {} |", t.cases, t.accepted, t.rejected, t.panics);
                total.cases += t.cases;
                total.accepted += t.accepted;
                total.rejected += t.rejected;
                total.panics += t.panics;
            }
            println!(
                "| all | {} | {} | {} | {} |",
                total.cases, total.accepted, total.rejected, total.panics
            );
            if total.panics > 0 {
                bail!("{} cases panicked (inputs in fuzz-panic-*.txt)", total.panics);
            }
        }
        Command::Backup { store, out } => store::backup(&store, &out)?,
        Command::Doctor { store, models: folder, extractor } => {
            let db = store.as_deref().map(|s| models::store_path(Some(s))).transpose()?;
            let dir = folder.clone().unwrap_or_else(mnemon::model_files::default_dir);
            let extractor = extractor.map(|x| models::extractor_path(&x, &dir));
            return Ok(doctor::run(db.as_deref(), folder, extractor.as_deref()));
        }
        Command::Demo { store, models } => demo::run(store, &models)?,
        Command::Bench(args) => bench::run(&args)?,
        Command::Extract(args) => extract::run(&args)?,
        Command::Eval(command) => eval::run(command)?,
        Command::Notes(command) => notes::run(command)?,
        Command::Mcp(args) => serve::mcp(&args)?,
        Command::Serve(args) => serve::serve(&args, false)?,
        Command::Proxy(args) => serve::serve(&args, true)?,
        Command::Loadtest(args) => loadtest::run(&args)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The service's own error when it cannot open its stores (a store built under other pins, a
/// reference outside the data directory): shown as its message, and kept whole for a caller that
/// maps codes (the Python package).
#[derive(Debug)]
pub struct OpenError(pub mnemon_server::ApiError);

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for OpenError {}

/// The service `mnemon mcp` runs, configured from the same flags (`--store`, `--data`, `--root`,
/// `--embedder`, `--models`, `--extractor`, `--extract-cache`, …; the first argument is a
/// program name): how the Python package reaches a store in its own process, with the servers'
/// validation and results.
pub fn service_from_flags<I, T>(args: I) -> Result<std::sync::Arc<mnemon_server::Service>>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    #[derive(clap::Parser)]
    struct Flags {
        #[command(flatten)]
        stores: flags::ServerArgs,
    }
    let flags = Flags::try_parse_from(args)?;
    // In the caller's own process, as `mcp`: its writes may create the stores it names.
    flags.stores.service(0, true)
}
