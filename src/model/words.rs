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
pub(crate) fn words(text: &str, mut f: impl FnMut(&str)) {
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
    for c in text.chars() {
        let boundary = if c.is_ascii() {
            // The common case: ASCII decomposes to itself and lowercases in place.
            if c.is_ascii_alphanumeric() {
                word.push(c.to_ascii_lowercase());
                false
            } else {
                true
            }
        } else {
            let mut boundary = false;
            decompose_compatible(c, |d| {
                if !is_combining_mark(d) {
                    boundary |= fold(d, &mut word);
                }
            });
            boundary
        };
        if boundary && !word.is_empty() {
            f(&word);
            word.clear();
        }
    }
    if !word.is_empty() {
        f(&word);
    }
}

/// One lowercase word's Snowball stem.
pub(crate) fn stem(word: &str) -> String {
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
