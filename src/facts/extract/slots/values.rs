//! The value rules: a record is read against its sentence (is the value copied, measured, a
//! place; which relation do the words before it name; what a number counts; a ratio) before it
//! becomes a fact. Whose it is and what it is about: [`super::holder`].

use super::*;

/// Whether a record's value is concrete: it holds a number ("40 points", "3 years") or a name as
/// the sentence writes it ("Door Dash"). A record of plain words ("agree", "powerful", "always")
/// vouches for nothing: its sentence is kept only when it is about its speaker ([`of_speaker`]).
pub(super) fn concrete(r: &Record, c: &Candidate) -> bool {
    numbered(&r.value) || capitalized_in(&normalize(&r.value), &c.text)
}

/// Words with number words as digits ("five" → "5"), so that a value copied as "five ounces"
/// matches "5 ounces". "single" counts one here ("a single free night's stay", later "two free
/// night's stays"), though not in the conflict screens, where "I'm single" is no number.
pub(super) fn valued(text: &str) -> Vec<String> {
    normalize(text)
        .into_iter()
        .map(|w| match number_word(&w) {
            Some(n) => n.to_string(),
            None if w == "single" => "1".to_owned(),
            None => w,
        })
        .collect()
}

/// The words of `needle` occur in `hay`'s words, in order and together (number words and digits
/// alike).
pub(super) fn copied(needle: &str, hay: &str) -> bool {
    position(&valued(needle), &valued(hay)).is_some()
}

/// Whether an entity names the speaker ("I", "me", "the user").
pub(super) fn names_speaker(entity: &str) -> bool {
    SPEAKER.contains(&normalize(entity).join(" ").as_str())
}

/// Where `needle`'s words occur in `hay`'s words, in order and together: the index of the first.
pub(super) fn position(needle: &[String], hay: &[String]) -> Option<usize> {
    (!needle.is_empty()).then(|| hay.windows(needle.len()).position(|w| w == needle)).flatten()
}

/// Words that cannot be a value on their own.
pub(super) const EMPTY_VALUES: [&str; 17] = [
    "it", "them", "they", "this", "that", "these", "those", "one", "ones", "my", "me", "i", "there", "here",
    "we", "us", "you",
];

/// Ordinal words: a count or a score may be one ("my fourth marathon").
pub(super) const ORDINALS: [&str; 12] = [
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "twelfth",
    "twentieth",
];

/// Units of time: a duration holds one or a number ("a month", "3 weeks").
pub(super) const TIME_UNITS: [&str; 10] =
    ["second", "minute", "hour", "day", "night", "week", "weekend", "month", "year", "decade"];

/// Words that state how often without a number ("every Sunday", "daily").
pub(super) const FREQUENCIES: [&str; 20] = [
    "every",
    "each",
    "per",
    "daily",
    "weekly",
    "monthly",
    "yearly",
    "annually",
    "nightly",
    "hourly",
    "once",
    "twice",
    "thrice",
    "times",
    "always",
    "usually",
    "often",
    "sometimes",
    "rarely",
    "never",
];

/// Words that put a thing or an activity somewhere.
pub(super) const LOCATIVES: [&str; 19] = [
    "in", "at", "on", "under", "near", "to", "from", "inside", "behind", "beside", "by", "above", "below",
    "outside", "into", "onto", "over", "around", "between",
];

/// The sentence's words before `value`'s first occurrence in them, articles and possessives
/// right before it left out ("moved to" in "moved to the Lisbon flat"); `None` when the value is
/// not in the sentence.
pub(super) fn lead_up<'a>(value: &[String], words: &'a [String]) -> Option<&'a [String]> {
    let mut end = position(value, words)?;
    while end > 0 && DETERMINERS.contains(&words[end - 1].as_str()) {
        end -= 1;
    }
    Some(&words[..end])
}

/// Words after a number that make it an increment ("8 more", "two extra", "3 additional").
pub(super) const INCREMENTS: [&str; 4] = ["more", "extra", "additional", "another"];

