//! A `tools/call` result as the model reads it: the text blocks joined, other blocks as a note
//! naming their type and size, structured content as JSON text when no text block carries it,
//! cut at the output cap.

use serde_json::Value;

/// What a call gave: the result the model gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpOutcome {
    pub content: String,
    pub is_error: bool,
}

impl McpOutcome {
    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
        }
    }
}

/// Maps a `CallToolResult` (as JSON, so every content type the SDK knows reads the same) to the
/// model's result, at most `max_bytes` long.
pub fn from_result(result: &Value, max_bytes: usize) -> McpOutcome {
    let mut parts: Vec<String> = Vec::new();
    let blocks = result.get("content").and_then(Value::as_array);
    for block in blocks.into_iter().flatten() {
        parts.push(block_text(block));
    }
    // Servers are told to repeat structured content in a text block, and the SDKs wrap a plain
    // return value in it too (`{"result": ...}`): the text says it, unless there is none.
    let has_text = blocks
        .into_iter()
        .flatten()
        .any(|block| block.get("type").and_then(Value::as_str) == Some("text"));
    if let Some(structured) = result
        .get("structuredContent")
        .filter(|v| !v.is_null() && !has_text)
    {
        parts.push(structured.to_string());
    }
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    McpOutcome {
        content: cap(parts.join("\n"), max_bytes),
        is_error,
    }
}

/// One content block: its text, or a note of what it is.
fn block_text(block: &Value) -> String {
    let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
    match text("type") {
        "text" => text("text").to_owned(),
        kind @ ("image" | "audio") => format!(
            "[{kind} {}, {} bytes]",
            text("mimeType"),
            base64_len(text("data"))
        ),
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or(Value::Null);
            let field = |key: &str| {
                resource
                    .get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            let size = match resource.get("text").and_then(Value::as_str) {
                Some(text) => text.len(),
                None => base64_len(&field("blob")),
            };
            format!(
                "[resource {} ({}), {size} bytes]",
                field("uri"),
                field("mimeType")
            )
        }
        "resource_link" => format!("[resource link {}]", text("uri")),
        other => format!("[{other} content]"),
    }
}

/// The decoded size of base64 text.
fn base64_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

/// `text` cut at `max_bytes` (on a character boundary), with a note.
pub fn cap(mut text: String, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&format!("\n[the result was cut at {max_bytes} bytes]"));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_read_as_text_and_notes() {
        let result = json!({
            "content": [
                {"type": "text", "text": "two files"},
                {"type": "image", "mimeType": "image/png", "data": "aGVsbG8="},
                {"type": "resource", "resource": {"uri": "file:///a", "mimeType": "text/plain", "text": "abc"}},
                {"type": "resource_link", "uri": "file:///b", "name": "b"}
            ],
            "structuredContent": {"count": 2},
            "isError": false
        });
        let outcome = from_result(&result, 1000);
        assert_eq!(
            outcome.content,
            "two files\n[image image/png, 5 bytes]\n[resource file:///a (text/plain), 3 bytes]\n[resource link file:///b]"
        );
        let structured_only = json!({"content": [], "structuredContent": {"count": 2}});
        assert_eq!(from_result(&structured_only, 1000).content, "{\"count\":2}");
        assert!(!outcome.is_error);
    }

    #[test]
    fn structured_content_repeated_as_text_is_said_once_and_errors_stay_errors() {
        let result = json!({
            "content": [{"type": "text", "text": "{\"count\": 2}"}],
            "structuredContent": {"count": 2},
            "isError": true
        });
        assert_eq!(
            from_result(&result, 1000),
            McpOutcome::error("{\"count\": 2}")
        );
    }

    #[test]
    fn a_long_result_is_cut_on_a_character_boundary() {
        let cut = cap("ééé".into(), 3);
        assert_eq!(cut, "é\n[the result was cut at 3 bytes]");
    }
}
