//! Who is calling: the whole server (`admin`) or one user, perhaps one agent of theirs. A bound
//! caller's `user_id` (and `agent_id`) is fixed by the server, whatever a request says: a token
//! handed to an application, or an MCP server started for one user, cannot read or forget anyone
//! else, even when a prompt injection steers the model that calls it.
//!
//! Tokens come from a token file, one per line: `TOKEN` or `TOKEN admin` (the whole server),
//! `TOKEN user=NAME` or `TOKEN user=NAME agent=NAME` (bound). Blank lines and `#` comments are
//! skipped.

use serde_json::Value;

use crate::error::{ApiError, Code};

/// Who a request acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// Any user, every operation.
    Admin,
    /// One user (and, when given, one of their agents).
    User {
        /// The user.
        user: String,
        /// The agent, if bound to one.
        agent: Option<String>,
    },
}

impl Principal {
    /// A principal bound to `user` (and `agent`), checked like a request's `user_id`.
    pub fn user(user: &str, agent: Option<&str>) -> Result<Principal, String> {
        let check = |what: &str, v: &str| {
            if v.trim().is_empty() || v.len() > 256 {
                Err(format!("{what} must be 1 to 256 bytes, not blank"))
            } else {
                Ok(v.to_owned())
            }
        };
        Ok(Principal::User {
            user: check("user", user)?,
            agent: agent.map(|a| check("agent", a)).transpose()?,
        })
    }

    /// The user this principal is bound to.
    pub fn bound_user(&self) -> Option<&str> {
        match self {
            Principal::Admin => None,
            Principal::User { user, .. } => Some(user),
        }
    }

    /// The agent this principal is bound to.
    pub fn bound_agent(&self) -> Option<&str> {
        match self {
            Principal::User { agent: Some(a), .. } => Some(a),
            _ => None,
        }
    }

    /// Fixes a request's `user_id` (and `agent_id`) to the bound ones. A request naming anyone
    /// else is refused (`forbidden`, naming the field); `forget_user` (which takes no
    /// `agent_id`) is refused to a principal bound to an agent, which may not forget the user.
    pub fn bind(&self, operation: &str, args: &mut Value) -> Result<(), ApiError> {
        let Principal::User { user, agent } = self else { return Ok(()) };
        let Value::Object(object) = args else { return Ok(()) };
        let forbidden = |field: &str, message: String| ApiError {
            field: Some(field.into()),
            ..ApiError::new(Code::Forbidden, message)
        };
        let forget = operation == "forget_user";
        if forget && agent.is_some() {
            return Err(forbidden("user_id", "a caller bound to an agent may not forget its user".into()));
        }
        for (field, bound) in [("user_id", Some(user)), ("agent_id", agent.as_ref())] {
            let Some(bound) = bound else { continue };
            if forget && field == "agent_id" {
                continue;
            }
            match object.get(field) {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) if s == bound => {}
                Some(_) => {
                    return Err(forbidden(field, format!("this caller may only reach {field} {bound:?}")));
                }
            }
            object.insert(field.into(), Value::String(bound.clone()));
        }
        Ok(())
    }

    /// A tool's input schema as this principal sees it: the bound fields are not there to fill.
    pub fn schema(&self, mut schema: Value) -> Value {
        let mut hidden = Vec::new();
        if self.bound_user().is_some() {
            hidden.push("user_id");
        }
        if self.bound_agent().is_some() {
            hidden.push("agent_id");
        }
        if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            for h in &hidden {
                props.remove(*h);
            }
        }
        if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
            required.retain(|r| r.as_str().is_none_or(|r| !hidden.contains(&r)));
        }
        schema
    }
}

/// A token and whom it acts for.
#[derive(Clone)]
pub struct Grant {
    /// The bearer token (at least 16 characters).
    pub token: String,
    /// Whom it acts for.
    pub principal: Principal,
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant").field("token", &"***").field("principal", &self.principal).finish()
    }
}

