//! What the row modules share: the flat vector arrays the views load, and vectors as blobs.

use super::{Store, View};
use crate::error::{Error, Result};
use mnemon_backend::{Dialect, p};

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

    /// A user's vectors of the sqlite-vec table `table` (rowid: the record's id): rows
    /// `(owner id, day, salience)` of `columns` from `from`, joined to `table` on the record id
    /// `id`, then `rest` (the filter on user `?1` and agent `?2`, and the order).
    ///
    /// In a SQLite file the query reads each record's place (its chunk and offset, from
    /// `{table}_rowids`), and [`Store::chunk_vectors`] then reads each chunk once. Read one by
    /// one through the table, every vector walks its chunk's overflow pages from the start
    /// (sqlite-vec opens a new blob handle per read): 27 µs a vector, against a read of the chunk.
    pub(super) fn vectors_of(
        &self,
        columns: &str,
        from: &str,
        table: &str,
        id: &str,
        rest: &str,
        view: View<'_>,
    ) -> Result<UserVectors> {
        if self.db().dialect() != Dialect::Sqlite {
            let sql =
                format!("SELECT {columns}, v.embedding FROM {from} JOIN {table} v ON v.rowid = {id} {rest}");
            return self.vectors(&sql, view);
        }
        let sql = format!(
            "SELECT {columns}, v.chunk_id, v.chunk_offset FROM {from} JOIN {table}_rowids v ON v.rowid = {id} {rest}"
        );
        let mut out =
            UserVectors { ids: Vec::new(), days: Vec::new(), saliences: Vec::new(), data: Vec::new() };
        let mut places = Vec::new();
        self.db().query(&sql, p![view.user, view.agent], &mut |r| {
            out.ids.push(r.get(0)?);
            out.days.push(r.get(1)?);
            out.saliences.push(r.get(2)?);
            places.push((r.get::<i64>(3)?, r.get::<i64>(4)?));
            Ok(())
        })?;
        out.data = self.chunk_vectors(table, &places)?;
        Ok(out)
    }

    /// The vectors at `places` (sqlite-vec chunk id and offset) of `table`, in the order given,
    /// as one flat array: each chunk is opened once, in chunk order (a user's chunks hold only
    /// its vectors: the tables are partitioned by user), and each run of vectors that lie one
    /// after another in the chunk and in the result is read in one call, straight into the
    /// result. Reading the chunk as a column instead would first copy the whole chunk into a
    /// buffer of its own, fresh memory on every view load.
    pub(super) fn chunk_vectors(&self, table: &str, places: &[(i64, i64)]) -> Result<Vec<f32>> {
        let conn = self.file("reading sqlite-vec's chunks")?;
        let dim = self.pins.dim()?;
        let width = dim * 4;
        let mut order: Vec<usize> = (0..places.len()).collect();
        order.sort_unstable_by_key(|&i| places[i]);
        let mut data = vec![0f32; places.len() * dim];
        let chunks = format!("{table}_vector_chunks00");
        for group in order.chunk_by(|&a, &b| places[a].0 == places[b].0) {
            let chunk = places[group[0]].0;
            let blob = conn
                .blob_open(rusqlite::MAIN_DB, chunks.as_str(), "vectors", chunk, true)
                .map_err(|e| self.corrupt(format!("{table}: chunk {chunk} cannot be read: {e}")))?;
            for run in group.chunk_by(|&a, &b| b == a + 1 && places[b].1 == places[a].1 + 1) {
                let (first, offset) = (run[0], places[run[0]].1);
                let start = usize::try_from(offset)
                    .ok()
                    .and_then(|o| o.checked_mul(width))
                    .filter(|s| s + run.len() * width <= blob.len())
                    .ok_or_else(|| self.corrupt(format!("{table}: offset {offset} is past chunk {chunk}")))?;
                let out = &mut data[first * dim..(first + run.len()) * dim];
                // SAFETY: the bytes of `out`, which every bit pattern is a valid `f32` of.
                let bytes =
                    unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), out.len() * 4) };
                blob.read_at_exact(bytes, start)?;
            }
        }
        // sqlite-vec stores little-endian floats.
        if cfg!(target_endian = "big") {
            for x in &mut data {
                *x = f32::from_bits(x.to_bits().swap_bytes());
            }
        }
        Ok(data)
    }

    /// A user's round vectors read one by one through sqlite-vec, as before chunk reads: what
    /// [`Store::vectors_of`] must equal.
    #[cfg(test)]
    pub(crate) fn user_vectors_one_by_one(&self, view: View<'_>) -> Result<UserVectors> {
        self.vectors(
            &format!(
                "SELECT r.id, r.day, CAST(1 AS REAL), v.embedding FROM rounds r JOIN round_vectors v ON v.rowid = r.id \
                 WHERE r.user_id = ?1 AND {} ORDER BY r.id",
                super::visible("r.agent", 2)
            ),
            view,
        )
    }
}
