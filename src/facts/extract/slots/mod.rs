//! The slots contract: the model reads only a round's candidate sentences and fills one record
//! per fact; the fact's sentence and excerpt are the speaker's own words.
//!
//! Under the open contract a small model writes each fact as prose, and on real conversations it
//! wrote the prompt's worked example into unrelated rounds, ran sentences on into the user's next
//! question, and gave free predicates whose keys never met, so nothing was ever superseded. Here:
//!
//! - [`candidates`] picks, deterministically, the first-person statements of a round that carry a
//!   value: a digit or number word, a name, a time word, or a relation cue
//!   (`lexicons/fact_cues.txt`). Questions and requests do not go; a question's leading statement
//!   ("I'm changing my limit to two cups, do you think …?") does. A round without a candidate
//!   skips the model.
//! - The model reads the numbered candidates only and writes records `{n, entity, relation,
//!   value}`, `relation` from a closed vocabulary ([`RELATIONS`]) that the grammar enforces.
//! - [`parse`] keeps a record only when its value is copied from its sentence and its entity from
//!   the sentence or the one before it (for "17 new ones"), so nothing can be invented; one per
//!   sentence. The fact's text is the sentence in the third person, its excerpt the sentence
//!   itself, its time mention the sentence's own as the date resolver reads it ([`mention`]), and
//!   its triple `user's <entity head> | <relation> | <value>`: a later value of the same thing
//!   meets the earlier one under one key, and the conflict rules can supersede it.
//! - A first-person statement no record holds is still a fact, with no key: dated when it holds a
//!   time mention that resolves ("I ran a charity race last Saturday"), else a description of its
//!   speaker when it says something of substance ([`describes`]: "I'm doing kickboxing at the
//!   local gym"). Descriptions cost no decode: the model reads only the candidates.
//!
//! Everything here is a pure function of the round and the model's output.

use std::collections::HashSet;
use std::sync::LazyLock;

use chrono::NaiveDate;
use serde_json::Value;

use super::{ExtractedFact, MAX_FACTS};
use crate::facts::normalize::{entries, number_word};
use crate::facts::prefilter::{contains_phrase, has_digit_or_name, normalize};
use crate::facts::resolve::resolve;
use crate::model::round::{Role, Turn};
use crate::model::time::Timestamp;

mod candidates;
mod grammar;
mod holder;
mod mention;
mod person;
mod values;

pub use candidates::candidates;
use candidates::*;
pub use grammar::{GRAMMAR_VERSION, grammar, input, parse};
use holder::*;
pub use mention::mention;
use person::*;
pub use person::{subject, third_person};
use values::*;

/// The prompt: instructions, then worked examples as chat turns.
pub const PROMPT: &str = include_str!("../../../../prompts/slots.md");

const CUES: &str = include_str!("../../../../lexicons/fact_cues.txt");

const SLOT_CUES: &str = include_str!("../../../../lexicons/slot_cues.txt");

/// Relations read from the words before a value ([`cued`]); part of the facts rules.
const SLOT_RELATIONS: &str = include_str!("../../../../lexicons/slot_relations.txt");

/// Number words are read through the conflict normalizer's lexicon; the file is hashed here
/// because the candidates depend on it.
const NUMBER_WORDS: &str = include_str!("../../../../lexicons/number_words.txt");

/// What a description is ([`describes`]): social talk and function words; part of the facts rules.
const DESCRIPTIONS: &str = include_str!("../../../../lexicons/slot_descriptions.txt");

/// Version of the rules that choose what the model reads ([`candidates`], [`input`]), hashed with
/// the lexicons into the extractor's prompt pin: another version is another model input.
const CANDIDATES_VERSION: &str = "slots-candidates-v3 at-most=6 words=3..60 colon-lead-ins we-contractions";

/// Version of the rules that make facts of the model's records ([`facts`]), pinned in stores built
/// with an extractor with the relation lexicon ([`facts_rules`]). A cache re-parses stored
/// outputs, so these rules can change without a model call.
pub const FACTS_VERSION: &str = "slots-facts-v5 one-per-sentence counted<=3 mention<=5 names measured-values cued-relations speaker-holds generic-heads single-is-one time-units-are-durations dated-statements speaker-owned goals-numbered places-elsewhere-not-times increments descriptions ratios unsaid-subjects dashes-split-words speaker-alone plain-records-of-speaker no-ago-values vocatives listener-holds years-not-counts appositions places-happened verbs-agree times-not-counts codes-not-numbers own-names-and-jobs-shown names-right-way-round modifier-before-holder time-units-no-entities possessors-possess";

/// The facts rules' pin: [`FACTS_VERSION`] and the blake3 of the relation and description
/// lexicons.
pub fn facts_rules() -> String {
    let hash = |text: &str| blake3::hash(text.as_bytes()).to_hex()[..16].to_owned();
    format!("{FACTS_VERSION} relations={} descriptions={}", hash(SLOT_RELATIONS), hash(DESCRIPTIONS))
}

/// At most this many sentences of a round go to the model.
pub const MAX_CANDIDATES: usize = 6;

const MIN_WORDS: usize = 3;

const MAX_WORDS: usize = 60;

/// The relations a record may name, and the predicate each fact gets. All from `count` to `name`
/// hold one value at a time for their entity (`lexicons/functional.txt`): a new value supersedes
/// the old. `other` is a fact without a relation (no key, never superseded).
pub const RELATIONS: [(&str, &str); 17] = [
    ("count", "count"),
    ("frequency", "frequency"),
    ("duration", "duration"),
    ("score", "score"),
    ("goal", "goal"),
    ("schedule", "schedule"),
    ("place", "place"),
    ("home", "lives in"),
    ("workplace", "works at"),
    ("job", "works as"),
    ("name", "name is"),
    ("owns", "owns"),
    ("likes", "likes"),
    ("dislikes", "dislikes"),
    ("plans", "plans"),
    ("did", "did"),
    ("other", "other"),
];

/// Words that name the speaker as an entity.
const SPEAKER: [&str; 8] = ["i", "me", "myself", "user", "the user", "we", "us", "ourselves"];

/// First-person words (normalized: apostrophes removed).
const FIRST_PERSON: [&str; 14] =
    ["i", "im", "ive", "id", "ill", "me", "my", "mine", "myself", "we", "our", "ours", "us", "weve"];

/// Words that point back to something the sentence before named.
const POINTERS: [&str; 6] = ["ones", "it", "them", "they", "those", "these"];

