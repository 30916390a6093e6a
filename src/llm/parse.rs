//! Tolerant parsing of model output (docs/planning.md): the JSON object may come bare, inside a
//! Markdown code fence, or with prose around it. `serde_json` does the parsing; this only finds
//! where an object starts.

use serde_json::Value;

/// The first JSON object in `text`: the whole text, else the first fenced block that parses,
/// else the first `{` from which `serde_json` reads a complete object.
pub fn extract_json(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(trimmed) {
        return Some(v);
    }
    for block in trimmed.split("```").skip(1).step_by(2) {
        let body = block.trim_start_matches(|c: char| c.is_ascii_alphabetic()).trim();
        if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(body) {
            return Some(v);
        }
    }
    trimmed.match_indices('{').find_map(|(i, _)| {
        let mut stream = serde_json::Deserializer::from_str(&trimmed[i..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(v @ Value::Object(_))) => Some(v),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bare_fenced_and_embedded_json() {
        assert_eq!(extract_json(r#" {"a": 1} "#), Some(json!({"a": 1})));
        assert_eq!(extract_json("```json\n{\"a\": 2}\n```"), Some(json!({"a": 2})));
        assert_eq!(extract_json("Here you go:\n```\n{\"a\": 3}\n```\nDone."), Some(json!({"a": 3})));
        assert_eq!(extract_json(r#"Sure! {"a": {"b": "}"}} hope it helps"#), Some(json!({"a": {"b": "}"}})));
        assert_eq!(extract_json("no json here"), None);
        assert_eq!(extract_json("[1, 2]"), None);
    }
}
