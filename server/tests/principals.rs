//! Identity bound to the caller, over real HTTP: tokens mapped to principals (the whole server,
//! one user, one agent of a user), MCP tools whose schemas leave the bound fields out, the
//! destructive tools off unless enabled, and MCP served statelessly, so that two servers behind
//! a load balancer answer one client.

use mnemon::config::Config;
use mnemon_server::{Grant, HttpOptions, Principal};
use serde_json::{json, Value};

use crate::common;
use common::{raw, settings, start, Raw, Server};

const ADMIN: &str = "admin-token-0123456789";
const ANA: &str = "ana-token-0123456789ab";
const COACH: &str = "coach-token-0123456789";

fn grants() -> Vec<Grant> {
    vec![
        Grant { token: ADMIN.into(), principal: Principal::Admin },
        Grant { token: ANA.into(), principal: Principal::user("ana", None).unwrap() },
        Grant { token: COACH.into(), principal: Principal::user("ana", Some("coach")).unwrap() },
    ]
}

fn call(s: &Server, method: &str, path: &str, token: &str, body: Option<Value>) -> Raw {
    let auth = format!("Bearer {token}");
    let mut headers = vec![("Authorization", auth.as_str())];
    if body.is_some() {
        headers.push(("Content-Type", "application/json"));
    }
    raw(&s.base, method, path, &headers, &body.map(|b| b.to_string()).unwrap_or_default())
}

/// One MCP request (JSON-RPC over streamable HTTP, no session).
fn mcp(s: &Server, token: &str, method: &str, params: Value) -> Value {
    let auth = format!("Bearer {token}");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let r = raw(
        &s.base,
        "POST",
        "/mcp",
        &[
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        &body,
    );
    assert_eq!(r.status, 200, "{method}: {}", r.body);
    let text = r.body.lines().find_map(|l| l.strip_prefix("data: ")).unwrap_or(&r.body).to_owned();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method}: {e}: {text}"))
}

fn tool(s: &Server, token: &str, name: &str, args: Value) -> Value {
    let reply = mcp(s, token, "tools/call", json!({"name": name, "arguments": args}));
    let result = reply["result"].clone();
    assert!(!result.is_null(), "{name}: {reply}");
    result
}

#[test]
fn a_bound_token_reaches_only_its_user() {
    let dir = tempfile::tempdir().unwrap();
    let options = HttpOptions { grants: grants(), ..HttpOptions::default() };
    let s = start(settings(&dir.path().join("data"), vec![], Config::default()), options);
    let save = |token: &str, user: Option<&str>, text: &str| {
        let mut body = json!({"memories": [{"content": text, "ts": "2026-03-01T10:00:00"}]});
        if let Some(u) = user {
            body["user_id"] = json!(u);
        }
        call(&s, "POST", "/v1/memories", token, Some(body))
    };
    assert_eq!(save(ADMIN, Some("bob"), "Bob likes tea.").status, 200);
    // Ana's token writes to Ana without naming her, and may name her.
    assert_eq!(save(ANA, None, "Ana likes coffee.").status, 200);
    assert_eq!(save(ANA, Some("ana"), "Ana runs on Sundays.").status, 200);

    let mut tried = 0;
    for (method, path, body) in [
        ("POST", "/v1/memories", Some(json!({"user_id": "bob", "memories": ["planted"]}))),
        ("POST", "/v1/memories/search", Some(json!({"user_id": "bob", "query": "tea"}))),
        ("POST", "/v1/recall", Some(json!({"user_id": "bob", "query": "tea"}))),
        ("POST", "/v1/memories/list", Some(json!({"user_id": "bob"}))),
        ("GET", "/v1/export?user_id=bob", None),
        ("GET", "/v1/count?user_id=bob", None),
        ("DELETE", "/v1/users/bob", None),
        (
            "POST",
            "/v1/messages",
            Some(json!({"user_id": "bob", "messages": [{"role": "user", "content": "hi"}]})),
        ),
        ("GET", "/metrics", None),
    ] {
        tried += 1;
        let r = call(&s, method, path, ANA, body);
        assert_eq!((r.status, r.code()), (403, "forbidden".into()), "{method} {path}: {}", r.body);
    }
    // An agent-bound token cannot pick another agent, nor forget the user.
    for (method, path, body) in
        [("POST", "/v1/memories/list", Some(json!({"agent_id": "chef"}))), ("DELETE", "/v1/users/ana", None)]
    {
        tried += 1;
        let r = call(&s, method, path, COACH, body);
        assert_eq!(r.status, 403, "{method} {path}: {}", r.body);
    }
    eprintln!("{tried} calls beyond the bound user tried, 0 succeeded");

    // What each sees: Ana her two notes, the coach Ana's shared ones, the admin Bob's.
    let count = |token: &str, q: &str| call(&s, "GET", &format!("/v1/count{q}"), token, None).json();
    assert_eq!(count(ANA, "")["notes"], 2);
    assert_eq!(count(COACH, "")["notes"], 2, "an agent sees its user's shared notes");
    assert_eq!(count(ADMIN, "?user_id=bob")["notes"], 1, "Bob's note is untouched");
    assert!(call(&s, "GET", "/v1/export", ANA, None).body.contains("Ana likes coffee."));
    assert!(!call(&s, "GET", "/v1/export", ANA, None).body.contains("Bob"));
    // Ana may forget herself; the admin anyone.
    assert_eq!(call(&s, "DELETE", "/v1/users/ana", ANA, None).status, 200);
    assert_eq!(count(ANA, "")["notes"], 0);
    assert_eq!(call(&s, "GET", "/metrics", ADMIN, None).status, 200);
}