/// Whether a count's number adds to an earlier count rather than states it: "more", "extra" or
/// "additional" right after the number, in the value or in the sentence, or "another" before it.
pub(super) fn increment(r: &Record, c: &Candidate) -> bool {
    let words = valued(&c.text);
    let value = valued(&r.value);
    let Some(at) = position(&value, &words) else { return false };
    let number = (at..at + value.len()).find(|&i| words[i].chars().all(|ch| ch.is_ascii_digit()));
    number.is_some_and(|i| {
        words.get(i + 1).is_some_and(|w| INCREMENTS[..3].contains(&w.as_str()))
            || i.checked_sub(1).is_some_and(|j| words[j] == INCREMENTS[3])
    })
}

/// Whether a value holds a number: digits, a number word or an ordinal.
pub(super) fn numbered(value: &str) -> bool {
    let words = valued(value);
    // Digits after a letter anywhere make the whole value a code ("647c536e-bbef-42ff").
    let code =
        words.iter().any(|w| w.chars().skip_while(|ch| !ch.is_alphabetic()).any(|ch| ch.is_ascii_digit()));
    !code && words.iter().any(|w| is_numeral(w) || ORDINALS.contains(&w.as_str()))
}

/// Whether a normalized word is a numeral: digits (with their separators), then at most a suffix
/// of letters ("25", "1.5", "5th", "10k", "1800s"). Digits after a letter make a code, not a
/// number ("647c536e", "a1b2").
pub(super) fn is_numeral(word: &str) -> bool {
    let suffix = word.trim_start_matches(|ch: char| ch.is_ascii_digit() || ch == '.' || ch == ',');
    word.starts_with(|ch: char| ch.is_ascii_digit()) && suffix.chars().all(char::is_alphabetic)
}

/// Whether a value counts units of time: a number right before one ("6 months", "about three
/// weeks"; not "two cups a day").
pub(super) fn counts_time(value: &str) -> bool {
    valued(value)
        .windows(2)
        .any(|w| w[0].chars().all(|c| c.is_ascii_digit()) && TIME_UNITS.contains(&singular(&w[1]).as_str()))
}

/// Whether words say how often ("twice", "every").
pub(super) fn says_how_often(words: &[String]) -> bool {
    words.iter().any(|w| FREQUENCIES.contains(&w.as_str()))
}

/// Whether a place is one: its value opens with a locative ("under my bed"), follows one (articles
/// and possessives skipped: "on the shoe rack"), or is a name as the sentence writes it ("The
/// Vault") that does not stand right after its entity ("my colleague Rob" names the colleague)
/// nor qualify the word after it ("a Royal Worcester teacup"). "playtime" and "recipes" are not
/// places.
pub(super) fn located(r: &Record, c: &Candidate) -> bool {
    let words = normalize(&c.text);
    let value = normalize(&r.value);
    if value.first().is_some_and(|w| LOCATIVES.contains(&w.as_str())) {
        return true;
    }
    let before = lead_up(&value, &words).and_then(<[String]>::last);
    // A name right after its entity names it ("my colleague Rob"): it is not where it is.
    let head = normalize(&r.entity).pop().map(|h| singular(&h));
    if before.is_some_and(|w| Some(singular(w)) == head) {
        return false;
    }
    let after_locative = before.is_some_and(|w| LOCATIVES.contains(&w.as_str()));
    // A name before a content word qualifies it ("a Royal Worcester teacup"): it names no place.
    let qualifies = position(&value, &words).and_then(|at| words.get(at + value.len())).is_some_and(|w| {
        !LEXICON.function_words.contains(w) && !LOCATIVES.contains(&w.as_str()) && !names_time(w)
    });
    after_locative || capitalized_in(&value, &c.text) && !qualifies
}

/// Whether a word names a time: a unit of time or a word of the time lexicon (a month, a day),
/// but not "last", "next" or "ago" ("next to the window" is a place).
pub(super) fn names_time(word: &str) -> bool {
    let unit = singular(word);
    let named = |w: &str| LEXICON.times.contains(w) && !matches!(w, "last" | "next" | "ago");
    TIME_UNITS.contains(&unit.as_str()) || named(word) || named(&unit)
}

/// Whether a record's value names its own entity (its head word, singular or not).
pub(super) fn names_entity(r: &Record) -> bool {
    let value: Vec<String> = normalize(&r.value).iter().map(|w| singular(w)).collect();
    normalize(&r.entity).last().is_some_and(|head| value.contains(&singular(head)))
}

