//! The routes the web page reads (stores, users, a timeline, the decision log, activity, an
//! explained recall) and the page's own assets, over real HTTP: their answers, what a caller bound
//! to one user (or agent) may see of them, and the headers every asset carries.

use mnemon::config::Config;
use mnemon_server::{Grant, HttpOptions, Principal};
use serde_json::{json, Value};

use crate::common;
use common::{raw, settings, start, Raw, Server};

const ADMIN: &str = "admin-token-0123456789";
const ANA: &str = "ana-token-0123456789ab";
const COACH: &str = "coach-token-0123456789";

fn server(dir: &std::path::Path) -> Server {
    let grants = vec![
        Grant { token: ADMIN.into(), principal: Principal::Admin },
        Grant { token: ANA.into(), principal: Principal::user("ana", None).unwrap() },
        Grant { token: COACH.into(), principal: Principal::user("ana", Some("coach")).unwrap() },
    ];
    start(
        settings(&dir.join("data"), vec![], Config::default()),
        HttpOptions { grants, ..HttpOptions::default() },
    )
}

fn call(s: &Server, method: &str, path: &str, token: Option<&str>, body: Option<Value>) -> Raw {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = Vec::new();
    if let Some(a) = &auth {
        headers.push(("Authorization", a.as_str()));
    }
    if body.is_some() {
        headers.push(("Content-Type", "application/json"));
    }
    raw(&s.base, method, path, &headers, &body.map(|b| b.to_string()).unwrap_or_default())
}

fn json_of(r: &Raw) -> Value {
    serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("{e}: {} {}", r.status, r.body))
}

fn ok(s: &Server, method: &str, path: &str, body: Option<Value>) -> Value {
    let r = call(s, method, path, Some(ADMIN), body);
    assert_eq!(r.status, 200, "{method} {path}: {}", r.body);
    json_of(&r)
}

fn seed(s: &Server) {
    for d in 1..=5 {
        ok(
            s,
            "POST",
            "/v1/messages",
            Some(json!({"user_id": "ana", "messages": [
                {"role": "user", "content": format!("Day {d}: I walked the dog."), "ts": format!("2026-0{d}-01T09:00:00")}]})),
        );
    }
    ok(
        s,
        "POST",
        "/v1/memories",
        Some(json!({"user_id": "ana", "agent_id": "coach", "memories": [
            {"content": "Ana runs 10 km on Sundays.", "ts": "2026-05-02T09:00:00"}]})),
    );
    ok(
        s,
        "POST",
        "/v1/memories",
        Some(json!({"user_id": "ana", "agent_id": "tutor", "memories": [
            {"content": "Ana studies Greek.", "ts": "2026-05-03T09:00:00"}]})),
    );
    ok(s, "POST", "/v1/memories", Some(json!({"user_id": "bo", "memories": ["Bo likes chess."]})));
}

