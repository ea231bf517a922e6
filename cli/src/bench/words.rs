//! The bench's synthetic text: words drawn uniformly from common English words, or by Zipf's law
//! as natural text's are.

/// Common English words, so that texts tokenize like chat (about one word piece per word).
const VOCABULARY: &[&str] = &[
    "time",
    "year",
    "people",
    "way",
    "day",
    "man",
    "thing",
    "woman",
    "life",
    "child",
    "world",
    "school",
    "state",
    "family",
    "student",
    "group",
    "country",
    "problem",
    "hand",
    "part",
    "place",
    "case",
    "week",
    "company",
    "system",
    "program",
    "question",
    "work",
    "government",
    "number",
    "night",
    "point",
    "home",
    "water",
    "room",
    "mother",
    "area",
    "money",
    "story",
    "fact",
    "month",
    "lot",
    "right",
    "study",
    "book",
    "eye",
    "job",
    "word",
    "business",
    "issue",
    "side",
    "kind",
    "head",
    "house",
    "service",
    "friend",
    "father",
    "power",
    "hour",
    "game",
    "line",
    "end",
    "member",
    "law",
    "car",
    "city",
    "community",
    "name",
    "president",
    "team",
    "minute",
    "idea",
    "kid",
    "body",
    "information",
    "back",
    "parent",
    "face",
    "others",
    "level",
    "office",
    "door",
    "health",
    "person",
    "art",
    "war",
    "history",
    "party",
    "result",
    "change",
    "morning",
    "reason",
    "research",
    "girl",
    "guy",
    "moment",
    "air",
    "teacher",
    "force",
    "education",
    "dog",
    "cat",
    "garden",
    "trip",
    "music",
    "movie",
    "recipe",
    "coffee",
    "tea",
    "bike",
    "train",
    "beach",
    "doctor",
    "nurse",
    "guitar",
    "piano",
    "camera",
    "phone",
    "laptop",
    "kitchen",
    "dinner",
    "lunch",
    "breakfast",
    "weekend",
    "holiday",
    "birthday",
    "wedding",
    "flight",
    "hotel",
    "museum",
    "park",
    "river",
    "mountain",
    "lake",
    "forest",
    "snow",
    "rain",
    "summer",
    "winter",
    "spring",
    "autumn",
    "shirt",
    "shoes",
    "jacket",
    "salad",
    "pasta",
    "bread",
    "cheese",
    "apple",
    "orange",
    "yoga",
    "running",
    "swimming",
    "painting",
    "reading",
    "writing",
    "cooking",
    "baking",
    "hiking",
    "camping",
    "fishing",
    "dancing",
];

/// Deterministic pseudo-random words.
pub(crate) struct Words(pub(crate) u64);

impl Words {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    pub(crate) fn word(&mut self) -> &'static str {
        VOCABULARY[(self.next() % VOCABULARY.len() as u64) as usize]
    }
    pub(crate) fn sentence(&mut self, words: usize) -> String {
        (0..words).map(|_| self.word()).collect::<Vec<_>>().join(" ")
    }
}

/// Words drawn by Zipf's law, as in natural text: the word of rank `r` (from 1) with weight
/// `1 / r`, over a fixed number of words, [`VOCABULARY`] first (the most frequent), then made-up
/// words of two or more syllables. Unlike [`Words`]' uniform draw over a few common words, where
/// every word is in about a quarter of the rounds, most words here are rare and a few are in
/// most rounds: what a question's postings are like in a real conversation.
pub(super) struct ZipfWords {
    draw: Words,
    /// The cumulative weights of the ranks, the last 1.
    cdf: Vec<f64>,
}

impl ZipfWords {
    pub(super) fn new(seed: u64, vocabulary: usize) -> ZipfWords {
        let mut total = 0.0;
        let mut cdf: Vec<f64> = (1..=vocabulary.max(1))
            .map(|r| {
                total += 1.0 / r as f64;
                total
            })
            .collect();
        for c in &mut cdf {
            *c /= total;
        }
        ZipfWords { draw: Words(seed), cdf }
    }

    fn word(&mut self) -> String {
        let u = self.draw.next() as f64 / (1u64 << 31) as f64;
        let rank = self.cdf.partition_point(|&c| c < u).min(self.cdf.len() - 1);
        ranked_word(rank)
    }
}

/// The word of rank `rank` (from 0): [`VOCABULARY`]'s, then made-up ones: a `q`, then
/// consonant-vowel syllables in base 70 from 70 (so two at least). Distinct ranks, distinct words
/// (without the `q`, "time" and "life" would be made up too).
fn ranked_word(rank: usize) -> String {
    if let Some(w) = VOCABULARY.get(rank) {
        return (*w).to_owned();
    }
    const CONSONANTS: &[u8] = b"bdfgklmnprstvz";
    const VOWELS: &[u8] = b"aeiou";
    let mut n = rank - VOCABULARY.len() + 70;
    let mut word = String::from("q");
    while n > 0 {
        let syllable = n % 70;
        word.push(CONSONANTS[syllable / 5] as char);
        word.push(VOWELS[syllable % 5] as char);
        n /= 70;
    }
    word
}

/// Where the bench's texts take their words.
pub(super) enum Text {
    Uniform(Words),
    Zipf(ZipfWords),
}

impl Text {
    pub(super) fn sentence(&mut self, words: usize) -> String {
        match self {
            Text::Uniform(w) => w.sentence(words),
            Text::Zipf(z) => (0..words).map(|_| z.word()).collect::<Vec<_>>().join(" "),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn zipf_words_are_distinct_per_rank_and_as_frequent_as_their_rank() {
        let words: std::collections::HashSet<String> = (0..20_000).map(ranked_word).collect();
        assert_eq!(words.len(), 20_000);
        assert!(words.iter().all(|w| w.chars().all(|c| c.is_ascii_lowercase())));
        let mut zipf = ZipfWords::new(7, 20_000);
        let mut counts: HashMap<String, usize> = HashMap::new();
        for _ in 0..100_000 {
            *counts.entry(zipf.word()).or_default() += 1;
        }
        // Rank r's share is 1 / (r · H) with H ≈ 10.48: the first word ~9.5 %, the second half of it.
        let share = |rank: usize| counts.get(&ranked_word(rank)).copied().unwrap_or(0) as f64 / 100_000.0;
        assert!((0.085..0.105).contains(&share(0)), "{}", share(0));
        assert!((1.7..2.3).contains(&(share(0) / share(1))), "{} {}", share(0), share(1));
        // Most of the words drawn at least once are rare: far more distinct words than the 162.
        assert!(counts.len() > 5_000, "{}", counts.len());
    }
}
