//! Scopes: whose memory a call reads or writes, and the rule for user and agent names.

use crate::error::{Error, Result};

/// Whose memory a call reads or writes: a user, and optionally one of the user's agents.
///
/// Every record belongs to a user and, optionally, to one agent of that user. **Visibility**: a
/// scope with an agent sees the user's shared records (written without an agent) and its own
/// agent's records, never another agent's; a scope without an agent is the user's own and sees
/// every record of the user. Writes land in the scope they are made in: with an agent, private
/// to it; without, shared by all the user's agents. A `&str` is the scope of that user.
///
/// ```
/// use mnemon::Scope;
/// let s = Scope::user("alice").agent("coder");
/// assert_eq!((s.user, s.agent), ("alice", Some("coder")));
/// assert_eq!(Scope::from("alice"), Scope::user("alice"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Scope<'a> {
    /// The user (1 to 256 bytes, no control character).
    pub user: &'a str,
    /// The agent (same rules), or `None` for the user's shared scope.
    pub agent: Option<&'a str>,
}

impl<'a> Scope<'a> {
    /// A user's scope.
    pub fn user(user: &'a str) -> Scope<'a> {
        Scope { user, agent: None }
    }
    /// The same user's agent `agent`.
    pub fn agent(self, agent: &'a str) -> Scope<'a> {
        Scope { agent: Some(agent), ..self }
    }
    /// Sets or clears the agent.
    pub fn with_agent(self, agent: Option<&'a str>) -> Scope<'a> {
        Scope { agent, ..self }
    }
}

impl<'a> From<&'a str> for Scope<'a> {
    fn from(user: &'a str) -> Scope<'a> {
        Scope::user(user)
    }
}

impl<'a> From<&'a String> for Scope<'a> {
    fn from(user: &'a String) -> Scope<'a> {
        Scope::user(user)
    }
}

impl Scope<'_> {
    /// Checks the user's and the agent's names (see [`check_name`]).
    pub(crate) fn check(self) -> Result<()> {
        check_user(self.user)?;
        self.agent.map_or(Ok(()), |a| check_name(a, "agent"))
    }
}

impl<'a> Scope<'a> {
    /// The user of a scope given to a call that acts on a whole user (`what` says which), after
    /// [`check`](Scope::check); a scope with an agent is refused, naming `agent_id`.
    pub(crate) fn whole_user(self, what: &str) -> Result<&'a str> {
        self.check()?;
        match self.agent {
            None => Ok(self.user),
            Some(_) => Err(Error::input(
                "agent_id",
                format!("{what} acts on a whole user: give a scope without an agent"),
            )),
        }
    }
}

/// Checks a user's name (see [`check_name`]), naming the field `user_id`.
pub(crate) fn check_user(user_id: &str) -> Result<()> {
    check_name(user_id, "user_id")
}

/// A user or agent name: 1 to 256 bytes, not blank, in Unicode NFC, no control character and
/// no invisible one (bidi controls, zero-width characters, the other default-ignorable code
/// points): two names that look alike are the same name (`an\u{200b}a` is not `ana`'s double,
/// it is refused), and one in another normal form is refused rather than silently another user.
fn check_name(name: &str, field: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(Error::input(field, "is empty"));
    }
    if name.len() > 256 {
        return Err(Error::input(field, "is longer than 256 bytes"));
    }
    if name.chars().any(char::is_control) {
        return Err(Error::input(field, "contains a control character"));
    }
    if let Some(c) = name.chars().find(|c| invisible(*c)) {
        return Err(Error::input(field, format!("contains an invisible character (U+{:04X})", u32::from(c))));
    }
    if !unicode_normalization::is_nfc(name) {
        return Err(Error::input(field, "is not in Unicode NFC form (compose it first)"));
    }
    Ok(())
}

/// Unicode's default-ignorable code points (which render as nothing) and the bidi controls.
fn invisible(c: char) -> bool {
    matches!(
        u32::from(c),
        0xAD | 0x34F
            | 0x61C
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF0..=0xFFF8
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}