/// Whether `value`'s words occur in `text` with one of them capitalized as written, a pronoun or an
/// article aside ("I'm", "We", "The" open sentences; "The Vault" is a name by "Vault").
pub(super) fn capitalized_in(value: &[String], text: &str) -> bool {
    const NOT_NAMES: [&str; 22] = [
        "i", "im", "ive", "id", "ill", "we", "weve", "you", "youre", "he", "she", "it", "its", "they",
        "theyre", "the", "a", "an", "this", "that", "there", "here",
    ];
    let written: Vec<&str> = text.split_whitespace().collect();
    let forms: Vec<String> = written.iter().map(|w| normalize(w).join(" ")).collect();
    (0..written.len()).any(|i| {
        forms[i..].starts_with(value)
            && written[i..i + value.len()].iter().any(|w| {
                let core = w.trim_start_matches(|ch: char| !ch.is_alphanumeric());
                let common = normalize(core).first().is_some_and(|f| NOT_NAMES.contains(&f.as_str()));
                core.starts_with(char::is_uppercase) && !common
            })
    })
}

/// Words that open a sentence that calls its listener by name ("Hey Maria, …").
pub(super) const INTERJECTIONS: [&str; 12] =
    ["hey", "hi", "hello", "yeah", "yes", "yep", "thanks", "wow", "oh", "aw", "congrats", "ok"];

/// The names a sentence calls its listener by, normalized: a capitalized word after an opening
/// interjection and before a comma ("Hey Maria, I started a yoga class"), or the last word after
/// a comma ("I totally agree, Melanie.").
pub(super) fn vocatives(text: &str) -> Vec<String> {
    let written: Vec<&str> = text.split_whitespace().collect();
    let name = |w: &str| {
        let core = w.trim_matches(|ch: char| !ch.is_alphanumeric());
        core.starts_with(char::is_uppercase).then(|| normalize(core).join(" "))
    };
    let mut out = Vec::new();
    if let [first, second, ..] = written.as_slice() {
        let called = normalize(first).first().is_some_and(|w| INTERJECTIONS.contains(&w.as_str()));
        if called && second.ends_with(',') {
            out.extend(name(second));
        }
    }
    if let [.., before, last] = written.as_slice()
        && before.ends_with(',')
    {
        out.extend(name(last));
    }
    out
}

/// Whether a record's value or entity is the listener called by name ([`vocatives`]).
pub(super) fn names_listener(r: &Record, c: &Candidate) -> bool {
    let called = vocatives(&c.text);
    let (value, entity) = (normalize(&r.value), normalize(&r.entity));
    called.iter().any(|n| value.contains(n) || entity.contains(n))
}

/// The sentence's words before the record's value (numbers as digits), if the value is in it.
pub(super) fn before_value(r: &Record, c: &Candidate) -> Option<Vec<String>> {
    let mut words = valued(&c.text);
    words.truncate(position(&valued(&r.value), &words)?);
    Some(words)
}

/// Whether the listener is the last subject before the record's value ("I bet you never thought
/// you would be getting a third turtle"): the value is the listener's, not the speaker's.
pub(super) fn listener_holds(r: &Record, c: &Candidate) -> bool {
    let Some(before) = before_value(r, c) else { return false };
    let you = before.iter().rposition(|w| matches!(w.as_str(), "you" | "youre" | "youve" | "youll" | "youd"));
    let me = before.iter().rposition(|w| SPEAKER_SUBJECTS.contains(&w.as_str()));
    you.is_some_and(|y| me.is_none_or(|m| y > m))
}

/// Words before a year that make it one ("in 2019", "since 2015").
pub(super) const YEAR_OPENERS: [&str; 5] = ["in", "since", "from", "until", "of"];

/// Whether a record's number is a decade ("the 1900s", "the 80s") or a year after a word that
/// dates ("since 2015"): a time, not a count or a score.
pub(super) fn year_like(r: &Record, c: &Candidate) -> bool {
    let value = valued(&r.value);
    let decade = value.iter().any(|w| {
        w.strip_suffix('s')
            .is_some_and(|d| d.len() >= 2 && d.ends_with('0') && d.chars().all(|ch| ch.is_ascii_digit()))
    });
    let four = value
        .first()
        .is_some_and(|w| w.len() == 4 && w.parse::<u32>().is_ok_and(|y| (1900..=2099).contains(&y)));
    let dated = || {
        before_value(r, c).and_then(|b| b.last().cloned()).is_some_and(|w| YEAR_OPENERS.contains(&w.as_str()))
    };
    decade || four && dated()
}

