//! A PostgreSQL server for the tests, and a fresh database per test.
//!
//! The server is `$MNEMON_PG_URL` when set (any PostgreSQL with pgvector whose user may create
//! databases); else the project's own, started (idempotently) by `scripts/postgres.sh start`.

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

/// The server's URL (its `postgres` database).
pub fn server() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        if let Ok(url) = std::env::var("MNEMON_PG_URL") {
            return url;
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/postgres.sh");
        let out = Command::new(&script).arg("start").output().expect("run scripts/postgres.sh");
        assert!(
            out.status.success(),
            "scripts/postgres.sh start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .last()
            .expect("the script prints the URL")
            .trim()
            .to_owned()
    })
}

/// `url` with its database replaced by `db`.
pub fn with_db(url: &str, db: &str) -> String {
    let (base, _) = url.rsplit_once('/').expect("a URL with a database");
    format!("{base}/{db}")
}

/// An admin connection to the server.
pub fn admin() -> postgres::Client {
    postgres::Client::connect(server(), postgres::NoTls).expect("connect to the test server")
}

/// A new, empty database named after the test (and this process), dropped first if a failed
/// run left it; returns its URL.
pub fn fresh_db(name: &str) -> String {
    let db = format!("mnemon_{name}_{}", std::process::id());
    let mut admin = admin();
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {db}")).unwrap();
    with_db(server(), &db)
}

/// Drops a database made by [`fresh_db`].
pub fn drop_db(url: &str) {
    let db = url.rsplit_once('/').unwrap().1;
    let _ = admin().batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"));
}
