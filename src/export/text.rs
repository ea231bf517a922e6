//! Markdown for people and plain text with every field: rounds oldest first with their facts,
//! notes, and (text) every fact record and the decision log. Deterministic bytes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{ExportFormat, Records};
use crate::error::{Error, Result};
use crate::model::scope::Scope;
use crate::read::Fact;
use crate::read::render::{self, RenderRound, Style};
use crate::store::{NoteRow, Pins, RoundRow, extractor_json};

fn round_view<'a>(r: &'a RoundRow, facts: &'a [String]) -> RenderRound<'a> {
    RenderRound {
        id: r.id,
        key: &r.key,
        session: &r.session,
        ts: &r.ts,
        ts_unix: r.ts_unix,
        turns: &r.turns,
        facts,
        marks: &[],
    }
}

fn opt(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("-")
}

/// A scope's name in export headings: the user, and the agent when there is one.
fn heading(scope: Scope<'_>) -> String {
    match scope.agent {
        None => format!("`{}`", scope.user),
        Some(a) => format!("`{}` (agent `{a}`)", scope.user),
    }
}

fn note_dates(n: &NoteRow) -> String {
    if n.updated == n.ts {
        format!("**{}**", n.ts)
    } else {
        format!("**{}** (updated **{}**)", n.ts, n.updated)
    }
}

/// Notes oldest first (by `ts`, then key), as people read them.
fn chronological(notes: &[NoteRow]) -> Vec<NoteRow> {
    let mut sorted = notes.to_vec();
    sorted.sort_by(|a, b| a.ts_unix.cmp(&b.ts_unix).then(a.key.cmp(&b.key)));
    sorted
}

/// The notes section of a Markdown export.
fn notes_markdown(out: &mut String, notes: &[NoteRow]) {
    let _ = writeln!(out, "## Notes\n");
    for n in notes {
        let _ = writeln!(out, "### {}\n", n.title.as_deref().unwrap_or(&n.key));
        let mut line =
            format!("`{}` · {} · importance {} · {}", n.key, n.kind.as_str(), n.importance, note_dates(n));
        if let Some(a) = &n.agent {
            line.push_str(&format!(" · agent `{a}`"));
        }
        if !n.tags.is_empty() {
            let tags: Vec<String> = n.tags.iter().map(|t| format!("`{t}`")).collect();
            line.push_str(&format!(" · tags {}", tags.join(", ")));
        }
        let _ = writeln!(out, "{line}\n");
        if let Some(into) = &n.condensed_into {
            let _ = writeln!(out, "*Condensed into `{into}`.*\n");
        }
        for l in n.content.lines() {
            out.push_str(if l.is_empty() { ">\n" } else { "> " });
            if !l.is_empty() {
                out.push_str(l);
                out.push('\n');
            }
        }
        out.push('\n');
        if let Some(keys) = &n.condenses {
            let keys: Vec<String> = keys.split(' ').map(|k| format!("`{k}`")).collect();
            let _ = writeln!(out, "Condenses {}.\n", keys.join(", "));
        }
        if n.metadata != "{}" {
            let _ = writeln!(out, "metadata: `{}`\n", n.metadata);
        }
    }
}

/// The notes section of a text export: every field.
fn notes_text(out: &mut String, notes: &[NoteRow]) {
    let _ = writeln!(out, "\nnotes: {}", notes.len());
    for n in notes {
        let _ = writeln!(
            out,
            "  {} kind {} importance {} ts {} updated {} tokens {} agent {} title {} tags {} condensed_into {} condenses {}\n    metadata: {}\n    {}",
            n.key,
            n.kind.as_str(),
            n.importance,
            n.ts,
            n.updated,
            n.tokens,
            opt(&n.agent),
            opt(&n.title),
            serde_json::to_string(&n.tags).unwrap_or_default(),
            opt(&n.condensed_into),
            opt(&n.condenses),
            n.metadata,
            n.content.replace('\n', "\n    ")
        );
    }
}