/// Whether a value's number is a word of a name: a number word written capitalized after the
/// sentence's first word ("Personal Pain: Part Two").
pub(super) fn in_a_name(r: &Record, c: &Candidate) -> bool {
    let value = normalize(&r.value);
    c.text.split_whitespace().skip(1).any(|w| {
        let n = normalize(w);
        w.starts_with(char::is_uppercase)
            && n.len() == 1
            && (number_word(&n[0]).is_some() || ORDINALS.contains(&n[0].as_str()))
            && value.contains(&n[0])
    })
}

/// Whether a value's number says when, not how many: a time of day (a clock word in the value or
/// right after it: "11 pm", "6:30 AM") or a day of a month (a month's name right before or after
/// it, or after "of": "January 15th", "the 15th of May").
pub(super) fn says_when(r: &Record, c: &Candidate) -> bool {
    let words = valued(&c.text);
    let value = valued(&r.value);
    let clock = |w: &String| crate::facts::frame::CLOCK.contains(&w.as_str());
    let month = |i: usize| words.get(i).is_some_and(|w| crate::model::time::month_number(w).is_some());
    let Some(at) = position(&value, &words) else { return false };
    let end = at + value.len();
    let day = (at..end).filter(|&i| words[i].starts_with(|ch: char| ch.is_ascii_digit())).any(|i| {
        i.checked_sub(1).is_some_and(month)
            || month(i + 1)
            || words.get(i + 1).is_some_and(|w| w == "of") && month(i + 2)
    });
    value.iter().any(clock) || words.get(end).is_some_and(clock) || day
}

/// Whether a record's value can be a value: more than pronouns; for a count or a score a number
/// (digits, a number word or an ordinal), for a duration a number or a unit of time, for a
/// frequency a number or a word of frequency; and for a home, a workplace or a name, a name as
/// the sentence writes it (capitalized: "Lisbon", not "playtime"). With the value copied from
/// the sentence by the grammar, these keep the model from filing any words of it under a
/// relation that holds one value ("postcards" as a count would supersede "17").
pub(super) fn holds_value(r: &Record, c: &Candidate) -> bool {
    let words = normalize(&r.value);
    let empty = |w: &String| {
        [&EMPTY_VALUES[..], &LOCATIVES[..], &DETERMINERS[..]].iter().any(|list| list.contains(&w.as_str()))
    };
    if words.iter().all(empty) {
        return false;
    }
    // "five years ago" says when, not how long or how many; "ago" or "week" is no entity.
    let time_entity = normalize(&r.entity)
        .last()
        .is_some_and(|h| LEXICON.times.contains(h) || LEXICON.times.contains(&singular(h)));
    if words.iter().any(|w| w == "ago") || time_entity || names_listener(r, c) || listener_holds(r, c) {
        return false;
    }
    let number = numbered(&r.value) && !year_like(r, c) && !says_when(r, c) && !in_a_name(r, c);
    let unit = words.iter().any(|w| TIME_UNITS.contains(&singular(w).as_str()));
    let often = says_how_often(&words);
    let measured = match r.relation.as_str() {
        // "8 more postcards" adds to a count; it is not the count.
        "count" => number && !increment(r, c),
        "score" => number,
        "duration" => number || unit,
        "frequency" => number || often,
        // A place other than the thing itself ("the store once" is not where the store is).
        // Nor a time ("in the next few months").
        "place" => located(r, c) && !names_entity(r) && !words.iter().any(|w| names_time(w)),
        _ => true,
    };
    if !measured {
        return false;
    }
    !matches!(r.relation.as_str(), "home" | "workplace" | "name") || capitalized_in(&words, &c.text)
}

