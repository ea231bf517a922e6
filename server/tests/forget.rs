//! Forgetting a user in every store the server knows, over real HTTP: the default and global
//! stores, store files in the data directory, project stores, and a store named under a root;
//! a foreign SQLite file in the data directory is left byte for byte as it was.

use mnemon::config::Config;
use mnemon_server::HttpOptions;
use serde_json::json;

use crate::common;
use common::{raw, settings, start};

#[test]
fn a_user_is_forgotten_in_every_store_the_server_knows() {
    let dir = tempfile::tempdir().unwrap();
    let (data, root) = (dir.path().join("data"), dir.path().join("work"));
    std::fs::create_dir_all(root.join("app")).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    // An application's own database that happens to sit in the data directory.
    let foreign = data.join("app.db");
    let conn = rusqlite::Connection::open(&foreign).unwrap();
    conn.execute_batch("CREATE TABLE meta(k TEXT); INSERT INTO meta VALUES ('mine');").unwrap();
    drop(conn);
    let foreign_bytes = std::fs::read(&foreign).unwrap();

    let root_store = root.join("team.db").to_string_lossy().into_owned();
    let project = root.join("app").to_string_lossy().into_owned();
    let s = start(settings(&data, vec![root.clone()], Config::default()), HttpOptions::default());
    let post = |path: &str, body: serde_json::Value| {
        raw(&s.base, "POST", path, &[("Content-Type", "application/json")], &body.to_string())
    };
    let stores = [None, Some("global"), Some("notes.db"), Some(project.as_str()), Some(root_store.as_str())];
    for store in stores {
        for user in ["ana", "bob"] {
            let mut body = json!({"user_id": user, "memories": [format!("{user} was here")]});
            if let Some(st) = store {
                body["store"] = json!(st);
            }
            let r = post("/v1/memories", body);
            assert_eq!(r.status, 200, "{store:?}: {}", r.body);
        }
    }

    let r = raw(&s.base, "DELETE", "/v1/users/ana?everywhere=true", &[], "");
    assert_eq!(r.status, 200, "{}", r.body);
    let report = r.json();
    // The default store is the global one: four stores, one note of Ana's in each.
    assert_eq!((report["notes"].as_u64(), report["complete"].as_bool()), (Some(4), Some(true)), "{report}");
    let names: Vec<&str> =
        report["stores"].as_array().unwrap().iter().map(|s| s["store"].as_str().unwrap()).collect();
    assert!(names.contains(&"global.db") && names.contains(&"notes.db"), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("projects/")), "{names:?}");
    assert!(names.iter().any(|n| n.ends_with("team.db")), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("app.db")), "a foreign file was touched: {names:?}");
    assert_eq!(std::fs::read(&foreign).unwrap(), foreign_bytes, "the foreign file changed");

    for store in stores {
        for (user, notes) in [("ana", 0), ("bob", 1)] {
            let q = match store {
                Some(st) => format!("/v1/count?user_id={user}&store={}", st.replace('/', "%2F")),
                None => format!("/v1/count?user_id={user}"),
            };
            let r = raw(&s.base, "GET", &q, &[], "");
            assert_eq!(r.json()["notes"].as_u64(), Some(notes), "{user} in {store:?}: {}", r.body);
        }
    }
    // Both at once is a mistake, and says which field.
    let r = raw(&s.base, "DELETE", "/v1/users/ana?everywhere=true&store=global", &[], "");
    assert_eq!((r.status, r.json()["error"]["field"].as_str()), (400, Some("store")), "{}", r.body);
    let r = raw(&s.base, "DELETE", "/v1/users/ana?everywhere=maybe", &[], "");
    assert_eq!((r.status, r.json()["error"]["field"].as_str()), (400, Some("everywhere")), "{}", r.body);
}