#[test]
fn the_browse_routes_answer_and_a_bound_caller_sees_only_what_it_may() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path());
    seed(&s);

    let users = ok(&s, "GET", "/v1/users", None);
    assert_eq!(users.as_array().unwrap().len(), 2, "{users}");
    assert_eq!(
        (users[0]["user"].as_str(), users[0]["rounds"].as_u64(), users[0]["notes"].as_u64()),
        (Some("ana"), Some(5), Some(2))
    );
    assert_eq!(users[0]["agents"][0]["agent"], "coach");
    assert_eq!(users[0]["latest"], "2026-05-03T09:00:00");
    // Bound to ana: only ana. Bound to ana's coach: ana as the coach sees her (not the tutor's note).
    let mine = json_of(&call(&s, "GET", "/v1/users", Some(ANA), None));
    assert_eq!(mine.as_array().unwrap().len(), 1);
    assert_eq!(mine[0]["notes"], 2);
    let coach = json_of(&call(&s, "GET", "/v1/users", Some(COACH), None));
    assert_eq!(
        (coach[0]["notes"].as_u64(), coach[0]["agents"].as_array().unwrap().len()),
        (Some(1), 1),
        "{coach}"
    );
    assert_eq!(coach[0]["agents"][0]["agent"], "coach");
    let timeline = json_of(&call(&s, "POST", "/v1/timeline", Some(COACH), Some(json!({"user_id": "bo"}))));
    assert_eq!(timeline["error"]["code"], "forbidden", "{timeline}");

    // Stores: for the whole server's token only.
    let stores = ok(&s, "GET", "/v1/stores", None);
    assert_eq!(stores["default"], "global.db");
    assert!(stores["stores"].as_array().unwrap().iter().any(|x| x == "global.db"), "{stores}");
    assert_eq!(call(&s, "GET", "/v1/stores", Some(ANA), None).status, 403);
    assert_eq!(call(&s, "GET", "/v1/stores", None, None).status, 401);

    // The timeline by pages.
    let first = ok(&s, "POST", "/v1/timeline", Some(json!({"user_id": "ana", "limit": 2})));
    assert_eq!((first["total"].as_u64(), first["offset"].as_u64()), (Some(5), Some(0)));
    assert_eq!(first["rounds"][0]["turns"][0]["content"], "Day 1: I walked the dog.");
    assert!(first["rounds"][0]["facts"].as_array().unwrap().is_empty());
    let second =
        ok(&s, "POST", "/v1/timeline", Some(json!({"user_id": "ana", "limit": 2, "cursor": first["next"]})));
    assert_eq!(
        (second["offset"].as_u64(), second["rounds"][0]["ts"].as_str()),
        (Some(2), Some("2026-03-01T09:00:00"))
    );
    let bad = json_of(&call(
        &s,
        "POST",
        "/v1/timeline",
        Some(ADMIN),
        Some(json!({"user_id": "ana", "cursor": "nope"})),
    ));
    assert_eq!(
        (bad["error"]["code"].as_str(), bad["error"]["field"].as_str()),
        (Some("invalid_input"), Some("cursor"))
    );
    let bad = json_of(&call(
        &s,
        "POST",
        "/v1/timeline",
        Some(ADMIN),
        Some(json!({"user_id": "ana", "limit": 501})),
    ));
    assert_eq!(bad["error"]["field"], "limit");

    // The decision log, by kind and by pages.
    let log = ok(&s, "POST", "/v1/decisions", Some(json!({"user_id": "ana", "kinds": ["note.stored"]})));
    assert_eq!(log["decisions"].as_array().unwrap().len(), 2);
    assert!(log["decisions"].as_array().unwrap().iter().all(|d| d["kind"] == "note.stored"));
    assert_eq!(log["kinds"]["round.stored"], 5);
    // A kind the log does not know is bad input, named, not a filter that matches nothing.
    let bad = json_of(&call(
        &s,
        "POST",
        "/v1/decisions",
        Some(ADMIN),
        Some(json!({"user_id": "ana", "kinds": ["note.stored", "note.eaten"]})),
    ));
    assert_eq!(
        (bad["error"]["code"].as_str(), bad["error"]["field"].as_str()),
        (Some("invalid_input"), Some("kinds[1]"))
    );
    let page = ok(&s, "POST", "/v1/decisions", Some(json!({"user_id": "ana", "limit": 3})));
    assert_eq!(page["decisions"].as_array().unwrap().len(), 3);
    assert!(page["next"].is_string());

    // Activity per month.
    let activity = ok(&s, "GET", "/v1/activity?user_id=ana", None);
    let months: Vec<&str> =
        activity["months"].as_array().unwrap().iter().map(|m| m["month"].as_str().unwrap()).collect();
    assert_eq!(months, ["2026-01", "2026-02", "2026-03", "2026-04", "2026-05"]);
    assert_eq!(
        (activity["months"][4]["rounds"].as_u64(), activity["months"][4]["notes"].as_u64()),
        (Some(1), Some(2))
    );

    // The profile: no extractor here, so no fact; another user's is refused to a bound caller.
    assert_eq!(ok(&s, "GET", "/v1/profile?user_id=ana", None), json!({"relations": []}));
    assert_eq!(call(&s, "GET", "/v1/profile?user_id=bo", Some(ANA), None).status, 403);

    // An explained recall: the same block, with every record's reasons and the budget.
    let ask = json!({"user_id": "ana", "query": "walking the dog", "budget": 200});
    let plain = ok(&s, "POST", "/v1/recall", Some(ask.clone()));
    assert!(plain.get("records").is_none() && plain.get("budget").is_none(), "{plain}");
    let mut explained_ask = ask;
    explained_ask["explain"] = json!(true);
    let explained = ok(&s, "POST", "/v1/recall", Some(explained_ask));
    assert_eq!(explained["context"], plain["context"]);
    assert_eq!(explained["budget"], 200);
    let records = explained["records"].as_array().unwrap();
    let kept = records.iter().filter(|r| r["kept"] == true).count();
    assert_eq!(kept, plain["rounds"].as_array().unwrap().len() + plain["memories"].as_array().unwrap().len());
    assert!(records.iter().any(|r| r["kept"] == false), "the budget cut nothing: {explained}");
    assert!(records.iter().all(|r| r["dense"].is_u64() || r["words"].is_u64()));

    // Documented.
    let doc = ok(&s, "GET", "/openapi.json", None);
    for path in ["/v1/users", "/v1/stores", "/v1/timeline", "/v1/decisions", "/v1/activity", "/v1/profile"] {
        assert!(doc["paths"][path].is_object(), "{path} is not in the OpenAPI document");
    }
}

#[test]
fn the_page_is_served_without_a_token_under_a_strict_policy() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path());
    for (path, kind) in [
        ("/ui", "text/html"),
        ("/ui/", "text/html"),
        ("/ui/app.js", "text/javascript"),
        ("/ui/app.css", "text/css"),
        ("/ui/icon.svg", "image/svg+xml"),
    ] {
        let r = call(&s, "GET", path, None, None);
        assert_eq!(r.status, 200, "{path}");
        assert!(r.header("content-type").is_some_and(|t| t.starts_with(kind)), "{path}: {:?}", r.headers);
        let csp = r.header("content-security-policy").unwrap_or_default();
        for directive in
            ["default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'none'"]
        {
            assert!(csp.contains(directive), "{path}: {csp}");
        }
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    }
    assert_eq!(call(&s, "GET", "/ui/secret.env", None, None).status, 404);
    assert_eq!(call(&s, "GET", "/ui/../v1/users", None, None).status, 404);
    // The data behind it still needs the token, and a page elsewhere cannot read it.
    assert_eq!(call(&s, "GET", "/v1/users", None, None).status, 401);
    let r = raw(
        &s.base,
        "GET",
        "/v1/users",
        &[("Authorization", &format!("Bearer {ADMIN}")), ("Origin", "https://evil.example")],
        "",
    );
    assert_eq!(r.status, 403);
}
