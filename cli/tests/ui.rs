//! The web page at `/ui` in a real browser: Debian's `chromium` driven by Playwright for Python
//! (in a venv this test makes on first use) against the real `mnemon serve`, with a token and a
//! scripted extractor (its facts are below). `ui_browser.py` seeds the store through the JSON API
//! and walks every view at 1280 and 390 pixels, saving a screenshot of each into the test's
//! temporary folder (`MNEMON_UI_SCREENSHOTS` names another).

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Serving;

use crate::common;

const PLAYWRIGHT: &str = "playwright==1.65.2";

fn python() -> PathBuf {
    common::venv(PLAYWRIGHT)
}

/// Debian's Chromium (`scripts/system-deps.sh` installs it), or the one `MNEMON_CHROMIUM` names.
fn chromium() -> PathBuf {
    let path =
        std::env::var_os("MNEMON_CHROMIUM").map(PathBuf::from).unwrap_or_else(|| "/usr/bin/chromium".into());
    assert!(
        path.exists(),
        "no browser at {}: run scripts/system-deps.sh (it installs Debian's chromium)",
        path.display()
    );
    path
}

/// A home superseded by a move, with a relative date to resolve.
const SCRIPT: &str = r#"{
  "I live in Porto, near the river.": [{"content": "The user lives in Porto.", "raw": "user: I live in Porto",
    "when": null, "subject": "user", "predicate": "lives in", "object": "Porto", "salience": 1.0}],
  "Big news: I moved to Lisbon last week!": [{"content": "The user moved to Lisbon.",
    "raw": "user: I moved to Lisbon last week", "when": "last week", "subject": "user", "predicate": "moved to",
    "object": "Lisbon", "salience": 1.0}]
}"#;

#[test]
fn every_view_of_the_page_works_in_a_real_browser_and_stored_text_stays_text() {
    let browser = chromium();
    let dir = tempfile::tempdir().unwrap();
    let token = "a-browser-token-of-some-length";
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    let script = dir.path().join("facts.json");
    std::fs::write(&script, SCRIPT).unwrap();
    let data = dir.path().join("data");
    let server = Serving::start([
        "--embedder".as_ref(),
        "hashing".as_ref(),
        "--data".as_ref(),
        data.as_os_str(),
        "--token-file".as_ref(),
        token_file.as_os_str(),
        "--extractor".as_ref(),
        script.as_os_str(),
        // The page's store picker needs a second store, which a write makes.
        "--create-stores".as_ref(),
    ]);
    let shots = std::env::var_os("MNEMON_UI_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-screenshots"));
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui_browser.py");
    let out = Command::new(python())
        .arg(page)
        .arg(format!("http://{}", server.addr))
        .arg(token)
        .arg(&browser)
        .arg(&shots)
        .output()
        .expect("run the browser test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "browser test failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{stdout}screenshots in {}", shots.display());
    drop(server);
}

/// A page on another origin tries every request a page can make without the user's help (an
/// image, a script, a stylesheet, `no-cors` fetches, a form) against a local server without a
/// token, each naming a new store: none creates a file in the data directory.
#[test]
fn no_request_from_a_web_page_creates_a_store() {
    let browser = chromium();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server =
        Serving::start(["--embedder".as_ref(), "hashing".as_ref(), "--data".as_ref(), data.as_os_str()]);
    let files = || {
        let mut names: Vec<String> = std::fs::read_dir(&data)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.ends_with("-wal") && !n.ends_with("-shm"))
            .collect();
        names.sort();
        names
    };
    let before = files();
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile_page.py");
    let out = Command::new(python())
        .arg(page)
        .arg(format!("http://{}", server.addr))
        .arg(&browser)
        .output()
        .expect("run the hostile page");
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("page done"),
        "the page did not run\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(files(), before, "a web page created files in the data directory");
    assert_eq!(before, ["global.db"]);
    drop(server);
}