/// Leading words of an entity that are not its head.
const DETERMINERS: [&str; 12] =
    ["my", "our", "the", "a", "an", "his", "her", "their", "your", "this", "that", "some"];

/// Words after which an entity's head has been named ("cups of coffee": cups).
const PREPOSITIONS: [&str; 10] = ["of", "from", "at", "in", "on", "for", "with", "to", "per", "by"];

struct Lexicon {
    openers: Vec<Vec<String>>,
    requests: Vec<Vec<String>>,
    asks: Vec<Vec<String>>,
    clauses: Vec<Vec<String>>,
    cues: Vec<Vec<String>>,
    times: HashSet<String>,
    /// Per relation, the phrases that name it before a value.
    relations: Vec<(String, Vec<Vec<String>>)>,
    social: Vec<Vec<String>>,
    function_words: HashSet<String>,
}

static LEXICON: LazyLock<Lexicon> = LazyLock::new(|| {
    let group = |name: &str| -> Vec<Vec<String>> {
        let mut g: Vec<Vec<String>> =
            entries(CUES).into_iter().filter(|(g, _)| g == name).map(|(_, l)| normalize(&l)).collect();
        // Longest first, so that "speaking of which" is taken whole.
        g.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        g
    };
    Lexicon {
        openers: group("openers"),
        requests: group("requests"),
        asks: group("asks"),
        clauses: group("question clauses"),
        cues: group("cues"),
        times: entries(SLOT_CUES)
            .into_iter()
            .filter(|(g, _)| g == "dates and times")
            .map(|(_, l)| l)
            .collect(),
        relations: entries(SLOT_RELATIONS).into_iter().fold(Vec::new(), |mut groups, (group, line)| {
            match groups.last_mut() {
                Some((name, phrases)) if *name == group => phrases.push(normalize(&line)),
                _ => groups.push((group, vec![normalize(&line)])),
            }
            groups
        }),
        social: entries(DESCRIPTIONS)
            .into_iter()
            .filter(|(g, _)| g == "social")
            .map(|(_, l)| normalize(&l))
            .collect(),
        function_words: entries(DESCRIPTIONS)
            .into_iter()
            .filter(|(g, _)| g == "function words")
            .map(|(_, l)| l)
            .collect(),
    }
});

/// blake3 over the candidate rules' version and the lexicons the candidates are chosen by.
pub fn rules_blake3() -> String {
    let framed = serde_json::json!([CANDIDATES_VERSION, CUES, SLOT_CUES, NUMBER_WORDS]);
    blake3::hash(framed.to_string().as_bytes()).to_hex().to_string()
}

/// One statement of a round: a candidate the model reads ([`candidates`]), or one only the rules
/// read (a dated statement or a description, [`facts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Whose turn it is from.
    pub role: Role,
    /// The statement, as written (openers and a trailing question cut off), its subject supplied
    /// when it went unsaid.
    pub text: String,
    /// The sentence before it in its turn, when the statement points back ("ones", "it").
    pub context: Option<String>,
    /// Its turn's date, which time mentions are read against.
    pub anchor: NaiveDate,
    /// The sentence as written when it has no subject and `text` supplies one ("Been only to
    /// Rome once." is read "I've been only to Rome once."); such a sentence never goes to the
    /// model.
    pub said: Option<String>,
}

/// One record as the model wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The candidate's number, from 1.
    pub n: usize,
    /// What the fact is about.
    pub entity: String,
    /// One of [`RELATIONS`].
    pub relation: String,
    /// The value, copied from the sentence.
    pub value: String,
}

/// The facts of a round's `records`, one per first-person statement at most, in sentence order:
/// - a candidate gets, of the records whose value is copied from it and whose entity is copied
///   from it or its context (or names the speaker), the one that fits best ([`fit`]; the first on
///   a tie), keyed by its entity and relation; a record whose value is not [`concrete`] counts
///   only when its sentence is about its speaker ([`of_speaker`]);
/// - a statement with no record that holds but a time mention that resolves ([`mention`]) is a
///   dated statement ("I ran a charity race last Saturday"): no key, so it supersedes nothing;
/// - any other statement is a plain description of its speaker ("I'm doing kickboxing"), no key
///   and no date, when it says something of substance ([`describes`]).
pub fn facts(records: &[Record], turns: &[Turn]) -> Vec<ExtractedFact> {
    let all = statements(turns);
    let numbered = chosen(&all);
    let mut best: Vec<Option<(usize, Record)>> = vec![None; all.len()];
    for r in records {
        let Some(&at) = r.n.checked_sub(1).and_then(|i| numbered.get(i)) else { continue };
        let c = &all[at].1;
        let r = &cued(r, c);
        let entity_ok = names_speaker(&r.entity)
            || copied(&r.entity, &c.text)
            || c.context.as_deref().is_some_and(|before| copied(&r.entity, before));
        if !entity_ok || !copied(&r.value, &c.text) || !holds_value(r, c) {
            continue;
        }
        let score = fit(r, c);
        if best[at].as_ref().is_none_or(|(s, _)| score > *s) {
            best[at] = Some((score, r.clone()));
        }
    }
    let mut out = Vec::new();
    for ((_, c), chosen) in all.iter().zip(best) {
        let chosen = chosen.filter(|(_, r)| concrete(r, c) || of_speaker(&c.text));
        // `mention` gives only a span that resolves to a date.
        let when = mention(&c.text, c.anchor);
        let owner = c.role.as_str();
        let (subject, predicate, object) = match &chosen {
            Some((_, r)) => match ratio(r, c) {
                Some((things, value)) => (format!("{owner}'s {things} ratio"), Some("ratio"), Some(value)),
                None => {
                    let counted = counted(&r.value, &c.text);
                    let entity = counted.as_deref().unwrap_or(&r.entity);
                    let own = names_speaker(entity) || holder_is_speaker(r, c);
                    let holder = if own { owner.to_owned() } else { subject(entity, c.role) };
                    let predicate = if own && !shown_as_own(r, c) || unit_alone(entity) {
                        // A name or a job the sentence does not say is the speaker's, or a unit
                        // of time alone as the thing: no key.
                        Some("other")
                    } else if r.relation == "place" && !owned(r, c) {
                        // Where something happened (a chat with a fan in California), not where a
                        // thing of the speaker's is kept: places of that kind coexist.
                        Some(HAPPENED_IN)
                    } else {
                        RELATIONS.iter().find(|(name, _)| *name == r.relation).map(|(_, p)| *p)
                    };
                    (holder, predicate, Some(r.value.clone()))
                }
            },
            None if when.is_some() || describes(&c.text) => (owner.to_owned(), Some("other"), None),
            None => continue,
        };
        out.push(ExtractedFact {
            content: third_person(&c.text, c.role),
            raw: format!("{owner}: {}", c.said.as_deref().unwrap_or(&c.text)),
            when,
            subject: Some(subject),
            predicate: predicate.map(str::to_owned),
            object,
            salience: 1.0,
        });
    }
    out
}