pub(super) fn render(
    pins: &Pins,
    scope: Scope<'_>,
    now: Option<&str>,
    records: &Records,
    format: ExportFormat,
) -> Result<String> {
    let Records { rounds, facts, notes, decisions, extractors, .. } = records;
    // Markdown shows superseded facts struck through with their winner; text shows them in its
    // record list below; contexts never show them.
    let mut lines: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for f in facts {
        let fact = Fact::from(f.clone());
        let line = fact.line();
        let line = match (format, &f.superseded_by) {
            (ExportFormat::Markdown, Some(winner)) => format!("~~{line}~~ (superseded by `{winner}`)"),
            (_, Some(_)) => continue,
            (ExportFormat::Markdown, None) if !fact.supersedes.is_empty() => {
                let keys: Vec<String> = fact.supersedes.iter().map(|k| format!("`{k}`")).collect();
                format!("{line} → supersedes {}", keys.join(", "))
            }
            _ => line,
        };
        lines.entry(f.round_id).or_default().push(line);
    }
    let none = Vec::new();
    let views: Vec<RenderRound<'_>> =
        rounds.iter().map(|r| round_view(r, lines.get(&r.id).unwrap_or(&none))).collect();
    let sessions = rounds.iter().map(|r| &r.session).collect::<std::collections::BTreeSet<_>>().len();
    let mut out = String::new();
    match format {
        ExportFormat::Markdown => {
            let _ = writeln!(out, "# Memory of {}\n", heading(scope));
            let _ = writeln!(
                out,
                "{} rounds in {} sessions; latest **{}**.\n",
                rounds.len(),
                sessions,
                now.unwrap_or("none")
            );
            if !notes.is_empty() {
                notes_markdown(&mut out, &chronological(notes));
            }
            out.push_str(&render::render(&views, Style::Markdown));
        }
        ExportFormat::Text => {
            let _ =
                writeln!(out, "mnemon export\nuser: {}\nlogical now: {}", scope.user, now.unwrap_or("none"));
            if let Some(a) = scope.agent {
                let _ = writeln!(out, "agent: {a}");
            }
            let _ =
                writeln!(out, "rounds: {}\nsessions: {sessions}\npins_hash: {}\n", rounds.len(), pins.hash());
            out.push_str(&render::render(&views, Style::Text));
            let _ = writeln!(out, "\nfacts: {}", facts.len());
            for f in facts {
                let _ = writeln!(
                    out,
                    "  {} salience {} (initial {}) valid_time {} mention {} triple ({} | {} | {}) pair_key {} \
                     superseded {} supersedes {}\n    {}\n    excerpt: {}",
                    f.key,
                    f.salience,
                    f.initial_salience,
                    opt(&f.valid_time),
                    opt(&f.mention),
                    opt(&f.subject),
                    opt(&f.predicate),
                    opt(&f.object),
                    opt(&f.pair_key),
                    f.superseded_by.as_deref().map_or("no".to_owned(), |w| format!("by {w}")),
                    opt(&f.supersedes),
                    f.content,
                    f.raw
                );
            }
            if !notes.is_empty() {
                notes_text(&mut out, &chronological(notes));
            }
            let _ = writeln!(out, "\ndecisions:");
            // Numbered per user, so a user's export does not depend on other users' writes.
            for (n, d) in decisions.iter().enumerate() {
                let _ = write!(out, "  #{} at {} {} {}", n + 1, d.at, d.kind, d.record);
                if let Some(o) = &d.other {
                    let _ = write!(out, " of {o}");
                }
                let _ = writeln!(out, " {}", d.detail);
            }
            let used: Vec<_> = extractors.iter().filter(|e| e.rounds + e.facts > 0).collect();
            if !used.is_empty() {
                let _ = writeln!(out, "\nextractors:");
                for e in used {
                    let pins = extractor_json(&e.pins);
                    let _ = writeln!(out, "  {} rounds {} facts {}\n    {pins}", e.hash, e.rounds, e.facts);
                }
            }
        }
        ExportFormat::Jsonl => {
            return Err(Error::input("format", "the JSONL dump is written by export_dump"));
        }
    }
    Ok(out)
}
