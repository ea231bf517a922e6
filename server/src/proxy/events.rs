//! The server-sent events of a streamed chat answer (OpenAI's `data: {chunk}` lines, ended by
//! `data: [DONE]`), read as they pass: the first choice's text, whether it finished, and the
//! bytes to send on, the end held back until the round is stored.

use axum::body::Bytes;
use serde_json::Value;

/// The server-sent events of a streamed chat answer, read as they pass.
#[derive(Default)]
pub(super) struct Events {
    /// Bytes of an event not yet complete.
    pending: Vec<u8>,
    /// The `[DONE]` event and what follows it, held until the round is stored.
    pub(super) held: Vec<u8>,
    /// The first choice's text so far.
    pub(super) answer: String,
    /// Whether `data: [DONE]` came.
    pub(super) done: bool,
    /// Whether the first choice gave a `finish_reason`.
    pub(super) finished: bool,
}

impl Events {
    /// Takes a chunk; gives the bytes of the complete events before `[DONE]` to send on.
    pub(super) fn feed(&mut self, chunk: &[u8]) -> Bytes {
        if self.done {
            self.held.extend_from_slice(chunk);
            return Bytes::new();
        }
        self.pending.extend_from_slice(chunk);
        let mut ready = Vec::new();
        while let Some(end) = event_end(&self.pending) {
            let event: Vec<u8> = self.pending.drain(..end).collect();
            if self.read(&event) {
                self.done = true;
                self.held = event;
                self.held.append(&mut self.pending);
                break;
            }
            ready.extend_from_slice(&event);
        }
        Bytes::from(ready)
    }

    /// Reads one event's data; `true` for `[DONE]`.
    fn read(&mut self, event: &[u8]) -> bool {
        let text = String::from_utf8_lossy(event);
        let data: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if data.is_empty() {
            return false;
        }
        let data = data.join("\n");
        if data.trim() == "[DONE]" {
            return true;
        }
        let Ok(chunk) = serde_json::from_str::<Value>(&data) else { return false };
        for choice in chunk["choices"].as_array().into_iter().flatten() {
            if choice["index"].as_u64().unwrap_or(0) != 0 {
                continue;
            }
            if let Some(t) = choice["delta"]["content"].as_str() {
                self.answer.push_str(t);
            }
            if !choice["finish_reason"].is_null() {
                self.finished = true;
            }
        }
        false
    }
}

/// Where the first complete event in `bytes` ends (after its blank line), if one is complete.
fn event_end(bytes: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\n' || bytes[i] == b'\r' {
            // A line ends here; a second line end right after it ends the event.
            let after = if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') { i + 2 } else { i + 1 };
            match bytes.get(after) {
                Some(b'\n') => return Some(after + 1),
                Some(b'\r') => {
                    return Some(if bytes.get(after + 1) == Some(&b'\n') { after + 2 } else { after + 1 });
                }
                _ => i = after,
            }
        } else {
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_at_blank_lines_in_any_line_ending_and_hold_the_end() {
        let mut e = Events::default();
        let one = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
        let two = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\r\n\r\n";
        let stream = format!("{one}{two}data: [DONE]\n\n");
        let mut sent = Vec::new();
        for chunk in stream.as_bytes().chunks(7) {
            sent.extend_from_slice(&e.feed(chunk));
        }
        assert_eq!(String::from_utf8(sent).unwrap(), format!("{one}{two}"));
        assert_eq!(e.answer, "Hello");
        assert!(e.done && e.finished);
        assert_eq!(e.held, b"data: [DONE]\n\n");
    }
}
