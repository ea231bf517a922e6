//! What a cosine says about relevance, per embedder: a rising map from the cosine between a
//! question and a record to a score in `0..=1` whose labels (`high` from 0.90, `medium` from 0.75,
//! `low` from 0.50, else `none`) mean the same with every embedder.
//!
//! Each embedder's cosines spread differently (MiniLM gives an unrelated pair about 0.1 and a
//! paraphrase 0.6; feature hashing gives most pairs 0 and only shared words count), so one fixed
//! threshold would mean nothing. The anchors below were measured with `mnemon eval labels` on the
//! development benchmarks' questions against their evidence rounds and against another user's
//! rounds (unrelated by construction), chosen on one half of the conversations and confirmed on
//! the other.

use serde::Serialize;

use super::{EmbedderPins, HashingEmbedder};
use crate::error::{Error, Result};

/// A piecewise-linear map from cosine to relevance score through (0, 0), the three anchors (the
/// cosines that score 0.50, 0.75 and 0.90: the floors of the `low`, `medium` and `high` labels)
/// and (1, 1); a cosine at or below 0 scores 0. It rises strictly, so it never reorders records
/// scored by one embedder.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Calibration {
    /// The cosines that score 0.50, 0.75 and 0.90, rising strictly inside `0..1`.
    pub anchors: [f32; 3],
}

/// The scores the anchors map to.
const ANCHOR_SCORES: [f32; 3] = [0.50, 0.75, 0.90];

/// all-MiniLM-L6-v2 int8's model bytes (the blake3 pinned as its revision).
const MINILM_REVISION: &str = "b2a68b34a45c28477ee9619f6f1ed03064209e3c3dae66aac2cedc4ee59c286d";

impl Calibration {
    /// The score is the cosine itself (clamped to `0..=1`): for an embedder nobody measured.
    pub const IDENTITY: Calibration = Calibration { anchors: ANCHOR_SCORES };

    /// all-MiniLM-L6-v2: `low` starts near the 99th percentile of an unrelated user's rounds,
    /// `medium` near the median of a question's evidence (docs/DECISIONS.md has the measurement).
    pub const MINILM: Calibration = Calibration { anchors: [0.40, 0.50, 0.62] };

    /// The hashing embedder (unigrams and bigrams: cosines come from shared words only, so it
    /// tells little apart): `low` at an unrelated user's 99th percentile, `medium` at its
    /// maximum; most evidence stays `none` (docs/DECISIONS.md has the measurement).
    pub const HASHING: Calibration = Calibration { anchors: [0.27, 0.49, 0.55] };

    /// A calibration through `anchors`, checked: three cosines rising strictly inside `0..1`.
    pub fn new(anchors: [f32; 3]) -> Result<Calibration> {
        let [a, b, c] = anchors;
        if !(a.is_finite() && 0.0 < a && a < b && b < c && c < 1.0) {
            return Err(Error::input("anchors", "must be three cosines rising strictly inside 0..1"));
        }
        Ok(Calibration { anchors })
    }

    /// The measured calibration of the embedder these pins name, else [`Calibration::IDENTITY`].
    pub fn of(pins: &EmbedderPins) -> Calibration {
        match (pins.name.as_str(), pins.revision.as_str()) {
            (HashingEmbedder::NAME, _) => Calibration::HASHING,
            ("all-MiniLM-L6-v2-int8", MINILM_REVISION) => Calibration::MINILM,
            _ => Calibration::IDENTITY,
        }
    }

    /// The relevance score of a cosine.
    ///
    /// ```
    /// use mnemon::context::Relevance;
    /// use mnemon::embed::Calibration;
    /// let c = Calibration::MINILM;
    /// assert_eq!(c.score(0.40), 0.50);
    /// assert_eq!(Relevance::of(c.score(0.62)), Relevance::High);
    /// assert_eq!(Relevance::of(c.score(0.10)), Relevance::None);
    /// assert_eq!(c.score(-0.3), 0.0);
    /// ```
    pub fn score(self, cosine: f32) -> f32 {
        if cosine.is_nan() || cosine <= 0.0 {
            return 0.0;
        }
        let [a, b, c] = self.anchors;
        let points =
            [(0.0, 0.0), (a, ANCHOR_SCORES[0]), (b, ANCHOR_SCORES[1]), (c, ANCHOR_SCORES[2]), (1.0, 1.0)];
        for w in points.windows(2) {
            let ((x0, y0), (x1, y1)) = (w[0], w[1]);
            if cosine <= x1 {
                return y0 + (y1 - y0) * (cosine - x0) / (x1 - x0);
            }
        }
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::Embedder;

    #[test]
    fn the_map_passes_through_its_anchors_rises_and_stays_in_bounds() {
        for c in [Calibration::IDENTITY, Calibration::MINILM, Calibration::HASHING] {
            for (x, y) in c.anchors.iter().zip(ANCHOR_SCORES) {
                assert!((c.score(*x) - y).abs() < 1e-6, "{c:?} at {x}");
            }
            let mut last = -1.0;
            for i in -100..=1100 {
                let s = c.score(i as f32 / 1000.0);
                assert!((0.0..=1.0).contains(&s));
                assert!(s >= last, "{c:?} falls at {i}");
                if (1..=1000).contains(&i) {
                    assert!(s > last, "{c:?} is flat at {i}");
                }
                last = s;
            }
            assert_eq!(c.score(f32::NAN), 0.0);
        }
        assert_eq!(Calibration::IDENTITY.score(0.8), 0.8);
    }

    #[test]
    fn anchors_are_checked_and_embedders_found_by_their_pins() {
        assert!(Calibration::new([0.4, 0.5, 0.62]).is_ok());
        for bad in [[0.0, 0.5, 0.6], [0.5, 0.5, 0.6], [0.4, 0.7, 0.6], [0.4, 0.5, 1.0], [f32::NAN, 0.5, 0.6]]
        {
            let e = Calibration::new(bad).unwrap_err();
            assert!(e.to_string().contains("anchors"), "{e}");
        }
        assert_eq!(Calibration::of(&HashingEmbedder::default().pins()), Calibration::HASHING);
        let minilm = EmbedderPins {
            name: "all-MiniLM-L6-v2-int8".into(),
            revision: MINILM_REVISION.into(),
            dim: 384,
            template: String::new(),
        };
        assert_eq!(Calibration::of(&minilm), Calibration::MINILM);
        let other = EmbedderPins { revision: "another model's bytes".into(), ..minilm };
        assert_eq!(Calibration::of(&other), Calibration::IDENTITY);
    }
}
