//! Whose a record is and what it is about, read from its sentence: the speaker's or another
//! holder's (the last subject before the value), the speaker's own thing ("my"), a name or a job
//! the sentence says is the speaker's, a name the right way round, a possessor's thing, and an
//! entity that names no thing (a unit of time alone).

use super::*;

/// Whether an entity is a unit of time alone ("days", "the week"), which names no thing: "5 days"
/// of what? "After 5 days, we depart Tokyo" and "I'll have 3 days for the trip" are two things
/// ("rest days" or a "track day" is a thing).
pub(super) fn unit_alone(entity: &str) -> bool {
    let words: Vec<String> =
        normalize(entity).into_iter().filter(|w| !DETERMINERS.contains(&w.as_str())).collect();
    matches!(words.as_slice(), [w] if TIME_UNITS.contains(&singular(w).as_str()))
}

/// A name record the right way round: "I have a golden retriever named Max" filed as entity
/// "Max", value "golden retriever" names the dog "Max". When the value is no name as written and
/// the entity is, the two change places.
pub(super) fn named_right(r: &Record, c: &Candidate) -> Record {
    let inverted = r.relation == "name"
        && !capitalized_in(&normalize(&r.value), &c.text)
        && capitalized_in(&normalize(&r.entity), &c.text);
    if inverted {
        Record { entity: r.value.clone(), value: r.entity.clone(), ..r.clone() }
    } else {
        r.clone()
    }
}

/// Most words of what a possessor possesses ([`possessed`]).
const POSSESSED_WORDS: usize = 3;

/// A record whose entity is a possessor as written ("phone's" in "I lost my phone's original
/// earbuds at the gym") is about what it possesses: the words after it in the sentence, up to
/// the end of the phrase ("original earbuds"). The phone was not at the gym.
pub(super) fn possessed(r: &Record, c: &Candidate) -> Record {
    let entity = r.entity.trim().replace('\u{2019}', "'");
    if !entity.ends_with("'s") {
        return r.clone();
    }
    let written: Vec<&str> = c.text.split_whitespace().collect();
    let head = normalize(&entity);
    let Some(at) = written.iter().position(|w| {
        let w = w.replace('\u{2019}', "'");
        w.ends_with("'s") && normalize(&w).last() == head.last()
    }) else {
        return r.clone();
    };
    let mut thing = Vec::new();
    for w in written.iter().skip(at + 1).take(POSSESSED_WORDS) {
        let form = normalize(w).join(" ");
        if form.is_empty() || PHRASE_ENDS.contains(&form.as_str()) || PREPOSITIONS.contains(&form.as_str()) {
            break;
        }
        thing.push(w.trim_end_matches(|ch: char| !ch.is_alphanumeric()));
        if w.ends_with(|ch: char| !ch.is_alphanumeric()) {
            break;
        }
    }
    if thing.is_empty() { r.clone() } else { Record { entity: thing.join(" "), ..r.clone() } }
}

/// Whether a record's entity is the speaker's own thing: the speaker itself, or "my"/"our" at
/// most two words before the entity's head in the sentence ("my old sneakers").
pub(super) fn owned(r: &Record, c: &Candidate) -> bool {
    if names_speaker(&r.entity) {
        return true;
    }
    let words = normalize(&c.text);
    let Some(head) = normalize(&r.entity).pop().map(|h| singular(&h)) else { return false };
    words.iter().enumerate().any(|(i, w)| {
        singular(w) == head
            && words[i.saturating_sub(3)..i].iter().any(|b| matches!(b.as_str(), "my" | "our"))
    })
}

/// First-person subject words (normalized).
pub(super) const SPEAKER_SUBJECTS: [&str; 7] = ["i", "im", "ive", "id", "ill", "we", "weve"];

/// Whether a home, a workplace, a job or a name is the speaker's whatever entity the model wrote:
/// the speaker is the sentence's last subject before the value, after any mention of the entity
/// ("I live in Porto with my beagle": the user lives in Porto, not the beagle; "I think my
/// brother lives in Austin": the brother).
pub(super) fn holder_is_speaker(r: &Record, c: &Candidate) -> bool {
    if !matches!(r.relation.as_str(), "home" | "workplace" | "job" | "name") {
        return false;
    }
    let Some(before) = before_value(r, c) else { return false };
    let speaker = before.iter().rposition(|w| SPEAKER_SUBJECTS.contains(&w.as_str()));
    // The entity holds the value only where the sentence names it as someone: after a
    // possessive or an article ("my brother"), or as a name ("Tom"); "I moved to Lisbon" with
    // the entity "moved" is the speaker's move.
    let named = |w: &String| capitalized_in(std::slice::from_ref(w), &c.text);
    let entity = valued(&r.entity).pop().and_then(|h| {
        (0..before.len()).rev().find(|&i| {
            let same = before[i] == h || singular(&before[i]) == singular(&h);
            // One modifier may stand between ("my amazing sister", "a golden retriever").
            let determined = (i.saturating_sub(2)..i).any(|j| DETERMINERS.contains(&before[j].as_str()));
            same && (determined || named(&before[i]))
        })
    });
    speaker.is_some_and(|s| entity.is_none_or(|e| s > e))
}

/// Words right before a value (determiners skipped) that say it is the speaker's own name: "my
/// name is Sam", "call me Sam", "I'm Sam".
/// ("called" and "named" are not: "a golden retriever named Max" names the dog.)
pub(super) const OWN_NAME_CUES: [&str; 9] =
    ["name is", "names", "call me", "calls me", "go by", "known as", "im", "i am", "this is"];

/// Words right before a value that say it is the speaker's job, besides the job phrases of
/// `lexicons/slot_relations.txt` ("work as"): "I'm a nurse", "I'm now a nurse", "I became a nurse".
pub(super) const OWN_JOB_CUES: [&str; 6] = ["im", "i am", "im now", "i am now", "became", "become"];

/// Whether the sentence shows that a name or a job is the speaker's own, by the words right
/// before the value. The model files many a value under `name` or `job` that is neither ("playing
/// "Wonderwall"", "start with a small group"), and a one-value relation of the speaker's is what
/// a later value supersedes; a home or a workplace needs such words too ([`cued`]). Other
/// relations are shown by their value ([`holds_value`]).
pub(super) fn shown_as_own(r: &Record, c: &Candidate) -> bool {
    let cues: &[&str] = match r.relation.as_str() {
        "name" => &OWN_NAME_CUES,
        "job" => &OWN_JOB_CUES,
        _ => return true,
    };
    let words = normalize(&c.text);
    let Some(before) = lead_up(&normalize(&r.value), &words) else { return false };
    let ends = |phrase: &[String]| before.ends_with(phrase);
    cues.iter().any(|cue| ends(&normalize(cue)))
        || LEXICON
            .relations
            .iter()
            .any(|(name, phrases)| name == &r.relation && phrases.iter().any(|p| ends(p)))
}