/// Reads a token file (see the module's documentation). Errors name the line, never the token.
pub fn parse_token_file(text: &str) -> Result<Vec<Grant>, String> {
    let mut grants = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |m: &str| format!("token file line {}: {m}", n + 1);
        let mut words = line.split_whitespace();
        let token = words.next().unwrap_or_default().to_owned();
        if token.len() < 16 {
            return Err(at("the token must be at least 16 characters"));
        }
        let (mut user, mut agent, mut admin) = (None, None, false);
        for w in words {
            match w.split_once('=') {
                None if w == "admin" => admin = true,
                Some(("user", v)) => user = Some(v),
                Some(("agent", v)) => agent = Some(v),
                _ => return Err(at(&format!("{w:?} is not `admin`, `user=NAME` or `agent=NAME`"))),
            }
        }
        let principal = match (admin, user) {
            (true, Some(_)) => return Err(at("`admin` and `user=` exclude each other")),
            (_, None) if agent.is_some() => return Err(at("`agent=` needs `user=`")),
            (_, None) => Principal::Admin,
            (false, Some(u)) => Principal::user(u, agent).map_err(|e| at(&e))?,
        };
        if grants.iter().any(|g: &Grant| g.token == token) {
            return Err(at("the same token is listed twice"));
        }
        grants.push(Grant { token, principal });
    }
    if grants.is_empty() {
        return Err("the token file lists no token".into());
    }
    Ok(grants)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_token_file_maps_tokens_to_principals() {
        let grants = parse_token_file(
            "# the ops team\nadmin-token-0123456789 admin\nana-token-0123456789 user=ana\n\n\
             coach-token-0123456789 user=ana agent=coach\nbare-token-0123456789\n",
        )
        .unwrap();
        let principals: Vec<_> = grants.iter().map(|g| g.principal.clone()).collect();
        assert_eq!(
            principals,
            [
                Principal::Admin,
                Principal::user("ana", None).unwrap(),
                Principal::user("ana", Some("coach")).unwrap(),
                Principal::Admin
            ]
        );
        for (text, why) in [
            ("short user=ana", "at least 16"),
            ("long-enough-token-0123 user=ana role=x", "\"role=x\""),
            ("long-enough-token-0123 admin user=ana", "exclude"),
            ("long-enough-token-0123 agent=a", "needs `user=`"),
            ("long-enough-token-0123 user=", "1 to 256"),
            ("long-enough-token-0123\nlong-enough-token-0123 user=a", "line 2: the same token"),
            ("# nothing\n", "no token"),
        ] {
            let e = parse_token_file(text).unwrap_err();
            assert!(e.contains(why), "{text:?}: {e}");
            assert!(!e.contains("long-enough-token"), "the error shows the token: {e}");
        }
    }

    #[test]
    fn a_bound_principal_fixes_the_user_and_refuses_others() {
        let ana = Principal::user("ana", None).unwrap();
        let mut args = json!({"query": "x"});
        ana.bind("search_memories", &mut args).unwrap();
        assert_eq!(args, json!({"query": "x", "user_id": "ana"}));
        let mut args = json!({"user_id": "ana", "agent_id": "chef"});
        ana.bind("count_memories", &mut args).unwrap();
        assert_eq!(args["agent_id"], "chef", "an unbound agent stays the caller's choice");
        let e = ana.bind("export_memories", &mut json!({"user_id": "bob"})).unwrap_err();
        assert_eq!((e.code, e.field.as_deref()), (Code::Forbidden, Some("user_id")));
        let mut args = json!({"user_id": "ana"});
        ana.bind("forget_user", &mut args).unwrap();
        assert!(ana.bind("forget_user", &mut json!({"user_id": "bob"})).is_err());

        let coach = Principal::user("ana", Some("coach")).unwrap();
        let mut args = json!({});
        coach.bind("recall_memories", &mut args).unwrap();
        assert_eq!(args, json!({"user_id": "ana", "agent_id": "coach"}));
        let e = coach.bind("list_memories", &mut json!({"agent_id": "chef"})).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("agent_id"));
        assert!(coach.bind("forget_user", &mut json!({})).is_err());

        let mut args = json!({"user_id": "anyone"});
        Principal::Admin.bind("forget_user", &mut args).unwrap();
        assert_eq!(args, json!({"user_id": "anyone"}));
    }

    #[test]
    fn bound_fields_leave_the_schema() {
        let schema = json!({"type": "object", "properties": {"user_id": {}, "agent_id": {}, "query": {}},
                            "required": ["query", "user_id"]});
        let seen = Principal::user("ana", Some("coach")).unwrap().schema(schema.clone());
        assert_eq!(seen, json!({"type": "object", "properties": {"query": {}}, "required": ["query"]}));
        assert_eq!(Principal::Admin.schema(schema.clone()), schema);
    }
}