/// The predicate of a place of something not the speaker's own: where it happened. Not a
/// one-value relation, so two such places never supersede each other.
const HAPPENED_IN: &str = "happened in";

#[cfg(test)]
mod tests {
    use super::grammar::*;
    use super::*;

    fn turn(role: Role, content: &str) -> Turn {
        Turn::new(role, content, "2024-03-14")
    }

    #[test]
    fn candidates_are_first_person_statements_with_a_value() {
        let user = "I didn't know there were so many online communities. By the way, speaking of my \
                    collection, I was wondering if you could help me generate a list of my postcards? I've \
                    added 17 new ones since I started collecting again, and I'd like to keep track of them.";
        let c = candidates(&[turn(Role::User, user), turn(Role::Assistant, "I have 3 ideas for you.")]);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(
            c[0].text,
            "I've added 17 new ones since I started collecting again, and I'd like to keep track of them."
        );
        assert!(c[0].context.as_deref().is_some_and(|b| b.contains("my postcards?")), "points back");
        // A question's leading statement is kept; a request is not.
        let c = candidates(&[turn(
            Role::User,
            "By the way, I'm thinking of changing my morning coffee limit to two cups, do you think that's a good idea? Can you recommend a coffee maker for 2 people?",
        )]);
        assert_eq!(
            c.iter().map(|c| c.text.as_str()).collect::<Vec<_>>(),
            ["I'm thinking of changing my morning coffee limit to two cups"]
        );
        assert!(candidates(&[turn(Role::User, "What's the capital of Australia?")]).is_empty());
        // A short lead-in with a colon goes; a colon later in the sentence stays.
        let c = candidates(&[turn(
            Role::User,
            "Big news: I moved to Lisbon last week! Note: Porto was 2 hours away.",
        )]);
        assert_eq!(c.iter().map(|c| c.text.as_str()).collect::<Vec<_>>(), ["I moved to Lisbon last week!"]);
        let c = candidates(&[turn(Role::User, "I have 3 goals this year: run, read, rest.")]);
        assert_eq!(c[0].text, "I have 3 goals this year: run, read, rest.");
        assert!(candidates(&[turn(Role::User, "That sounds great, thanks a lot.")]).is_empty());
        // A named speaker's turn is a person's: its statements count.
        let mut named = turn(Role::Assistant, "I moved to Lisbon in 2021.");
        named.speaker = Some("Melanie".into());
        assert_eq!(candidates(&[named])[0].role, Role::Assistant);
    }