/// How well a record fits its sentence, for choosing one record per sentence: a relation, and a
/// number value with its entity right after it ("25 new postcards": the postcards are counted).
pub(super) fn fit(r: &Record, c: &Candidate) -> usize {
    let words = normalize(&c.text);
    let (value, entity) = (normalize(&r.value), normalize(&r.entity));
    let counted = position(&value, &words).is_some_and(|at| {
        let after = at + value.len();
        (after..words.len().min(after + 4)).any(|i| words[i..].starts_with(&entity))
    });
    usize::from(r.relation != "other") + 2 * usize::from(counted)
}

/// The record with its relation as the sentence states it: a home, a workplace or a job when the
/// words right before the value name one (`lexicons/slot_relations.txt`: "moved to Lisbon" is a
/// home whatever relation the model wrote), else a home or a workplace without those words is a
/// place; a count whose value says how often ("twice a week") is a frequency, and one in units of
/// time ("6 months") a duration; a name the right way round ([`named_right`]), and a possessor's
/// thing as the entity ([`possessed`]).
pub(super) fn cued(r: &Record, c: &Candidate) -> Record {
    let r = &possessed(&named_right(r, c), c);
    let words = normalize(&c.text);
    let value = normalize(&r.value);
    let mut relation = r.relation.clone();
    if let Some(before) = lead_up(&value, &words) {
        let named = LEXICON.relations.iter().find(|(_, phrases)| phrases.iter().any(|p| before.ends_with(p)));
        match named {
            Some((name, _)) => relation = name.clone(),
            None if matches!(relation.as_str(), "home" | "workplace") => relation = "place".to_owned(),
            None => {}
        }
    }
    if relation == "count" && says_how_often(&value) {
        relation = "frequency".to_owned();
    } else if relation == "count" && counts_time(&r.value) {
        // "for about 6 months": how long, not how many.
        relation = "duration".to_owned();
    } else if relation == "goal" && !numbered(&r.value) {
        // A target is a number ("reach level 100"); "level up faster" or "plan out my week" is a
        // plan, and plans coexist.
        relation = "plans".to_owned();
    }
    Record { relation, ..r.clone() }
}

/// Words that join the two sides of a ratio ("1 tablespoon of coffee for every 6 ounces of
/// water", "3 scoops per cup"), normalized.
pub(super) const RATIO_JOINS: [&[&str]; 4] =
    [&["for", "every"], &["for", "each"], &["to", "every"], &["per"]];

/// Most words of a ratio's side after its number.
pub(super) const RATIO_SIDE: usize = 3;

/// For a record whose value lies in a ratio of its sentence ("I found that 1 tablespoon of
/// coffee for every 6 ounces of water is the perfect ratio": the value "1 tablespoon"), what the
/// ratio relates and the ratio as written: ("tablespoon to water", "1 tablespoon of coffee for
/// every 6 ounces of water"). A ratio is a number, up to [`RATIO_SIDE`] words, a join
/// ([`RATIO_JOINS`]) and a number or a thing right after it ("3 scoops per cup"; "3 times per
/// week" says how often, no ratio). Each
/// side's thing is the word after its "of", else its unit (the word after its number), so
/// "… 5 ounces of water" later meets the earlier ratio under one key, and its other number
/// supersedes it.
pub(super) fn ratio(r: &Record, c: &Candidate) -> Option<(String, String)> {
    // Written words, each with its normalized form (number words as digits).
    let written: Vec<&str> = c.text.split_whitespace().collect();
    let forms: Vec<String> = written.iter().map(|w| valued(w).join(" ")).collect();
    let number =
        |i: usize| forms.get(i).is_some_and(|f| !f.is_empty() && f.chars().all(|ch| ch.is_ascii_digit()));
    let join = (0..written.len()).find_map(|i| {
        RATIO_JOINS
            .iter()
            .find(|j| forms[i..].starts_with(&j.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>()))
            .map(|j| (i, j.len()))
    })?;
    let (at, len) = join;
    // The right side's number, or a thing alone ("per cup") that is no unit of time ("per week"
    // says how often).
    let right = if number(at + len) { at + len } else { at + len - 1 };
    let alone =
        forms.get(at + len).filter(|w| !w.is_empty() && !names_time(w) && !FREQUENCIES.contains(&w.as_str()));
    if right != at + len && alone.is_none() {
        return None;
    }
    let left = (at.saturating_sub(RATIO_SIDE + 1)..at).rev().find(|&i| number(i))?;
    // A side ends at punctuation, at a joining word, or after RATIO_SIDE words.
    let mut end = right + 1;
    while end < written.len()
        && end <= right + RATIO_SIDE
        && !written[end - 1].ends_with(|ch: char| !ch.is_alphanumeric())
    {
        if PHRASE_ENDS.contains(&forms[end].as_str()) {
            break;
        }
        end += 1;
    }
    let thing = |from: usize, to: usize| -> Option<String> {
        let side = &forms[from + 1..to];
        let of = side.iter().position(|w| w == "of");
        let word = match of {
            Some(k) => side.get(k + 1),
            None => side.first(),
        }?;
        (!word.is_empty()).then(|| singular(word))
    };
    let (x, y) = (thing(left, at)?, thing(right, end)?);
    let value_words = valued(&r.value);
    let span_words: Vec<String> =
        forms[left..end].iter().flat_map(|f| f.split(' ').map(str::to_owned)).collect();
    if position(&value_words, &span_words).is_none() && position(&span_words, &value_words).is_none() {
        return None;
    }
    let span = written[left..end].join(" ");
    Some((format!("{x} to {y}"), span.trim_end_matches(|ch: char| !ch.is_alphanumeric()).to_owned()))
}

