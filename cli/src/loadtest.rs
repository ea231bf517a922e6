//! `mnemon loadtest`: drives a running `mnemon serve` over loopback HTTP with many concurrent
//! clients (threads, each with its own connection) and prints throughput, latency percentiles
//! and errors. A measurement, bounded in time; nothing here asserts a speed.
//!
//! Without `--rate` the clients are a closed loop (each sends its next request as soon as the
//! last one is answered): that finds the server's saturation throughput, and latency is then
//! the queue that 50 clients build. With `--rate` the load is open: requests are sent on a fixed
//! schedule at that total rate, and each latency counts from the request's scheduled time, so a
//! server that falls behind is charged for the wait (no coordinated omission).
//!
//! Answers are counted apart: 200 (admitted; latency percentiles are of these), 503
//! `overloaded` with `Retry-After` (shed by the server's limit), and anything else (errors).
#![allow(clippy::disallowed_methods)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use anyhow::{anyhow, bail, Result};

use crate::bench::Words;
use crate::flags::LoadtestArgs as Args;

#[derive(Clone)]
struct Sample {
    write: bool,
    micros: u64,
    outcome: Outcome,
    /// What an error was: its status and code, or the transport's message.
    error: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Ok,
    Shed,
    Error,
}

fn post(
    agent: &ureq::Agent,
    url: &str,
    token: Option<&str>,
    body: &serde_json::Value,
) -> Result<u16, String> {
    send(agent, url, token, body).map(|(status, _)| status)
}

/// Status, and whether the answer carried `Retry-After`.
fn send(
    agent: &ureq::Agent,
    url: &str,
    token: Option<&str>,
    body: &serde_json::Value,
) -> Result<(u16, bool), String> {
    let mut req = agent.post(url);
    if let Some(t) = token {
        req = req.header("Authorization", &format!("Bearer {t}"));
    }
    match req.send_json(body) {
        Ok(mut r) => {
            let status = r.status().as_u16();
            let retry = r.headers().contains_key("retry-after");
            let body = r.body_mut().read_to_vec().unwrap_or_default();
            if status != 200 && !(status == 503 && retry) {
                let code = serde_json::from_slice::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v["error"]["code"].as_str().map(str::to_owned))
                    .unwrap_or_default();
                return Err(format!("{status} {code}"));
            }
            Ok((status, retry))
        }
        Err(e) => Err(e.to_string()),
    }
}

