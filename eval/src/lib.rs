//! # mnemon-eval
//!
//! mnemon's evaluation harness. Quality claims about mnemon come from here, measured the same way
//! every time on the public benchmarks' development split: each LongMemEval question's haystack
//! (or each LoCoMo conversation) goes into a fresh store, its questions are recalled, and the
//! ranks of the evidence rounds give ANY@k, ALL@k and MRR, overall and per question type. Runs
//! leave artifacts (`pins.json`, `predictions.jsonl`, `summary.json`, `report.md`), resume where
//! they stopped, and compare pairwise with exact McNemar tests.

#![deny(missing_docs)]

pub mod answer;
pub mod data;
pub mod extraction;
pub mod facts;
pub mod labels;
pub mod metrics;
pub mod prefilter;
pub mod qa;
pub mod report;
pub mod run;
pub mod stats;

pub use data::{load, Benchmark, Dataset, Haystack, Question};
pub use report::Summary;
pub use run::{run, RunConfig};
