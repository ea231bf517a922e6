//! Part records: each sentence of a user's turn that shares a long round with a reply, embedded
//! on its own and ranking for its round.
//!
//! A round is embedded as one text, and the embedder averages it over at most 256 word pieces.
//! When a short user turn sits before a long reply, what the user said in passing ("by the way, I
//! caught up with Emma last week") is a small share of that average, and a question about it
//! finds the round late or not at all. So such a round also gets one vector per sentence of its
//! user turn; it ranks as its best record (round, part or fact), exactly as facts already rank.
//!
//! Only rounds of at least [`MIN_ROUND_WORDS`] words get parts: in a short round a sentence is
//! already a large share of the round's vector, and extra records there were measured to add
//! only chances for a wrong match (docs/DECISIONS.md, "part records"). The rule a round's derived
//! records were made under is recorded per round ([`RULE`]), so a store whose rounds were made
//! under another rule, or by a build without parts, is brought up to date when it is opened with
//! an embedder.

use super::round::{Role, Turn, round_text};

/// The rule a round's derived records follow: its text embedded and indexed with the speakers'
/// names (`round::index_text`), and its parts as below. A round recorded under another rule is
/// brought up to date at open.
pub(crate) const RULE: &str = "names-v1+user-sentences-v1";

/// The rule before speakers' names: the same parts, the text with roles only.
pub(crate) const PARTS_ONLY_RULE: &str = "user-sentences-v1";

/// Rounds shorter than this (in whitespace-separated words of the round's text) get no parts.
pub(crate) const MIN_ROUND_WORDS: usize = 100;

/// A sentence shorter than this many words joins the next one (or the previous one, at the end).
const MIN_SENTENCE_WORDS: usize = 4;

/// The texts of a round's part records, in order: the sentences of its user turn when the round
/// is a user turn with a reply and its `role: content` text has at least [`MIN_ROUND_WORDS`]
/// words; otherwise none.
pub(crate) fn parts(turns: &[Turn]) -> Vec<String> {
    match turns {
        [user, _reply]
            if user.role == Role::User && round_text(turns).split_whitespace().count() >= MIN_ROUND_WORDS =>
        {
            sentences(&user.content)
        }
        _ => Vec::new(),
    }
}

/// Splits `text` after `.`, `!`, `?` or a line break that ends a word, keeping pieces of at least
/// [`MIN_SENTENCE_WORDS`] words; each piece is trimmed.
pub(crate) fn sentences(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        current.push(c);
        let ends = matches!(c, '.' | '!' | '?' | '\n') && chars.peek().is_none_or(|n| n.is_whitespace());
        if ends && current.split_whitespace().count() >= MIN_SENTENCE_WORDS {
            out.push(current.trim().to_owned());
            current.clear();
        }
    }
    let rest = current.trim();
    if !rest.is_empty() {
        match out.last_mut() {
            Some(last) if rest.split_whitespace().count() < MIN_SENTENCE_WORDS => {
                last.push(' ');
                last.push_str(rest);
            }
            _ => out.push(rest.to_owned()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(role: Role, content: &str) -> Turn {
        Turn::new(role, content, "t")
    }

    #[test]
    fn sentences_split_at_ends_and_keep_short_ones_with_a_neighbour() {
        assert_eq!(
            sentences("Hi! I need help with my garden today. By the way, I met Emma. Thanks"),
            ["Hi! I need help with my garden today.", "By the way, I met Emma. Thanks"]
        );
        // A dot inside a word or a number does not end a sentence.
        assert_eq!(
            sentences("It costs 3.5 dollars at example.com today, right"),
            ["It costs 3.5 dollars at example.com today, right"]
        );
        assert_eq!(
            sentences("one two three four.\nfive six seven eight"),
            ["one two three four.", "five six seven eight"]
        );
        assert!(sentences("  ").is_empty());
    }

    #[test]
    fn only_a_long_round_of_a_user_turn_and_a_reply_has_parts() {
        let user = turn(Role::User, "I need a recipe for dinner tonight. By the way, I got a smoker today.");
        let long_reply = turn(Role::Assistant, &"word ".repeat(100));
        let short_reply = turn(Role::Assistant, "Sure.");
        let long = [user.clone(), long_reply.clone()];
        assert_eq!(
            parts(&long),
            ["I need a recipe for dinner tonight.", "By the way, I got a smoker today."]
        );
        let short = [user.clone(), short_reply];
        assert!(parts(&short).is_empty(), "a short round's vector holds its sentences");
        let lone = [turn(Role::User, &"word ".repeat(120))];
        assert!(parts(&lone).is_empty(), "a lone turn is its round");
        let reversed = [long_reply, user];
        assert!(parts(&reversed).is_empty());
    }
}
