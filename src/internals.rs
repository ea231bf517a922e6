//! Items public only for mnemon's own crates: the evaluation harness (`mnemon-eval`), the CLI's
//! benchmarks and fuzzers, the PostgreSQL backend (`mnemon-postgres`) and the integration tests.
//! Not a stable API: they change with the engine, without notice.

/// The interface between the store's statements and a database: SQLite's implementation is in
/// this crate, PostgreSQL's in `mnemon-postgres`.
pub mod backend {
    pub use mnemon_backend::{Backend, Claims, Connection, Db, Dialect, FromValue, Param, Row, Value};
}

/// The extractor's output contract and prompt, as the harness measures them.
pub mod extract {
    #[cfg(feature = "llama")]
    pub use crate::facts::extract::kernels;
    pub use crate::facts::extract::{
        GRAMMAR, MAX_FACTS, PROMPT, SALIENCES, SCHEMA, parse, prompt_blake3, prompt_messages,
        prompt_messages_of, round_key, round_text,
    };
}

/// A local GGUF model answering prompts in free text, greedy (the harness's local reader).
#[cfg(feature = "llama")]
pub mod generate {
    pub use crate::facts::extract::{Generated, LlamaReader, ReaderPins};
}

/// The word stemmer the word index uses (Snowball English).
pub mod words {
    pub use crate::model::words::stem;
}

/// The similarity kernels: cosine (an AVX2 kernel and a portable twin, bit-identical), byte
/// quantization, exact `i8` dot products.
pub mod vector {
    pub use crate::embed::vector::{
        Quantized, cosine, cosine_from_l2, dot_i8, dot_i8_rows, normalize, quantize,
    };
}

/// Dates in questions: the `[Current date: …]` prefix, the window a question names, and the
/// month and weekday names the resolver reads.
pub mod time {
    pub use crate::model::time::{
        DateWindow, month_name, month_number, query_window, split_date_prefix, weekday,
    };
}

pub use crate::facts::{conflict, ending, normalize, prefilter, resolve, verify};
pub use crate::index::bm25::LEXICAL_SCHEME;
pub use crate::index::ledger::SettleStats;
pub use crate::index::rank::{ScanStats, score, take_scan_stats};
/// How a context labels a turn's line (`role`, or `Speaker (role)`).
pub use crate::read::render::turn_label;

/// What settling read in this store since it was opened: facts loaded into ledgers, and facts
/// the conflict rules compared new facts with.
pub fn settle_stats(memory: &crate::Memory) -> SettleStats {
    memory.engine().ledgers.stats()
}
