//! What the row modules share: the flat vector arrays the views load, and vectors as blobs.

use super::{Store, View};
use crate::error::{Error, Result};
use mnemon_backend::p;

/// A user's vectors in id order, as one flat array; `ids` are the rounds they rank for.
pub(crate) struct UserVectors {
    pub ids: Vec<i64>,
    pub days: Vec<i32>,
    pub saliences: Vec<f32>,
    pub data: Vec<f32>,
}

impl UserVectors {
    /// The entries `keep` keeps (it is given each entry's place and id), in order; `dim` is
    /// the vectors' width.
    pub(crate) fn retain(self, dim: usize, keep: impl Fn(usize, i64) -> bool) -> UserVectors {
        let mut out =
            UserVectors { ids: Vec::new(), days: Vec::new(), saliences: Vec::new(), data: Vec::new() };
        for (i, v) in self.data.chunks_exact(dim).enumerate() {
            if keep(i, self.ids[i]) {
                out.ids.push(self.ids[i]);
                out.days.push(self.days[i]);
                out.saliences.push(self.saliences[i]);
                out.data.extend_from_slice(v);
            }
        }
        out
    }
}

pub(crate) fn vector_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub(crate) fn blob_vector(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

impl Store {
    pub(super) fn corrupt(&self, reason: impl Into<String>) -> Error {
        Error::Corrupt { path: self.path.clone(), reason: reason.into() }
    }

    /// Vectors from `sql`, whose rows are (round id, day, salience, embedding) for user `?1` and
    /// agent `?2`.
    pub(super) fn vectors(&self, sql: &str, view: View<'_>) -> Result<UserVectors> {
        let mut out =
            UserVectors { ids: Vec::new(), days: Vec::new(), saliences: Vec::new(), data: Vec::new() };
        self.db().query(sql, p![view.user, view.agent], &mut |r| {
            out.ids.push(r.get(0)?);
            out.days.push(r.get(1)?);
            out.saliences.push(r.get(2)?);
            r.extend_vector(3, &mut out.data)
        })?;
        Ok(out)
    }
}
