//! Secret masking, as CI systems mask secrets: every value interpolated into an endpoint's URL or
//! headers from `${ENV}` is replaced by `***` in text that came from a sub-agent (deltas, messages,
//! outputs, error texts) and in every log line. Its Base64 (standard and URL-safe, with and
//! without padding) and percent-encoded forms (only non-alphanumerics, the URI-component set, or
//! every byte escaped; upper- or lower-case hex) are masked too, and so are its JSON-escaped
//! forms (a value holding `"`, `\`, `/` or non-ASCII inside a JSON string: a JSON log line, an
//! agent echoing JSON; also escaped twice). Values shorter than [`MIN_SECRET_LEN`] characters are
//! not masked (they would mask ordinary text).

use std::collections::BTreeSet;

use base64::Engine;
use regex::Regex;
use serde_json::Value;

/// Values shorter than this are not treated as secrets.
pub const MIN_SECRET_LEN: usize = 4;

/// What a masked secret is replaced with.
pub const MASK: &str = "***";

/// A set of secret values and a matcher for them and their encoded forms.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    values: BTreeSet<String>,
    /// Every form masked, longest first.
    forms: Vec<String>,
    matcher: Option<Regex>,
}

/// The forms of `value` that are masked: itself, Base64 and percent-encoded.
fn forms(value: &str) -> Vec<String> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let mut out = vec![value.to_string()];
    for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
        out.push(engine.encode(value));
    }
    out.push(percent_encoding::utf8_percent_encode(value, percent_encoding::NON_ALPHANUMERIC).to_string());
    // What form encoders and `encodeURIComponent` leave as is.
    const COMPONENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~')
        .remove(b'!')
        .remove(b'*')
        .remove(b'\'')
        .remove(b'(')
        .remove(b')');
    out.push(percent_encoding::utf8_percent_encode(value, COMPONENT).to_string());
    // Every byte escaped.
    out.push(value.bytes().map(|b| format!("%{b:02X}")).collect());
    let lower: Vec<String> = out.iter().filter(|f| f.contains('%')).map(|f| lower_hex_escapes(f)).collect();
    out.extend(lower);
    out.extend(json_escaped(value));
    out
}

/// How `value` reads inside a JSON string when that differs from the value: escaped as serde and
/// most encoders write it, with `/` escaped too (`\/`), with every non-ASCII character as `\u` and four hex digits
/// (Python's default), and each of those escaped once more (a JSON document logged as a string).
fn json_escaped(value: &str) -> Vec<String> {
    let once = |v: &str| -> Vec<String> {
        let plain = serde_json::to_string(v).unwrap_or_default();
        let plain = plain[1..plain.len() - 1].to_string();
        let slash = plain.replace('/', "\\/");
        let ascii: String = plain
            .chars()
            .map(|c| {
                if c.is_ascii() {
                    c.to_string()
                } else {
                    c.encode_utf16(&mut [0; 2]).iter().map(|u| format!("\\u{u:04x}")).collect()
                }
            })
            .collect();
        vec![plain, slash, ascii]
    };
    let mut out: Vec<String> = once(value);
    let twice: Vec<String> = out.iter().flat_map(|f| once(f)).collect();
    out.extend(twice);
    out.retain(|f| f != value);
    out.sort();
    out.dedup();
    out
}

