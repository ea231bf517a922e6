//! `mnemon bench --notes`: remember, list and search speed on synthetic notes.

use super::*;

/// Notes: 12 words each, two of 24 tags drawn at random, the three kinds in turn, one every 10
/// minutes from 2024-01-01. The filter keeps one tag, two kinds and the last three quarters of the
/// time span: about 6 % of the notes.
pub(super) fn run_notes(args: &Args) -> Result<()> {
    let embedder = args.models.embedder()?;
    println!("embedder: {} ({} dims), notes", embedder.pins().name, embedder.pins().dim);
    println!("| notes | remember notes/s | index load (ms) | search p50 / p95 (ms) | search, filtered p50 / p95 (ms) | search through the service, JSON in and out, p50 / p95 (ms) | list p50 / p95 (ms) | list, filtered p50 / p95 (ms) | peak RSS (MiB) |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for &size in &args.sizes {
        let mut words = Words(size as u64 + 7);
        let start =
            chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap_or_default().and_time(chrono::NaiveTime::MIN);
        let at = |i: usize| {
            (start + chrono::Duration::minutes(10 * i as i64)).format("%Y-%m-%dT%H:%M:%S").to_string()
        };
        let notes: Vec<NewNote> = (0..size)
            .map(|i| {
                let tags = [format!("t{}", words.next() % 24), format!("t{}", words.next() % 24)];
                NewNote::new(words.sentence(12), at(i))
                    .tags(tags)
                    .kind(NoteKind::ALL[i % 3])
                    .importance((i % 10) as f32 / 10.0)
            })
            .collect();
        let dir = tempfile::tempdir().context("temp dir")?;
        let memory = Memory::builder(dir.path().join("bench.db"))
            .embedder(embedder.clone())
            .config(Config { rrf_k: args.fusion.rrf_k(), ..Config::default() })
            .open()?;
        let t = Instant::now();
        for chunk in notes.chunks(mnemon::notes::MAX_NOTES_PER_CALL) {
            memory.remember(chunk, "bench")?;
        }
        let remember_s = t.elapsed().as_secs_f64();
        let filter = Filter {
            tags_any: vec!["t5".into()],
            kinds: vec![NoteKind::Episodic, NoteKind::Semantic],
            after: Some(at(size / 4)),
            ..Filter::default()
        };
        let queries: Vec<String> = (0..args.queries).map(|_| words.sentence(6)).collect();
        if let Some(out) = &args.workload_out {
            let notes: Vec<_> = notes
                .iter()
                .map(|n| {
                    serde_json::json!({"content": n.content, "ts": n.ts, "tags": n.tags,
                        "kind": n.kind.map(|k| k.as_str()), "importance": n.importance})
                })
                .collect();
            let path = out.with_extension(format!("{size}.json"));
            std::fs::write(&path, serde_json::json!({"notes": notes, "queries": queries}).to_string())
                .with_context(|| format!("writing {}", path.display()))?;
        }
        let t = Instant::now();
        memory.search(&Search::new("warm up the index"), "bench")?;
        let load_ms = t.elapsed().as_secs_f64() * 1e3;
        let search = timed(&queries, |q| memory.search(&Search::new(q), "bench"))?;
        let filtered = timed(&queries, |q| memory.search(&Search::new(q).filter(filter.clone()), "bench"))?;
        // The servers' and Python's path: the operation by name on JSON text, its result as text.
        let service = service_on(&dir.path().join("bench.db"), args)?;
        let tool =
            mnemon_server::operations::tool("search_memories").ok_or_else(|| anyhow!("no search tool"))?;
        let call = |q: &str| -> Result<String> {
            let args = serde_json::json!({"user_id": "bench", "query": q}).to_string();
            let value: serde_json::Value = serde_json::from_str(&args)?;
            Ok(tool
                .value(&service, &mnemon_server::Principal::Admin, value)
                .map_err(|e| anyhow!("{}", e.message))?
                .to_string())
        };
        call("warm up the index")?;
        let served = timed(&queries, call)?;
        let list = timed(&queries, |_| memory.list(&ListNotes::default(), "bench"))?;
        let listed = timed(&queries, |_| {
            memory.list(&ListNotes { filter: filter.clone(), ..ListNotes::default() }, "bench")
        })?;
        println!(
            "| {size} | {:.0} | {load_ms:.1} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:.0} |",
            size as f64 / remember_s,
            search.0,
            search.1,
            filtered.0,
            filtered.1,
            served.0,
            served.1,
            list.0,
            list.1,
            listed.0,
            listed.1,
            peak_rss_mib()
        );
    }
    Ok(())
}