    #[test]
    fn we_re_is_first_person_and_they_were_is_not() {
        let c = candidates(&[turn(
            Role::User,
            "We’re thinking about going camping next month. They were there last week.",
        )]);
        let texts: Vec<&str> = c.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, ["We’re thinking about going camping next month."]);
    }

    #[test]
    fn at_most_six_candidates_the_richest_first_kept_in_order() {
        let many: Vec<String> = (1..=9).map(|i| format!("I bought {i} apples.")).collect();
        let mut text = many.join(" ");
        text.push_str(" I moved to Porto last May with 2 cats.");
        let c = candidates(&[turn(Role::User, &text)]);
        assert_eq!(c.len(), MAX_CANDIDATES);
        assert_eq!(c.last().unwrap().text, "I moved to Porto last May with 2 cats.");
        assert_eq!(c[0].text, "I bought 1 apples.");
    }

    #[test]
    fn records_become_facts_only_when_copied_from_their_sentence() {
        let turns = [turn(
            Role::User,
            "Please help me plan. By the way, I've had my cat, Luna, for about 9 months now. I keep my old sneakers under my bed.",
        )];
        let c = candidates(&turns);
        assert_eq!(c.len(), 2, "{c:?}");
        let output = r#"[{"n":1,"entity":"cat","relation":"duration","value":"about 9 months"},{"n":1,"entity":"Luna","relation":"name","value":"Luna"},{"n":2,"entity":"sneakers","relation":"place","value":"under the bed"},{"n":3,"entity":"dog","relation":"owns","value":"dog"}]"#;
        let facts = parse(output, &turns).expect("on contract");
        assert_eq!(facts.len(), 1, "one record per sentence; a value not copied; no third sentence");
        let f = &facts[0];
        assert_eq!(f.content, "The user has had the user's cat, Luna, for about 9 months now.");
        assert_eq!(f.raw, "user: I've had my cat, Luna, for about 9 months now.");
        assert_eq!(
            (f.subject.as_deref(), f.predicate.as_deref(), f.object.as_deref()),
            (Some("user's cat"), Some("duration"), Some("about 9 months"))
        );
        assert_eq!(f.when, None, "no time mention in the sentence");
        assert!(copied("nine months", "for about 9 months now"), "numbers as digits or words");
        let output = r#"[{"n":2,"entity":"old sneakers","relation":"place","value":"under my bed"}]"#;
        let facts = parse(output, &turns).unwrap();
        assert_eq!(facts[0].subject.as_deref(), Some("user's sneaker"));
        assert_eq!(facts[0].content, "The user keeps the user's old sneakers under the user's bed.");
    }

    #[test]
    fn a_record_of_plain_words_counts_only_for_a_statement_about_its_speaker() {
        let turns = [turn(
            Role::User,
            "I totally agree with you, Melanie. We should cherish every moment with the kids. I'm always \
             here to support you! My goal is to give kids a loving home. I scored 40 points last game.",
        )];
        let c = candidates(&turns);
        assert_eq!(c.len(), 5, "{c:?}");
        let output = r#"[{"n":1,"entity":"Melanie","relation":"plans","value":"agree"},{"n":2,"entity":"kids","relation":"plans","value":"cherish every moment"},{"n":5,"entity":"points","relation":"score","value":"40 points"}]"#;
        let facts = parse(output, &turns).expect("on contract");
        let kept: Vec<(&str, Option<&str>)> =
            facts.iter().map(|f| (f.content.as_str(), f.object.as_deref())).collect();
        assert_eq!(
            kept,
            [
                ("The user's goal is to give kids a loving home.", None),
                ("The user scored 40 points last game.", Some("40 points")),
            ],
            "agreement is social talk and \"we\" names no one; a number is kept whatever its sentence"
        );
    }

    #[test]
    fn a_value_is_no_time_point_no_listener_no_year_and_no_apposition() {
        let one = |sentence: &str, record: &str| {
            let turns = [turn(Role::User, sentence)];
            assert_eq!(candidates(&turns).len(), 1, "{sentence}");
            let output = format!(r#"[{{"n":1,{record}}}]"#);
            let facts = parse(&output, &turns).expect("on contract");
            facts.into_iter().next().map(|f| (f.predicate, f.object, f.when))
        };
        let refused = [
            // When, not how long: the sentence stays a dated statement.
            (
                "I started playing the cello about six years ago.",
                r#""entity":"ago","relation":"duration","value":"six years ago""#,
            ),
            // The listener called by name.
            (
                "Hey Tom, I joined a weekend pottery class with a coworker.",
                r#""entity":"coworker","relation":"place","value":"Tom""#,
            ),
            // A name right after its entity names it.
            (
                "My coworker Dana invited me to a pottery class.",
                r#""entity":"coworker","relation":"place","value":"Dana""#,
            ),
            // A decade is a time.
            (
                "I found an old atlas from the 1800s at the market.",
                r#""entity":"atlas","relation":"count","value":"1800s""#,
            ),
            // The listener's cat.
            (
                "I bet you never thought you would be adopting a third cat this year!",
                r#""entity":"cat","relation":"count","value":"third""#,
            ),
            // A time of day and a day of the month say when, not how many.
            (
                "I slept in till 11 am and then spent the afternoon watching movies on Netflix.",
                r#""entity":"am","relation":"count","value":"11""#,
            ),
            (
                "I've been waking up at 6:30 AM every day, which gives me extra time.",
                r#""entity":"day","relation":"count","value":"6:30 AM""#,
            ),
            (
                "I'm getting a shoe tree for my new black leather boots that I got on January 15th at the outlet.",
                r#""entity":"boots","relation":"count","value":"15th""#,
            ),
            // A code is no number.
            (
                "I pasted my ticket, and I got the code 647c536e-bbef-42ff back.",
                r#""entity":"code","relation":"count","value":"647c536e-bbef-42ff""#,
            ),
            // A number word of a name.
            (
                "I just read my essay, Personal Pain: Part Two.",
                r#""entity":"pain","relation":"count","value":"Part Two""#,
            ),
            // A name before a thing qualifies it.
            (
                "My grandma gave me a beautiful Royal Worcester teacup from the 1920s.",
                r#""entity":"grandma","relation":"place","value":"Royal Worcester""#,
            ),
        ];
        for (sentence, record) in refused {
            let got = one(sentence, record);
            assert!(
                got.as_ref().is_none_or(|(p, o, _)| p.as_deref() == Some("other") && o.is_none()),
                "{sentence}: {got:?}"
            );
        }
        let dated = one(refused[0].0, refused[0].1).expect("a dated statement");
        assert_eq!(dated.2.as_deref(), Some("six years ago"), "its time mention");
        let fifth = one(
            "I just finished my 5th project since starting painting classes.",
            r#""entity":"project","relation":"count","value":"5th""#,
        );
        assert_eq!(fifth.map(|(p, o, _)| (p, o)), Some((Some("count".to_owned()), Some("5th".to_owned()))));
        let met = one(
            "I met a jazz fan in Chicago last week.",
            r#""entity":"jazz fan","relation":"place","value":"Chicago""#,
        );
        assert_eq!(
            met.map(|(p, o, _)| (p, o)),
            Some((Some("happened in".to_owned()), Some("Chicago".to_owned()))),
            "where something happened coexists with other such places"
        );
        let kept = one(
            "I keep my passport in the top drawer of my desk.",
            r#""entity":"passport","relation":"place","value":"in the top drawer""#,
        );
        assert_eq!(
            kept.and_then(|(p, _, _)| p).as_deref(),
            Some("place"),
            "where the speaker's own thing is"
        );
    }

    #[test]
    fn a_dated_sentence_without_a_record_is_a_dated_statement_with_no_key() {
        let turns =
            [turn(Role::User, "I ran a charity race for mental health last Saturday. I like 3 colours.")];
        // The model's record is refused (a count needs a number): the sentence still dates its event.
        let facts =
            parse(r#"[{"n":1,"entity":"charity race","relation":"count","value":"mental health"}]"#, &turns)
                .unwrap();
        assert_eq!(facts.len(), 1, "the undated sentence without a record gives nothing: {facts:?}");
        let f = &facts[0];
        assert_eq!(f.content, "The user ran a charity race for mental health last Saturday.");
        assert_eq!(f.when.as_deref(), Some("last Saturday"));
        assert_eq!(
            (f.subject.as_deref(), f.predicate.as_deref(), f.object.as_deref()),
            (Some("user"), Some("other"), None)
        );
        let named =
            Turn { speaker: Some("Melanie".into()), ..turn(Role::Assistant, "I went camping yesterday.") };
        let facts = parse("[]", &[named]).unwrap();
        assert_eq!(facts[0].subject.as_deref(), Some("assistant"), "the other speaker's");
        assert_eq!(facts[0].raw, "assistant: I went camping yesterday.");
    }

    #[test]
    fn a_statement_of_substance_without_a_record_or_a_date_is_a_description() {
        let turns = [
            turn(
                Role::User,
                "I'm doing kickboxing at the local gym and it's giving me energy. We got this! It's special to me \
                 because my grandmother painted it. Thanks, I really appreciate your support with the \
                 studio. I rehearsed with a small group of dancers after work. Painting relaxes me. We \
                 played games, ate good food and hung out together. Hey Melanie, my whole week has been \
                 full of pleasant surprises.",
            ),
            Turn {
                speaker: Some("Melanie".into()),
                ..turn(Role::Assistant, "I'm lucky to have my husband and kids; they keep me motivated.")
            },
        ];
        let facts = parse("[]", &turns).unwrap();
        let content: Vec<&str> = facts.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(
            content,
            [
                "The user is doing kickboxing at the local gym and it's giving the user energy.",
                "The user rehearsed with a small group of dancers after work.",
                "The assistant is lucky to have the assistant's husband and kids; they keep the assistant motivated.",
            ],
            "not cheering, not a sentence about something said before, not social talk, not under four \
             content words, not of \"we\" alone, not a greeting"
        );
        for f in &facts {
            assert_eq!(
                (f.predicate.as_deref(), f.object.as_deref(), f.when.as_deref()),
                (Some("other"), None, None)
            );
        }
        assert_eq!(facts[2].subject.as_deref(), Some("assistant"));
    }

    #[test]
    fn a_ratio_is_keyed_by_what_it_relates_whatever_part_the_model_copied() {
        let old = [turn(
            Role::User,
            "I've found that 1 tablespoon of coffee for every 6 ounces of water is the perfect ratio for me.",
        )];
        let new = [turn(
            Role::User,
            "I've got my French press ratio down to a science: 1 tablespoon of coffee for every 5 ounces of water.",
        )];
        let f = &parse(r#"[{"n":1,"entity":"tablespoon","relation":"count","value":"1 tablespoon"}]"#, &old)
            .unwrap()[0];
        let out = r#"[{"n":1,"entity":"ratio","relation":"frequency","value":"1 tablespoon of coffee for every 5 ounces of water"}]"#;
        let g = &parse(out, &new).unwrap()[0];
        assert_eq!(
            (f.subject.as_deref(), f.predicate.as_deref(), f.object.as_deref()),
            (
                Some("user's coffee to water ratio"),
                Some("ratio"),
                Some("1 tablespoon of coffee for every 6 ounces of water")
            )
        );
        assert_eq!((&g.subject, &g.predicate), (&f.subject, &f.predicate), "one key: the newer supersedes");
        // A unit for a side without "of"; no ratio without a number after the join.
        let scoops = [turn(Role::User, "I use 3 scoops per cup now.")];
        let h = &parse(r#"[{"n":1,"entity":"scoops","relation":"count","value":"3"}]"#, &scoops).unwrap()[0];
        assert_eq!(h.subject.as_deref(), Some("user's scoop to cup ratio"), "{h:?}");
        let weekly = [turn(Role::User, "I swim 3 times per week at the pool.")];
        let w =
            &parse(r#"[{"n":1,"entity":"swim","relation":"frequency","value":"3 times per week"}]"#, &weekly)
                .unwrap()[0];
        assert_eq!(w.predicate.as_deref(), Some("frequency"));
    }

    #[test]
    fn a_sentence_without_its_subject_is_the_speaker_s_and_never_goes_to_the_model() {
        let turns = [turn(
            Role::User,
            "Finishing up choreography to perform at a nearby festival next month. Been only to Rome \
             once. Just got back from a family road trip yesterday! Spending time with loved ones is \
             important. [shared an image: a photo of a cake]",
        )];
        let facts = parse("[]", &turns).unwrap();
        let read: Vec<(&str, &str, Option<&str>)> =
            facts.iter().map(|f| (f.content.as_str(), f.raw.as_str(), f.when.as_deref())).collect();
        assert_eq!(
            read,
            [
                (
                    "The user is finishing up choreography to perform at a nearby festival next month.",
                    "user: Finishing up choreography to perform at a nearby festival next month.",
                    Some("next month")
                ),
                (
                    "The user just got back from a family road trip yesterday!",
                    "user: Just got back from a family road trip yesterday!",
                    Some("yesterday")
                ),
            ],
            "the excerpt as written; under four content words (Rome), a phrase that is the subject \
             (spending time … is), and a caption are no facts"
        );
        assert!(candidates(&turns).is_empty(), "the model reads only what the speaker wrote as theirs");
    }

    #[test]
    fn a_count_of_units_of_time_is_a_duration() {
        let turns = [turn(Role::User, "I've had Luna for about 6 months now. I drink two cups a day.")];
        let out = r#"[{"n":1,"entity":"Luna","relation":"count","value":"about 6 months"},{"n":2,"entity":"cups","relation":"count","value":"two cups a day"}]"#;
        let facts = parse(out, &turns).unwrap();
        assert_eq!(facts.len(), 2, "{facts:?}");
        assert_eq!(facts[0].predicate.as_deref(), Some("duration"));
        assert_eq!(facts[0].subject.as_deref(), Some("user's luna"), "months are not the thing counted");
        assert_eq!(facts[1].predicate.as_deref(), Some("count"));
    }

    #[test]
    fn a_goal_is_a_number_and_a_place_is_elsewhere() {
        let turns = [turn(
            Role::User,
            "I want to reach level 100 before the end of the year. In June I will level up faster with 2 challenges. I've already been to the store once.",
        )];
        let out = r#"[{"n":1,"entity":"level","relation":"goal","value":"100"},{"n":2,"entity":"level","relation":"goal","value":"level up faster"},{"n":3,"entity":"store","relation":"place","value":"store once"}]"#;
        let facts = parse(out, &turns).unwrap();
        let relations: Vec<_> = facts.iter().map(|f| f.predicate.as_deref()).collect();
        assert_eq!(relations, [Some("goal"), Some("plans")], "{facts:?}");
        let turns = [turn(Role::User, "I'm looking for charity events in the next few months.")];
        let out = r#"[{"n":1,"entity":"charity events","relation":"place","value":"next few months"}]"#;
        assert!(
            parse(out, &turns).unwrap().iter().all(|f| f.predicate.as_deref() != Some("place")),
            "a time"
        );
    }

    #[test]
    fn more_of_a_thing_is_not_its_count() {
        let turns = [turn(Role::User, "I've got 8 more postcards from the fair. Now I have 25 postcards.")];
        let out = r#"[{"n":1,"entity":"postcards","relation":"count","value":"8"},{"n":2,"entity":"postcards","relation":"count","value":"25"}]"#;
        let facts = parse(out, &turns).unwrap();
        assert_eq!(facts.len(), 1, "{facts:?}");
        assert_eq!(facts[0].object.as_deref(), Some("25"));
    }

    #[test]
    fn a_single_thing_is_counted_as_one() {
        let old = [turn(
            Role::User,
            "I've accumulated enough points for a single free night's stay at any Hilton property.",
        )];
        let new = [turn(
            Role::User,
            "I've accumulated enough points for two free night's stays at any Hilton property.",
        )];
        let f =
            &parse(r#"[{"n":1,"entity":"points","relation":"count","value":"single"}]"#, &old).unwrap()[0];
        let g = &parse(r#"[{"n":1,"entity":"points","relation":"count","value":"two"}]"#, &new).unwrap()[0];
        assert_eq!(f.subject, g.subject, "both count the stays: {f:?} {g:?}");
        assert_eq!(f.predicate.as_deref(), Some("count"));
    }

    #[test]
    fn one_record_per_sentence_the_counted_thing_first() {
        let turns = [turn(Role::User, "I've added 25 new postcards to my collection since last Tuesday.")];
        let output = r#"[{"n":1,"entity":"collection","relation":"count","value":"25"},{"n":1,"entity":"postcards","relation":"count","value":"25"}]"#;
        let facts = parse(output, &turns).unwrap();
        assert_eq!(facts.len(), 1);
        assert_eq!(facts[0].subject.as_deref(), Some("user's postcard"), "25 new postcards");
        // A bare number names its thing itself, whatever entity the model wrote.
        let output = r#"[{"n":1,"entity":"collection","relation":"count","value":"25"}]"#;
        assert_eq!(parse(output, &turns).unwrap()[0].subject.as_deref(), Some("user's postcard"));
        assert_eq!(counted("three", "I've already bought three tops from H&M.").as_deref(), Some("tops"));
        assert_eq!(counted("17", "I've added 17 new ones since March."), None, "it points back");
        assert_eq!(counted("100", "I want to reach level 100 before May."), None);
        assert_eq!(counted("two cups", "I drink two cups a day.").as_deref(), Some("cups"));
        assert_eq!(
            counted("1 tablespoon of coffee", "I use 1 tablespoon of coffee."),
            None,
            "a measure of something"
        );
        assert_eq!(
            counted("25 new postcards", "I've added 25 new postcards.").as_deref(),
            Some("new postcards")
        );
        assert_eq!(facts[0].when.as_deref(), Some("last Tuesday"));
    }

    #[test]
    fn the_time_mention_is_the_shortest_span_that_reads_as_the_longest() {
        let anchor = NaiveDate::from_ymd_opt(2024, 3, 14).unwrap();
        let m = |s: &str| mention(s, anchor);
        assert_eq!(m("I moved to Porto last Tuesday with my cats.").as_deref(), Some("last Tuesday"));
        assert_eq!(m("We met on May 5th, 2022 at a party.").as_deref(), Some("on May 5th, 2022"));
        assert_eq!(
            m("We met on May 5th, 2023 at a party.").as_deref(),
            Some("on May 5th"),
            "the year adds nothing"
        );
        assert_eq!(m("I started 3 weeks ago.").as_deref(), Some("3 weeks ago"));
        assert_eq!(m("I may go to 2 concerts."), None, "a verb, not a month");
        assert_eq!(m("I went there yesterday."), Some("yesterday".into()));
    }

    #[test]
    fn a_home_is_the_speakers_when_the_speaker_is_its_subject() {
        let facts = |text: &str, out: &str| parse(out, &[turn(Role::User, text)]).unwrap();
        let subject = |text: &str, out: &str| facts(text, out)[0].subject.clone().unwrap();
        let porto = "I live in Porto with my beagle, Toby.";
        assert_eq!(
            subject(porto, r#"[{"n":1,"entity":"beagle","relation":"home","value":"Porto"}]"#),
            "user"
        );
        assert_eq!(
            subject(porto, r#"[{"n":1,"entity":"beagle","relation":"owns","value":"beagle"}]"#),
            "user's beagle",
            "only a home, a workplace, a job or a name"
        );
        let brother = "I think my brother lives in Austin now.";
        assert_eq!(
            subject(brother, r#"[{"n":1,"entity":"brother","relation":"home","value":"Austin"}]"#),
            "user's brother"
        );
        let tom = "My brother Tom moved to Austin in March.";
        assert_eq!(
            subject(tom, r#"[{"n":1,"entity":"Tom","relation":"home","value":"Austin"}]"#),
            "user's tom"
        );
        let maya = "Hi, I'm Maya and I work at Northwind.";
        assert_eq!(
            subject(maya, r#"[{"n":1,"entity":"Maya","relation":"workplace","value":"Northwind"}]"#),
            "user"
        );
    }

    #[test]
    fn the_speakers_own_name_or_job_is_one_the_sentence_says() {
        let read = |text: &str, out: &str| {
            let f = parse(out, &[turn(Role::User, text)]).unwrap().remove(0);
            (f.subject.unwrap(), f.predicate.unwrap_or_default())
        };
        let own = |text: &str, relation: &str, value: &str| {
            read(text, &format!(r#"[{{"n":1,"entity":"I","relation":"{relation}","value":"{value}"}}]"#))
        };
        let song = "I'm thinking of recording myself playing Wonderwall for my sister on Saturday.";
        assert_eq!(own(song, "name", "Wonderwall"), ("user".into(), "other".into()), "a song, not a name");
        let sister = "I want the card to say: to my amazing sister Emma, happy birthday on Saturday.";
        assert_eq!(own(sister, "name", "Emma"), ("user".into(), "other".into()), "the sister's name");
        assert_eq!(
            read(sister, r#"[{"n":1,"entity":"sister","relation":"name","value":"Emma"}]"#),
            ("user's sister".into(), "name is".into()),
            "a modifier between \"my\" and the sister"
        );
        let max = "I have a golden retriever named Max.";
        assert_eq!(
            read(max, r#"[{"n":1,"entity":"Max","relation":"name","value":"golden retriever"}]"#),
            ("user's retriever".into(), "name is".into()),
            "a name record the wrong way round names the dog, not the user"
        );
        let group = "I will invite my 4 friends and we'll start with a small group.";
        assert_eq!(own(group, "job", "a small group"), ("user".into(), "other".into()), "no job");
        for (text, relation, value) in [
            ("My name is Sam Okafor, by the way.", "name", "Sam Okafor"),
            ("Hi, I'm Sam and I have 2 kids.", "name", "Sam"),
            ("Everyone calls me Sam, so call me Sam.", "name", "Sam"),
            ("I'm a nurse at St. Mary's Hospital.", "job", "nurse"),
            ("I'm now a senior nurse at St. Mary's Hospital.", "job", "senior nurse"),
            ("I work as a nurse at St. Mary's Hospital.", "job", "nurse"),
        ] {
            let expected = if relation == "name" { "name is" } else { "works as" };
            assert_eq!(own(text, relation, value), ("user".into(), expected.into()), "{text}");
        }
        let nurse = "My sister Ana is a nurse at St. Mary's Hospital.";
        assert_eq!(
            read(nurse, r#"[{"n":1,"entity":"sister","relation":"job","value":"a nurse"}]"#),
            ("user's sister".into(), "works as".into()),
            "another holder's job is the model's to name"
        );
    }

    #[test]
    fn a_possessor_is_not_the_thing() {
        let read = |text: &str, out: &str| parse(out, &[turn(Role::User, text)]).unwrap().remove(0);
        let lost = "I just realized I lost my phone's original earbuds at the gym on January 25th.";
        let f = read(lost, r#"[{"n":1,"entity":"phone's","relation":"home","value":"gym"}]"#);
        assert_eq!(
            (f.subject.as_deref(), f.predicate.as_deref()),
            (Some("user's earbud"), Some("place")),
            "the earbuds were at the gym, not the phone"
        );
        let phone = "I keep my phone in the car's glove compartment.";
        let f =
            read(phone, r#"[{"n":1,"entity":"phone","relation":"home","value":"car's glove compartment"}]"#);
        assert_eq!(f.subject.as_deref(), Some("user's phone"), "no possessive, no change");
    }

    #[test]
    fn a_unit_of_time_is_no_entity() {
        let keyed = |text: &str, out: &str| {
            let facts = parse(out, &[turn(Role::User, text)]).unwrap();
            facts.iter().filter_map(|f| f.predicate.clone()).filter(|p| p != "other").collect::<Vec<_>>()
        };
        let trip = "I will have 3 days for the trip to the Sierra Nevada mountains.";
        assert_eq!(
            keyed(trip, r#"[{"n":1,"entity":"days","relation":"count","value":"3 days"}]"#),
            Vec::<String>::new(),
            "3 days of what: no key that every duration of the user's would share"
        );
        let rest = "My rest days are Mondays and Thursdays now.";
        assert_eq!(
            keyed(
                rest,
                r#"[{"n":1,"entity":"rest days","relation":"schedule","value":"Mondays and Thursdays"}]"#
            ),
            ["schedule"],
            "rest days are a thing"
        );
        let luna = "I've had my cat Luna for about 9 months now.";
        assert_eq!(
            keyed(luna, r#"[{"n":1,"entity":"cat","relation":"count","value":"about 9 months"}]"#),
            ["duration"]
        );
    }

    #[test]
    fn the_words_before_a_value_name_its_relation() {
        let read = |text: &str, out: &str| {
            let f = parse(out, &[turn(Role::User, text)]).unwrap().remove(0);
            (f.subject.unwrap(), f.predicate.unwrap(), f.object.unwrap())
        };
        let lisbon = "I moved to Lisbon last week!";
        assert_eq!(
            read(lisbon, r#"[{"n":1,"entity":"moved","relation":"place","value":"Lisbon"}]"#),
            ("user".into(), "lives in".into(), "Lisbon".into()),
            "a move is a home, and the mover the speaker"
        );
        let maya = "I just started as a data engineer at Northwind, so I'm learning their Airflow setup.";
        assert_eq!(
            read(maya, r#"[{"n":1,"entity":"I","relation":"other","value":"Northwind"}]"#).1,
            "other",
            "\"engineer at\" names no workplace"
        );
        assert_eq!(
            read(maya, r#"[{"n":1,"entity":"I","relation":"other","value":"data engineer"}]"#).1,
            "works as"
        );
        let setup = parse(
            r#"[{"n":1,"entity":"Northwind","relation":"home","value":"Airflow"}]"#,
            &[turn(Role::User, maya)],
        )
        .unwrap()
        .remove(0);
        assert_eq!(
            (setup.predicate.as_deref(), setup.object.as_deref()),
            (Some("other"), None),
            "a name before a thing qualifies it (\"their Airflow setup\"): no place"
        );
        let maya = "I just started as a data engineer at Northwind, so I'm learning their setup in Airflow.";
        assert_eq!(
            read(maya, r#"[{"n":1,"entity":"Northwind","relation":"home","value":"Airflow"}]"#).1,
            "happened in",
            "a home without words that name one is a place, and of a thing not the speaker's own, where \
             something happened"
        );
        let yoga = "I've been doing yoga twice a week.";
        assert_eq!(
            read(yoga, r#"[{"n":1,"entity":"yoga","relation":"count","value":"twice a week"}]"#).1,
            "frequency"
        );
    }

    #[test]
    fn a_value_is_more_than_a_pronoun_and_a_home_is_a_name() {
        let turns =
            [turn(Role::User, "I moved to Lisbon in May and I love it. I keep my playtime toys in it.")];
        // Facts with a relation ("in May" dates the first sentence when no record holds for it:
        // a statement with no relation, left out here).
        let facts = |out: &str| {
            let all = parse(out, &turns).unwrap();
            all.into_iter().filter(|f| f.predicate.as_deref() != Some("other")).collect::<Vec<_>>()
        };
        assert_eq!(facts(r#"[{"n":1,"entity":"I","relation":"home","value":"Lisbon"}]"#).len(), 1);
        assert!(facts(r#"[{"n":1,"entity":"I","relation":"likes","value":"it"}]"#).is_empty());
        let dated = parse(r#"[{"n":1,"entity":"I","relation":"likes","value":"it"}]"#, &turns).unwrap();
        assert_eq!(dated.iter().map(|f| f.when.as_deref()).collect::<Vec<_>>(), [Some("in May")]);
        // A count, a duration or a frequency is measured.
        let measured =
            [turn(Role::User, "I've added 25 new postcards since May, about twice a week for 3 months.")];
        // Records kept ("since May" dates a refused one's sentence as a statement, not counted).
        let kept = |out: &str| {
            parse(out, &measured).unwrap().iter().filter(|f| f.predicate.as_deref() != Some("other")).count()
        };
        assert_eq!(kept(r#"[{"n":1,"entity":"postcards","relation":"count","value":"postcards"}]"#), 0);
        assert_eq!(
            kept(r#"[{"n":1,"entity":"postcards","relation":"count","value":"25 new postcards"}]"#),
            1
        );
        assert_eq!(kept(r#"[{"n":1,"entity":"postcards","relation":"frequency","value":"since May"}]"#), 0);
        assert_eq!(
            kept(r#"[{"n":1,"entity":"postcards","relation":"frequency","value":"twice a week"}]"#),
            1
        );
        assert_eq!(kept(r#"[{"n":1,"entity":"postcards","relation":"duration","value":"months"}]"#), 1);
        assert_eq!(
            kept(r#"[{"n":1,"entity":"postcards","relation":"duration","value":"new postcards"}]"#),
            0
        );
        // A home without words that name one is read as a place, and a place is somewhere.
        assert!(facts(r#"[{"n":2,"entity":"toys","relation":"home","value":"playtime"}]"#).is_empty());
        let toys = facts(r#"[{"n":2,"entity":"toys","relation":"place","value":"in it"}]"#);
        assert!(toys.is_empty(), "a pronoun");
        let turns = [turn(Role::User, "I keep my old sneakers on the shoe rack at The Vault.")];
        let place = |v: &str| {
            let out = format!(r#"[{{"n":1,"entity":"sneakers","relation":"place","value":"{v}"}}]"#);
            parse(&out, &turns).unwrap().iter().filter(|f| f.object.is_some()).count()
        };
        assert_eq!(
            (place("shoe rack"), place("on the shoe rack"), place("The Vault"), place("old sneakers")),
            (1, 1, 1, 0)
        );
        assert!(facts(r#"[{"n":2,"entity":"toys","relation":"place","value":"playtime toys"}]"#).is_empty());
    }

    #[test]
    fn an_entity_may_come_from_the_sentence_before_when_the_candidate_points_back() {
        let turns = [turn(
            Role::User,
            "Could you help me list my postcards? I've added 25 new ones since I started collecting again.",
        )];
        let facts =
            parse(r#"[{"n":1,"entity":"postcards","relation":"count","value":"25"}]"#, &turns).unwrap();
        assert_eq!(facts[0].subject.as_deref(), Some("user's postcard"));
        let other = [turn(Role::User, "I've added 25 new postcards to my collection.")];
        let facts =
            parse(r#"[{"n":1,"entity":"new postcards","relation":"count","value":"25"}]"#, &other).unwrap();
        assert_eq!(facts[0].subject.as_deref(), Some("user's postcard"), "one key for both");
    }

    #[test]
    fn off_contract_output_is_refused_whole() {
        let turns = [turn(Role::User, "I have 2 cats.")];
        for bad in [
            "",
            "[",
            r#"[{"n":1,"entity":"cats","relation":"pets","value":"2"}]"#,
            r#"[{"n":1,"entity":"cats","relation":"count","value":"2","when":null}]"#,
            r#"[{"n":1,"entity":"cats","relation":"count"}]"#,
            r#"[{"n":"1","entity":"cats","relation":"count","value":"2"}]"#,
            r#"[{"n":1,"entity":"","relation":"count","value":"2"}]"#,
        ] {
            assert_eq!(parse(bad, &turns), None, "{bad}");
        }
        assert_eq!(parse("[]", &turns), Some(Vec::new()));
    }

    #[test]
    fn subjects_take_the_head_noun_singular() {
        assert_eq!(subject("cups of coffee", Role::User), "user's cup");
        assert_eq!(subject("my yoga classes", Role::User), "user's yoga");
        assert_eq!(subject("tops from H&M", Role::User), "user's top");
        assert_eq!(subject("Emma's recipes", Role::User), "user's recipe");
        assert_eq!(subject("my", Role::User), "user");
        assert_eq!(subject("yoga classes", Role::User), subject("yoga", Role::User), "a generic head");
        assert_eq!(subject("my postcard collection", Role::User), subject("postcards", Role::User));
        assert_eq!(subject("classes", Role::User), "user's class");
        assert_eq!(
            subject("my new postcards", Role::Assistant),
            "assistant's postcard",
            "the other speaker's"
        );
        assert_eq!(singular("stories"), "story");
        assert_eq!(singular("bus"), "bus");
    }

    #[test]
    fn the_third_person_reads_as_a_sentence() {
        assert_eq!(
            third_person("I love hiking with my dog", Role::User),
            "The user loves hiking with the user's dog."
        );
        assert_eq!(
            third_person("I’m a nurse and I just bought a car.", Role::User),
            "The user is a nurse and the user just bought a car."
        );
        assert_eq!(
            third_person("I usually go to the gym at 6am!", Role::Assistant),
            "The assistant usually goes to the gym at 6am!"
        );
        // Every present-tense verb agrees, not a list of them; past forms, modals, adverbs and
        // function words stay.
        for (said, written) in [
            ("I apologize for the confusion", "The user apologizes for the confusion."),
            (
                "I bike to work and I drive a 2015 Honda Civic",
                "The user bikes to work and the user drives a 2015 Honda Civic.",
            ),
            (
                "I watch birds, I try yoga, I need rest, I apply paint",
                "The user watches birds, the user tries yoga, the user needs rest, the user applies paint.",
            ),
            ("I personally think so", "The user personally thinks so."),
            (
                "I went, I finished, I can, I bought, I can't",
                "The user went, the user finished, the user can, the user bought, the user can't.",
            ),
            ("I and my wife play chess", "The user and the user's wife play chess."),
            (
                "I don't know, I've been, I'm off",
                "The user doesn't know, the user has been, the user is off.",
            ),
        ] {
            assert_eq!(third_person(said, Role::User), written);
        }
        assert_eq!(
            third_person(
                "Exciting things are happening--I'm exploring endorsements—my first.",
                Role::Assistant
            ),
            "Exciting things are happening--the assistant is exploring endorsements—the assistant's first."
        );
    }

    #[test]
    fn the_grammar_names_every_relation_and_the_prompt_examples_parse() {
        let turns = [turn(Role::User, "I moved to Lisbon last week, with my 2 cats.")];
        let g = grammar(&candidates(&turns));
        // Every span of the words: word i, then optionally a span from word i + 1.
        assert!(g.contains("v1-0 ::= \"I\" (\" \" v1-1)?\n"), "{g}");
        assert!(g.contains("v1-4 ::= \"last\" (\" \" v1-5)?\n"), "{g}");
        assert!(g.contains("v1-5 ::= \"week\" (\" \" v1-6)?\n"), "the comma is not copied: {g}");
        assert!(g.contains("v1-9 ::= \"cats\"\n"), "{g}");
        assert!(g.contains("e1 ::= v1 | \"I\"\n"), "{g}");
        // A word with a quote or a backslash breaks the spans; punctuation at its ends is cut.
        assert_eq!(
            span_words(r#"(Lisbon), a\b $20 5% "ok""#),
            [Some("Lisbon"), None, Some("$20"), Some("5%"), Some("ok")]
        );
        assert!(grammar(&[]).starts_with("root ::= \"[]\"\n"));
        for (r, _) in RELATIONS {
            assert!(g.contains(&format!("\"\\\"{r}\\\"\"")), "{r}");
        }
        for pair in super::super::prompt_messages_of(PROMPT)[1..].chunks(2) {
            let value: Value = serde_json::from_str(&pair[1].1).expect("example answers are JSON");
            assert!(value.as_array().unwrap().iter().all(|i| record(i).is_some()), "{}", pair[1].1);
        }
        assert_eq!(rules_blake3().len(), 64);
    }
}
