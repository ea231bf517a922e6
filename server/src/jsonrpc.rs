//! What reaches rmcp, checked first: every message that is not JSON gets JSON-RPC's parse error
//! (-32700, `id: null`), a line past the size limit gets -32600 and the server reads on, and a
//! tool call whose `arguments` is not an object gets -32602 naming `params.arguments`. rmcp
//! skips a line it cannot parse without a reply (a client waiting on its id would wait forever)
//! and reads mistyped arguments as an unknown method; on stdio and over HTTP alike, these
//! answers come from here.

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// JSON-RPC's code for a message that is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for a message that is not a valid request (here: a line over the limit).
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC's code for a method's parameters of the wrong type.
pub const INVALID_PARAMS: i64 = -32602;

/// The longest stdio line (one message) read: as rmcp's own bound, and past any HTTP body limit.
pub const MAX_LINE: usize = 16 << 20;

/// A JSON-RPC error reply (one line of JSON, no line break).
pub fn error(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// The reply a message gets before rmcp sees it, if any, with its code: the parse error for
/// bytes that are not JSON (invalid UTF-8, a syntax error, nesting past serde_json's 128 levels),
/// or -32602 for a `tools/call` whose `params.arguments` is there but not an object.
pub fn precheck(message: &[u8]) -> Option<(i64, String)> {
    let value: Value = match serde_json::from_slice(message) {
        Ok(v) => v,
        Err(e) => return Some((PARSE_ERROR, error(&Value::Null, PARSE_ERROR, &format!("Parse error: {e}")))),
    };
    let call = value.get("method").and_then(Value::as_str) == Some("tools/call");
    let arguments = value.get("params").and_then(|p| p.get("arguments"));
    if call && arguments.is_some_and(|a| !a.is_object() && !a.is_null()) {
        let id = value.get("id").filter(|i| i.is_string() || i.is_number()).cloned().unwrap_or(Value::Null);
        return Some((
            INVALID_PARAMS,
            error(&id, INVALID_PARAMS, "Invalid params: params.arguments must be an object"),
        ));
    }
    None
}

/// One line read within [`MAX_LINE`] bytes.
enum Line {
    /// A whole line (without its `\n`), or the last one before the end.
    Whole(Vec<u8>),
    /// A line past the limit, skipped to its end.
    TooLong,
    /// The end of input.
    End,
}

async fn read_line<R: AsyncRead + Unpin>(input: &mut BufReader<R>) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut over = false;
    loop {
        let buf = input.fill_buf().await?;
        if buf.is_empty() {
            return Ok(match (over, line.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::End,
                (false, false) => Line::Whole(line),
            });
        }
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(at) => (&buf[..at], Some(at + 1)),
            None => (buf, None),
        };
        if !over && line.len() + chunk.len() <= MAX_LINE {
            line.extend_from_slice(chunk);
        } else {
            over = true;
            line = Vec::new();
        }
        let used = done.unwrap_or(buf.len());
        input.consume(used);
        if done.is_some() {
            return Ok(if over { Line::TooLong } else { Line::Whole(line) });
        }
    }
}

/// Reads `input` line by line: each checked line goes on to `to_rmcp`, each refused one is
/// answered on `replies`. Ends at the end of `input` (then rmcp sees its end too).
pub async fn filter_lines<R, W>(
    input: R,
    mut to_rmcp: W,
    replies: tokio::sync::mpsc::UnboundedSender<String>,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut input = BufReader::new(input);
    loop {
        match read_line(&mut input).await? {
            Line::End => break,
            Line::TooLong => {
                let message = format!("Invalid request: a message is at most {MAX_LINE} bytes");
                let _ = replies.send(error(&Value::Null, INVALID_REQUEST, &message));
            }
            Line::Whole(line) if line.iter().all(u8::is_ascii_whitespace) => {}
            Line::Whole(line) => match precheck(&line) {
                Some((_, reply)) => {
                    let _ = replies.send(reply);
                }
                None => {
                    to_rmcp.write_all(&line).await?;
                    to_rmcp.write_all(b"\n").await?;
                    to_rmcp.flush().await?;
                }
            },
        }
    }
    to_rmcp.shutdown().await
}

/// Writes rmcp's lines and the filter's replies to `output`, each line whole, until both end.
pub async fn merge_lines<R, W>(
    from_rmcp: R,
    mut replies: tokio::sync::mpsc::UnboundedReceiver<String>,
    mut output: W,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut from_rmcp = BufReader::new(from_rmcp);
    let (mut rmcp_open, mut replies_open) = (true, true);
    let mut line = Vec::new();
    while rmcp_open || replies_open {
        tokio::select! {
            read = from_rmcp.read_until(b'\n', &mut line), if rmcp_open => {
                if read? == 0 {
                    rmcp_open = false;
                } else {
                    output.write_all(&line).await?;
                    output.flush().await?;
                }
                line.clear();
            }
            reply = replies.recv(), if replies_open => match reply {
                Some(reply) => {
                    output.write_all(reply.as_bytes()).await?;
                    output.write_all(b"\n").await?;
                    output.flush().await?;
                }
                None => replies_open = false,
            },
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_json_gets_the_parse_error_and_mistyped_arguments_invalid_params() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        for bad in [&b"not json"[..], b"{\"jsonrpc\":\"2.0\",\"id\":1,", b"\xff\xfe{}", deep.as_bytes()] {
            let reply: Value = serde_json::from_str(&precheck(bad).expect("a reply").1).unwrap();
            assert_eq!(
                (reply["id"].clone(), reply["error"]["code"].as_i64()),
                (Value::Null, Some(PARSE_ERROR))
            );
        }
        let call = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"count_memories","arguments":"notanobject"}}"#;
        let reply: Value = serde_json::from_str(&precheck(call).unwrap().1).unwrap();
        assert_eq!((reply["id"].as_i64(), reply["error"]["code"].as_i64()), (Some(7), Some(INVALID_PARAMS)));
        for fine in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#[..],
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{}}}"#,
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}"#,
        ] {
            assert_eq!(precheck(fine), None);
        }
    }

    #[tokio::test]
    async fn a_line_past_the_limit_is_answered_and_the_next_one_read() {
        let big = vec![b'x'; MAX_LINE + 10];
        let mut input = big;
        input.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\ngarbage\n");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut passed = Vec::new();
        filter_lines(&input[..], &mut passed, tx).await.unwrap();
        assert_eq!(passed, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
        let first: Value = serde_json::from_str(&rx.recv().await.unwrap()).unwrap();
        let second: Value = serde_json::from_str(&rx.recv().await.unwrap()).unwrap();
        assert_eq!(first["error"]["code"].as_i64(), Some(INVALID_REQUEST));
        assert_eq!(second["error"]["code"].as_i64(), Some(PARSE_ERROR));
        assert!(rx.recv().await.is_none());
    }
}
