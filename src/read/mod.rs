//! The read path: `recall` (rounds), `search` (notes), `get_context` (everything, with query
//! angles, in one token budget), and reading records as stored (`get`, `list`, `count`, every
//! round, fact and decision of a scope), and reading a store as a person browses it (users, a
//! timeline by pages, the decision log by kind, activity per month).
//!
//! Owns turning a question into a ranking (date prefix, anchor, time window, the shape of the
//! ranking), merging angles, and the one renderer that contexts and exports share. Must not call
//! a model other than the embedder, and never writes.

mod ask;
mod browse;
mod context;
mod profile;
mod ranked;
mod records;
pub(crate) mod render;
pub(crate) mod trim;
mod types;

pub use browse::{
    Activity, AgentSummary, DecisionPage, MAX_PAGE, MonthActivity, Paging, RecordCounts, Supersession,
    TimelineFact, TimelinePage, TimelineRound, UserSummary,
};
pub(crate) use browse::{activity, decision_page, timeline, users};
pub(crate) use context::get_context;
pub(crate) use profile::profile;
pub use profile::{OTHER, Profile, ProfileFact, Relation};
pub(crate) use ranked::{nearest_in_database, recall, search};
pub(crate) use records::{count, decisions, every_fact, facts, get, list, rounds};
pub use types::*;
