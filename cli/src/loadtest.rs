//! `mnemon loadtest`: drives a running `mnemon serve` over loopback HTTP with many concurrent
//! clients (threads, each with its own connection) and prints throughput, latency percentiles
//! and errors. A measurement, bounded in time; nothing here asserts a speed.
//!
//! Without `--rate` the clients are a closed loop (each sends its next request as soon as the
//! last one is answered): that finds the server's saturation throughput, and latency is then
//! the queue that 50 clients build. With `--rate` the load is open: requests are sent on a fixed
//! schedule at that total rate, and each latency counts from the request's scheduled time, so a
//! server that falls behind is charged for the wait (no coordinated omission).
#![allow(clippy::disallowed_methods)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use anyhow::{anyhow, bail, Result};

use crate::bench::Words;
use crate::flags::LoadtestArgs as Args;

struct Sample {
    write: bool,
    micros: u64,
    ok: bool,
}

fn post(
    agent: &ureq::Agent,
    url: &str,
    token: Option<&str>,
    body: &serde_json::Value,
) -> Result<u16, String> {
    let mut req = agent.post(url);
    if let Some(t) = token {
        req = req.header("Authorization", &format!("Bearer {t}"));
    }
    match req.send_json(body) {
        Ok(mut r) => {
            let status = r.status().as_u16();
            let _ = r.body_mut().read_to_vec();
            Ok(status)
        }
        Err(e) => Err(e.to_string()),
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
    let started = Instant::now();
    let handles: Vec<_> = (0..args.clients)
        .map(|c| {
            let (stop, samples) = (Arc::clone(&stop), Arc::clone(&samples));
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
                    let user = format!("{prefix}-{}", words.next() as usize % users);
                    let write = (words.next() % 10_000) as f64 / 10_000.0 < writes;
                    let (path, body) = if write {
                        ("/v1/memories", json!({"user_id": user, "memories": [words.sentence(12)]}))
                    } else {
                        (
                            "/v1/memories/search",
                            json!({"user_id": user, "query": words.sentence(6), "limit": 10}),
                        )
                    };
                    let t = due.unwrap_or_else(Instant::now);
                    let ok = post(&agent, &format!("{url}{path}"), token.as_deref(), &body)
                        .is_ok_and(|s| s == 200);
                    mine.push(Sample { write, micros: t.elapsed().as_micros() as u64, ok });
                    if let (Some(at), Some((_, period))) = (next.as_mut(), schedule) {
                        *at += period;
                    }
                }
                samples.lock().unwrap().extend(mine);
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(args.seconds));
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().map_err(|_| anyhow!("a client panicked"))?;
    }
    let elapsed = started.elapsed().as_secs_f64();
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
        "{:<8} {:>9} {:>9} {:>8} {:>8} {:>8} {:>7}",
        "kind", "requests", "rps", "p50 ms", "p95 ms", "p99 ms", "errors"
    );
    for (name, pick) in [("search", Some(false)), ("write", Some(true)), ("all", None)] {
        let mut lat: Vec<u64> =
            samples.iter().filter(|s| pick.is_none_or(|w| s.write == w)).map(|s| s.micros).collect();
        lat.sort_unstable();
        let errors = samples.iter().filter(|s| pick.is_none_or(|w| s.write == w) && !s.ok).count();
        println!(
            "{name:<8} {:>9} {:>9.1} {:>8.2} {:>8.2} {:>8.2} {errors:>7}",
            lat.len(),
            lat.len() as f64 / elapsed,
            percentile(&lat, 0.50),
            percentile(&lat, 0.95),
            percentile(&lat, 0.99)
        );
    }
    // What a checker compares with the store: every acknowledged memory must be there.
    let acknowledged = samples.iter().filter(|s| s.write && s.ok).count();
    println!("acknowledged writes {acknowledged} (+ {} seeded)", args.users * args.seed);
    Ok(())
}