#[test]
fn mcp_tools_hide_bound_fields_and_gate_destructive_ones() {
    let dir = tempfile::tempdir().unwrap();
    let options = HttpOptions { grants: grants(), ..HttpOptions::default() };
    let s = start(settings(&dir.path().join("data"), vec![], Config::default()), options);

    let listed = |token: &str| mcp(&s, token, "tools/list", json!({}))["result"]["tools"].clone();
    let names = |tools: &Value| -> Vec<String> {
        tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    };
    let admin_tools = listed(ADMIN);
    assert!(!names(&admin_tools).contains(&"forget_user".to_owned()), "gated tools are off by default");
    assert!(!names(&admin_tools).contains(&"move_memories".to_owned()));
    assert_eq!(names(&admin_tools).len(), 12);
    let search =
        |tools: &Value| tools.as_array().unwrap().iter().find(|t| t["name"] == "search_memories").cloned();
    let admin_search = search(&admin_tools).unwrap();
    assert!(admin_search["inputSchema"]["properties"].get("user_id").is_some());
    assert_eq!(admin_search["annotations"]["readOnlyHint"], true);
    assert_eq!(admin_search["annotations"]["idempotentHint"], true);
    assert_eq!(admin_search["annotations"]["title"], "Search memories");

    let ana_search = search(&listed(ANA)).unwrap();
    let props = &ana_search["inputSchema"]["properties"];
    assert!(props.get("user_id").is_none() && props.get("agent_id").is_some(), "{props}");
    let coach_search = search(&listed(COACH)).unwrap();
    assert!(coach_search["inputSchema"]["properties"].get("agent_id").is_none());

    // Writes land on the bound user; naming another is an error result that names the field.
    let saved = tool(&s, ANA, "save_memories", json!({"memories": ["Ana is vegetarian."]}));
    assert_eq!(saved["isError"], false, "{saved}");
    // The text content mirrors the structured result.
    let text: Value = serde_json::from_str(saved["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, saved["structuredContent"]);
    let other = tool(&s, ANA, "search_memories", json!({"user_id": "bob", "query": "x"}));
    assert_eq!(other["isError"], true);
    assert_eq!(other["structuredContent"]["error"]["code"], "forbidden");
    assert_eq!(other["structuredContent"]["error"]["field"], "user_id");
    let counted = tool(&s, ADMIN, "count_memories", json!({"user_id": "ana"}));
    assert_eq!(counted["structuredContent"]["notes"], 1);

    let gated = tool(&s, ADMIN, "forget_user", json!({"user_id": "ana"}));
    assert_eq!(gated["isError"], true);
    assert!(gated["structuredContent"]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("--allow-destructive-tools"));
    assert_eq!(tool(&s, ADMIN, "count_memories", json!({"user_id": "ana"}))["structuredContent"]["notes"], 1);

    // Enabled, they are there; a bound token forgets only its own user.
    let open = HttpOptions { grants: grants(), destructive_tools: true, ..HttpOptions::default() };
    let s2 = start(settings(&dir.path().join("data2"), vec![], Config::default()), open);
    assert_eq!(names(&mcp(&s2, ADMIN, "tools/list", json!({}))["result"]["tools"]).len(), 14);
    let forget = mcp(&s2, ANA, "tools/list", json!({}))["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "forget_user")
        .cloned()
        .unwrap();
    assert!(forget["inputSchema"]["properties"].get("user_id").is_none());
    assert_eq!(forget["annotations"]["destructiveHint"], true);
    assert_eq!(tool(&s2, ANA, "forget_user", json!({"user_id": "bob"}))["isError"], true);
    assert_eq!(tool(&s2, ANA, "forget_user", json!({}))["isError"], false);
}

#[test]
fn two_servers_answer_one_mcp_client_without_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let options = HttpOptions { grants: grants(), ..HttpOptions::default() };
    let a = start(settings(&data, vec![], Config::default()), options.clone());
    let b = start(settings(&data, vec![], Config::default()), options);
    // Initialize on one; call on the other, with no session id to carry.
    let init = mcp(
        &a,
        ADMIN,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "mnemon", "{init}");
    let saved = tool(
        &b,
        ADMIN,
        "save_memories",
        json!({"user_id": "ana", "memories": [{"content": "Ana moved to Lisbon.", "ts": "2026-03-01T10:00:00"}]}),
    );
    assert_eq!(saved["isError"], false, "{saved}");
    let found =
        tool(&a, ADMIN, "search_memories", json!({"user_id": "ana", "query": "where does Ana live?"}));
    assert_eq!(found["structuredContent"]["hits"][0]["note"]["content"], "Ana moved to Lisbon.", "{found}");
}