/// Words that end the noun phrase after a number ("25 new postcards to my collection").
pub(super) const PHRASE_ENDS: [&str; 24] = [
    "and", "or", "but", "that", "which", "since", "so", "because", "i", "now", "already", "than", "to", "a",
    "the", "my", "before", "after", "until", "during", "every", "each", "last", "next",
];

/// Most words of the counted thing after a number.
pub(super) const COUNTED_WORDS: usize = 3;

/// For a value that starts with a number (digits or number words), the thing it counts: the
/// value's own words after the number ("25 new postcards"), or for a bare number the words right
/// after it in the sentence ("I've added 25 new postcards to my collection": "new postcards",
/// where the model wrote "collection"). Up to [`COUNTED_WORDS`] words, ended by punctuation, a
/// preposition or a joining word; none when it points back ("17 new ones") or measures something
/// else ("1 tablespoon of coffee").
pub(super) fn counted(value: &str, sentence: &str) -> Option<String> {
    // Number words as digits, in the value and in the sentence alike.
    let number = |w: &String| w.chars().all(|c| c.is_ascii_digit());
    let value_words = valued(value);
    let digits = value_words.iter().take_while(|w| number(w)).count();
    if digits == 0 {
        return None;
    }
    if digits < value_words.len() {
        // A number with its thing ("25 new postcards"): the thing, if it is one.
        let thing = &value_words[digits..];
        let head = thing.last().expect("not empty");
        let unit = thing.len() > COUNTED_WORDS
            || POINTERS.contains(&head.as_str())
            || TIME_UNITS.contains(&singular(head).as_str())
            || PREPOSITIONS.iter().chain(&PHRASE_ENDS).any(|w| thing.iter().any(|t| t == w));
        return (!unit).then(|| thing.join(" "));
    }
    // Written words, each with its normalized form, so that punctuation ends the phrase.
    let written: Vec<&str> = sentence.split_whitespace().collect();
    let forms: Vec<String> = written.iter().map(|w| valued(w).join(" ")).collect();
    let at = (0..written.len()).find(|&i| forms[i..].starts_with(&value_words))?;
    let start = at + value_words.len();
    // The number's own word must not end in punctuation ("25, and").
    if written[start - 1].ends_with(|c: char| !c.is_alphanumeric()) {
        return None;
    }
    let mut phrase = Vec::new();
    for (w, form) in written.iter().zip(&forms).skip(start).take(COUNTED_WORDS) {
        if form.is_empty() || PREPOSITIONS.contains(&form.as_str()) || PHRASE_ENDS.contains(&form.as_str()) {
            break;
        }
        phrase.push(form.clone());
        if w.ends_with(|c: char| !c.is_alphanumeric()) {
            break;
        }
    }
    let head = phrase.last()?;
    let measure = TIME_UNITS.contains(&singular(head).as_str());
    (!POINTERS.contains(&head.as_str()) && head != "one" && head != "times" && !measure)
        .then(|| phrase.join(" "))
}
