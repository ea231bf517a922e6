//! Words: the tokenizer every word index and word rule shares.
//!
//! A text's terms are its alphanumeric runs, case-folded, with diacritics removed (compatibility
//! decomposition, then combining marks dropped) and stemmed with the Snowball English stemmer:
//! FTS5's `porter unicode61 remove_diacritics 2` in effect. There are no stopwords: dropping them
//! was measured to cost LoCoMo recall.

use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::char::{decompose_compatible, is_combining_mark};

static STEMMER: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// Calls `f` with every word of `text`, case-folded, diacritics removed.
///
/// A run of ASCII letters and digits is read as bytes, and handed over as a slice of `text`
/// itself when it has no capital and is a whole word; any other character is decoded,
/// decomposed and folded.
pub(crate) fn words(text: &str, mut f: impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let mut word = String::new();
    // Appends `c` to the word, or returns true when `c` ends it.
    let fold = |c: char, word: &mut String| {
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
            false
        } else {
            true
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_alphanumeric() {
            let start = i;
            let mut upper = false;
            while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                upper |= bytes[i].is_ascii_uppercase();
                i += 1;
            }
            let run = &text[start..i];
            let goes_on = i < bytes.len() && !bytes[i].is_ascii();
            if word.is_empty() && !goes_on && !upper {
                f(run);
            } else {
                word.extend(run.chars().map(|c| c.to_ascii_lowercase()));
                if !goes_on {
                    f(&word);
                    word.clear();
                }
            }
        } else if b.is_ascii() {
            if !word.is_empty() {
                f(&word);
                word.clear();
            }
            i += 1;
        } else {
            let Some(c) = text[i..].chars().next() else { break };
            i += c.len_utf8();
            let mut boundary = false;
            decompose_compatible(c, |d| {
                if !is_combining_mark(d) {
                    boundary |= fold(d, &mut word);
                }
            });
            if boundary && !word.is_empty() {
                f(&word);
                word.clear();
            }
        }
    }
    if !word.is_empty() {
        f(&word);
    }
}

/// One lowercase word's Snowball stem.
pub fn stem(word: &str) -> String {
    STEMMER.stem(word).into_owned()
}

/// The terms of `text`, stemmed, in text order.
pub(crate) fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    words(text, |w| out.push(STEMMER.stem(w).into_owned()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tokenizer a character at a time, as it was before the ASCII runs: what [`words`] must
    /// equal on every text.
    fn words_by_char(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut word = String::new();
        for c in text.chars() {
            let mut boundary = false;
            decompose_compatible(c, |d| {
                if !is_combining_mark(d) {
                    if d.is_alphanumeric() {
                        word.extend(d.to_lowercase());
                    } else {
                        boundary = true;
                    }
                }
            });
            if boundary && !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
        }
        if !word.is_empty() {
            out.push(word);
        }
        out
    }

    #[test]
    fn ascii_runs_give_the_words_a_character_at_a_time_gives() {
        let pieces = [
            "a", "Zebra", "RUN", "42", "x9", " ", ",", "-", "\n", "é", "É", "ﬁ", "½", "İ", "ß", "Σ", "日本",
            "\u{301}", "\u{2014}", "Ⅻ", "ǅ", "ａｂ", "🙂", "'s", "café", "naïve", "",
        ];
        let mut x = 7u64;
        for _ in 0..20_000 {
            let mut text = String::new();
            for _ in 0..(x % 9) {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                text.push_str(pieces[(x >> 33) as usize % pieces.len()]);
            }
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let mut got = Vec::new();
            words(&text, |w| got.push(w.to_owned()));
            assert_eq!(got, words_by_char(&text), "{text:?}");
        }
    }

    #[test]
    fn terms_fold_case_and_diacritics_and_stem() {
        assert_eq!(
            terms("The Café's running SHOES, naïve ﬁsh 5k!"),
            ["the", "cafe", "s", "run", "shoe", "naiv", "fish", "5k"]
        );
        assert_eq!(terms("Ünïcödé—dash"), ["unicod", "dash"]);
        assert!(terms("").is_empty() && terms(" ,.!").is_empty());
    }
}
