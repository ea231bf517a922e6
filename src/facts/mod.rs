//! The facts path: a stored round's facts, extracted at write time by a local model and settled
//! against what the user already holds.
//!
//! A queued round goes through the pre-filter (`prefilter`), the extractor (`extract`: a GGUF
//! under a grammar, behind an on-disk cache), verification against the round (`verify`: grounded
//! excerpts, time mentions that occur and resolve to dates through `resolve`), deduplication and
//! the conflict rules (`normalize` to a `subject|predicate` key, `conflict`; `ending` for statements
//! that end what an earlier fact said), and is stored with
//! every decision logged (`settle`), drained in round order by `worker`. `upgrade` re-extracts
//! rounds an older extractor made and re-settles every fact; `consolidate` re-runs the conflict
//! pass and decays salience. Must not run on the read path: nothing here is called by a read.

#[doc(hidden)]
pub mod conflict;
pub(crate) mod consolidate;
#[doc(hidden)]
pub mod ending;
pub(crate) mod extract;
#[doc(hidden)]
pub mod frame;
mod meet;
#[doc(hidden)]
pub mod normalize;
#[doc(hidden)]
pub mod prefilter;
#[doc(hidden)]
pub mod resolve;
mod settle;
mod types;
pub(crate) mod upgrade;
#[doc(hidden)]
pub mod verify;
pub(crate) mod worker;

use std::collections::BTreeMap;

pub use crate::read::{Fact, FactHit, OTHER, Profile, ProfileFact, Relation};
pub use types::*;

use crate::config::Config;
use extract::ExtractorPins;

/// What an extractor's facts depend on: the model and its decoding, the pre-filter, and the
/// rules that verify, resolve, deduplicate and settle facts. Recorded in the store's
/// `extractors` table, and named by every round and fact it produced, so that one store holds
/// facts of several extractor versions and `reextract` knows which rounds are stale.
pub(crate) fn extractor_pins(x: &ExtractorPins, config: &Config) -> BTreeMap<String, String> {
    [
        ("extractor", x.name.clone()),
        ("extractor.model_blake3", x.model_blake3.clone()),
        ("extractor.quant", x.quant.clone()),
        ("extractor.runtime", x.runtime.clone()),
        ("extractor.decode", x.decode.clone()),
        ("extractor.prompt", x.prompt.clone()),
        ("extractor.prefilter", prefilter::prefilter_blake3()),
        ("facts.verify", verify::VERIFY_VERSION.to_owned()),
        ("facts.slots", extract::slots::facts_rules()),
        ("facts.resolver", resolve::RESOLVER_VERSION.to_owned()),
        ("facts.dedup_cosine", config.fact_dedup_cosine.to_string()),
        ("facts.conflict", conflict::CONFLICT_VERSION.to_owned()),
        ("facts.lexicons", normalize::normalize_blake3()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}