/// `%2F` -> `%2f` (some encoders write lower-case hex).
fn lower_hex_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut after_percent = 0;
    for c in text.chars() {
        if c == '%' {
            after_percent = 2;
            out.push(c);
        } else if after_percent > 0 {
            after_percent -= 1;
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

impl Secrets {
    /// The secrets among `values` (those of at least [`MIN_SECRET_LEN`] characters).
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(values: I) -> Self {
        let values: BTreeSet<String> =
            values.into_iter().map(Into::into).filter(|v: &String| v.chars().count() >= MIN_SECRET_LEN).collect();
        let mut alternatives: Vec<String> = values.iter().flat_map(|v| forms(v)).collect();
        alternatives.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        alternatives.dedup();
        let matcher = (!alternatives.is_empty()).then(|| {
            let pattern = alternatives.iter().map(|a| regex::escape(a)).collect::<Vec<_>>().join("|");
            Regex::new(&pattern).expect("escaped literals")
        });
        Self { values, forms: alternatives, matcher }
    }

    /// The length in bytes of the longest end of `text` that could be the start of a secret
    /// (a proper prefix of one of its forms): what a stream must hold back until the next chunk
    /// says whether a secret is being split across chunks.
    pub fn partial_suffix(&self, text: &str) -> usize {
        let longest = self.forms.first().map_or(0, String::len);
        text.char_indices()
            .rev()
            .take_while(|(i, _)| text.len() - i < longest)
            .filter(|(i, _)| {
                let tail = &text[*i..];
                self.forms.iter().any(|f| f.len() > tail.len() && f.starts_with(tail))
            })
            .map(|(i, _)| text.len() - i)
            .max()
            .unwrap_or(0)
    }

    /// The secret values.
    pub fn values(&self) -> impl Iterator<Item = &str> {
        self.values.iter().map(String::as_str)
    }

    /// `true` when there is nothing to mask.
    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// `text` with every secret (and encoded form) replaced by [`MASK`].
    pub fn mask<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        match &self.matcher {
            Some(re) => re.replace_all(text, MASK),
            None => std::borrow::Cow::Borrowed(text),
        }
    }

    /// `text` masked, as an owned string.
    pub fn mask_string(&self, text: String) -> String {
        match self.mask(&text) {
            std::borrow::Cow::Borrowed(_) => text,
            std::borrow::Cow::Owned(masked) => masked,
        }
    }

    /// Masks every string (and object key) in `value`.
    pub fn mask_json(&self, value: Value) -> Value {
        if self.is_empty() {
            return value;
        }
        match value {
            Value::String(s) => Value::String(self.mask_string(s)),
            Value::Array(items) => Value::Array(items.into_iter().map(|v| self.mask_json(v)).collect()),
            Value::Object(map) => {
                Value::Object(map.into_iter().map(|(k, v)| (self.mask_string(k), self.mask_json(v))).collect())
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_and_their_encodings_are_masked() {
        let secrets = Secrets::new(["k>?t0ken/x=", "ab"]);
        let cases = [
            ("Bearer k>?t0ken/x=", "Bearer ***"),
            ("b64 az4/dDBrZW4veD0= end", "b64 *** end"),
            ("b64 no padding az4/dDBrZW4veD0.", "b64 no padding ***."),
            ("b64url az4_dDBrZW4veD0", "b64url ***"),
            ("url k%3E%3Ft0ken%2Fx%3D", "url ***"),
            ("url k%3e%3ft0ken%2fx%3d", "url ***"),
            ("short ab stays", "short ab stays"),
            ("nothing here", "nothing here"),
        ];
        for (input, want) in cases {
            assert_eq!(secrets.mask(input), want, "{input}");
        }
        let masked = secrets.mask_json(json!({ "echo": ["k>?t0ken/x=", 1], "k>?t0ken/x=": true }));
        assert_eq!(masked, json!({ "echo": ["***", 1], "***": true }));
    }

    #[test]
    fn secrets_with_quotes_and_backslashes_are_masked_in_json_escaped_text() {
        // Issue 12: a secret holding `"` or `\` appears escaped in JSON (JSON log lines, an agent
        // echoing JSON), where its raw form does not match.
        let secrets = Secrets::new([r#"pa"ss\w/rd"#, "naïve\"key"]);
        let cases = [
            (r#"raw pa"ss\w/rd end"#, "raw *** end"),
            (r#"{"token":"pa\"ss\\w/rd"}"#, r#"{"token":"***"}"#),
            (r#"{"token":"pa\"ss\\w\/rd"}"#, r#"{"token":"***"}"#),
            (r#"{"log":"{\"token\":\"pa\\\"ss\\\\w/rd\"}"}"#, r#"{"log":"{\"token\":\"***\"}"}"#),
            (r#"{"k":"naïve\"key"}"#, r#"{"k":"***"}"#),
            (r#"{"k":"na\u00efve\"key"}"#, r#"{"k":"***"}"#),
        ];
        for (input, want) in cases {
            assert_eq!(secrets.mask(input), want, "{input}");
        }
        // A secret logged as a JSON field value by the JSON log format.
        let line = serde_json::json!({ "message": format!("agent said {}", r#"pa"ss\w/rd"#) }).to_string();
        assert!(!line.contains(r#"pa"ss\w/rd"#), "only the escaped form is in the line: {line}");
        assert_eq!(secrets.mask(&line), r#"{"message":"agent said ***"}"#);
    }

    #[test]
    fn the_start_of_a_secret_at_the_end_of_a_chunk_is_held_back() {
        let secrets = Secrets::new(["k>?t0ken/x="]);
        assert_eq!(secrets.partial_suffix("token k>?t0"), "k>?t0".len());
        assert_eq!(secrets.partial_suffix("token k"), 1);
        assert_eq!(secrets.partial_suffix("token k>?t0ken/x="), 0, "a whole secret is masked, not held");
        assert_eq!(secrets.partial_suffix("nothing"), 0);
        assert_eq!(secrets.partial_suffix("b64 az4/dD"), "az4/dD".len(), "encoded forms too");
        assert_eq!(Secrets::default().partial_suffix("k>?t0"), 0);
    }

    #[test]
    fn no_secrets_mask_nothing() {
        let none = Secrets::new(Vec::<String>::new());
        assert!(none.is_empty());
        assert_eq!(none.mask("anything"), "anything");
    }
}