fn outcome(answer: Result<(u16, bool), String>) -> Outcome {
    match answer {
        Ok((200, _)) => Outcome::Ok,
        Ok((503, true)) => Outcome::Shed,
        _ => Outcome::Error,
    }
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

pub fn run(args: &Args) -> Result<()> {
    if args.rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
        bail!("--rate must be a positive number of requests per second");
    }
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let token = args.token.as_deref();
    let mut words = Words(7);
    let seed_started = Instant::now();
    for u in 0..args.users {
        for chunk in (0..args.seed).collect::<Vec<_>>().chunks(500) {
            let memories: Vec<serde_json::Value> = chunk
                .iter()
                .map(|i| json!({"content": words.sentence(12), "ts": format!("2026-01-01T00:{:02}:{:02}", (i / 60) % 60, i % 60), "tags": [words.word()]}))
                .collect();
            let status = post(
                &agent,
                &format!("{}/v1/memories", args.url),
                token,
                &json!({"user_id": format!("{}-{u}", args.prefix), "memories": memories}),
            )
            .map_err(|e| anyhow!(e))?;
            if status != 200 {
                bail!("seeding answered {status}");
            }
        }
    }
    eprintln!(
        "seeded {} users × {} memories in {:.1} s",
        args.users,
        args.seed,
        seed_started.elapsed().as_secs_f64()
    );

    let stop = Arc::new(AtomicBool::new(false));
    let samples = Arc::new(Mutex::new(Vec::<Sample>::new()));
    // Writes made so far, for --write-pool.
    let written = Arc::new(std::sync::atomic::AtomicU64::new(0));
    // Answers since the last interval line (only with --interval).
    let tally = Arc::new(Mutex::new(Vec::<Sample>::new()));
    let started = Instant::now();
    let handles: Vec<_> = (0..args.clients)
        .map(|c| {
            let (stop, samples, tally) = (Arc::clone(&stop), Arc::clone(&samples), Arc::clone(&tally));
            let (written, pool) = (Arc::clone(&written), args.write_pool);
            let tallied = args.interval > 0;
            let (url, token, writes, users) = (args.url.clone(), args.token.clone(), args.writes, args.users);
            let prefix = args.prefix.clone();
            // Open loop: client c sends at started + (c + j·clients) / rate, j = 0, 1, 2, …
            let schedule = args.rate.map(|rate| {
                let gap = Duration::from_secs_f64(1.0 / rate);
                (started + gap * c as u32, gap * args.clients as u32)
            });
            std::thread::spawn(move || {
                let agent: ureq::Agent =
                    ureq::Agent::config_builder().http_status_as_error(false).build().into();
                let mut words = Words(1000 + c as u64);
                let mut mine = Vec::new();
                let mut next = schedule.map(|(first, _)| first);
                while !stop.load(Ordering::Relaxed) {
                    if let Some(at) = next {
                        std::thread::sleep(at.saturating_duration_since(Instant::now()));
                    }
                    let due = next;
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let mut user = format!("{prefix}-{}", words.next() as usize % users);
                    let write = (words.next() % 10_000) as f64 / 10_000.0 < writes;
                    let (path, body) = if write && pool > 0 {
                        // The w-th write of the run: user w mod users, pool item w / users.
                        let w = written.fetch_add(1, Ordering::Relaxed);
                        let i = (w / users as u64) % pool;
                        user = format!("{prefix}-{}", w % users as u64);
                        let content = Words(1_000_000 + w % users as u64 * pool + i).sentence(12);
                        let ts = format!("2026-02-01T{:02}:{:02}:{:02}", i / 3600 % 24, i / 60 % 60, i % 60);
                        (
                            "/v1/memories",
                            json!({"user_id": user, "memories": [{"content": content, "ts": ts}]}),
                        )
                    } else if write {
                        ("/v1/memories", json!({"user_id": user, "memories": [words.sentence(12)]}))
                    } else {
                        (
                            "/v1/memories/search",
                            json!({"user_id": user, "query": words.sentence(6), "limit": 10}),
                        )
                    };
                    let t = due.unwrap_or_else(Instant::now);
                    let answer = send(&agent, &format!("{url}{path}"), token.as_deref(), &body);
                    let error = answer.as_ref().err().cloned();
                    let micros = t.elapsed().as_micros() as u64;
                    let sample = Sample { write, micros, outcome: outcome(answer), error };
                    if tallied {
                        tally.lock().unwrap().push(sample.clone());
                    }
                    mine.push(sample);
                    if let (Some(at), Some((_, period))) = (next.as_mut(), schedule) {
                        *at += period;
                    }
                }
                samples.lock().unwrap().extend(mine);
            })
        })
        .collect();
    if args.interval == 0 {
        std::thread::sleep(Duration::from_secs(args.seconds));
    } else {
        println!("{:>6} {:>8} {:>9} {:>8} {:>7}", "t s", "rps", "p99 ms", "shed", "errors");
        let mut t = 0;
        while t < args.seconds {
            let step = args.interval.min(args.seconds - t);
            std::thread::sleep(
                (started + Duration::from_secs(t + step)).saturating_duration_since(Instant::now()),
            );
            let tally = tally.lock().unwrap().drain(..).collect::<Vec<Sample>>();
            let mut lat: Vec<u64> =
                tally.iter().filter(|s| s.outcome == Outcome::Ok).map(|s| s.micros).collect();
            lat.sort_unstable();
            let count = |o: Outcome| tally.iter().filter(|s| s.outcome == o).count();
            println!(
                "{:>6} {:>8.1} {:>9.2} {:>8} {:>7}",
                t + step,
                tally.len() as f64 / step as f64,
                percentile(&lat, 0.99),
                count(Outcome::Shed),
                count(Outcome::Error)
            );
            t += step;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().map_err(|_| anyhow!("a client panicked"))?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let recovered = (args.recovery > 0).then(|| recovery(&agent, args, token));
    let samples = samples.lock().unwrap();
    let pace = args.rate.map_or("closed loop".to_owned(), |r| format!("open loop at {r:.0} requests/s"));
    println!(
        "{} clients, {pace}, {:.0} s, {:.0} % writes, {} users × {} seeded memories",
        args.clients,
        elapsed,
        args.writes * 100.0,
        args.users,
        args.seed
    );
    println!(
        "{:<8} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>7} {:>7}",
        "kind", "requests", "rps", "admitted", "p50 ms", "p95 ms", "p99 ms", "shed", "errors"
    );
    for (name, pick) in [("search", Some(false)), ("write", Some(true)), ("all", None)] {
        let mine: Vec<&Sample> = samples.iter().filter(|s| pick.is_none_or(|w| s.write == w)).collect();
        let mut lat: Vec<u64> = mine.iter().filter(|s| s.outcome == Outcome::Ok).map(|s| s.micros).collect();
        lat.sort_unstable();
        let count = |o: Outcome| mine.iter().filter(|s| s.outcome == o).count();
        println!(
            "{name:<8} {:>9} {:>9.1} {:>9} {:>8.2} {:>8.2} {:>8.2} {:>7} {:>7}",
            mine.len(),
            mine.len() as f64 / elapsed,
            lat.len(),
            percentile(&lat, 0.50),
            percentile(&lat, 0.95),
            percentile(&lat, 0.99),
            count(Outcome::Shed),
            count(Outcome::Error)
        );
    }
    let mut kinds = std::collections::BTreeMap::<&str, usize>::new();
    for e in samples.iter().filter_map(|s| s.error.as_deref()) {
        *kinds.entry(e).or_default() += 1;
    }
    for (kind, n) in kinds {
        println!("error {n} × {kind}");
    }
    if let Some(r) = recovered {
        match r {
            Some(s) => println!("full service {s:.1} s after the load stopped"),
            None => println!("service was not whole by the end of the recovery probe"),
        }
    }
    // What a checker compares with the store: every acknowledged memory must be there.
    let acknowledged = samples.iter().filter(|s| s.write && s.outcome == Outcome::Ok).count();
    println!("acknowledged writes {acknowledged} (+ {} seeded)", args.users * args.seed);
    Ok(())
}

/// One search every 100 ms for `args.recovery` seconds: seconds from the first probe to the
/// probe after which every answer was 200 within 200 ms (`None`: never).
fn recovery(agent: &ureq::Agent, args: &Args, token: Option<&str>) -> Option<f64> {
    let begun = Instant::now();
    let mut words = Words(99);
    let mut whole_since: Option<f64> = Some(0.0);
    let mut i = 0u32;
    while begun.elapsed() < Duration::from_secs(args.recovery) {
        let due = begun + Duration::from_millis(100) * i;
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        let sent = Instant::now();
        let body = json!({"user_id": format!("{}-0", args.prefix), "query": words.sentence(6), "limit": 10});
        let answer = send(agent, &format!("{}/v1/memories/search", args.url), token, &body);
        let good = matches!(answer, Ok((200, _))) && sent.elapsed() <= Duration::from_millis(200);
        if !good {
            whole_since = None;
        } else if whole_since.is_none() {
            whole_since = Some(sent.duration_since(begun).as_secs_f64());
        }
        i += 1;
    }
    whole_since
}
