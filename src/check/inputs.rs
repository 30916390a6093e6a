//! Request inputs for `check-agent`, built from a capability card: the semantic keys' `example`
//! values first, then values generated from the input schema (`const`, `enum`, `examples`,
//! `default`, `format`, `pattern`, bounds, `$ref`, `allOf` / `anyOf` / `oneOf`).
//!
//! Every generated `inputs` object is checked against the agent's own input validator (the one
//! the executor uses): a case whose inputs do not pass is reported as a failed check of the card
//! rather than sent.

use regex_syntax::hir::{Class, Hir, HirKind};
use serde_json::{json, Map, Value};

use crate::registry::CapabilityCard;

/// How much of an object schema to fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fill {
    /// Every property the schema names.
    All,
    /// Only `required` properties (the "missing optional field" case).
    Required,
}

/// The `inputs` object for a case: `message` plus the semantic keys and the schema's other
/// properties as `fill` says.
pub(crate) fn inputs(agent: &CapabilityCard, fill: Fill, message: &str) -> Value {
    let schema = agent.input_schema.as_ref();
    let generator = Generator { root: schema, fill };
    let mut out = match generator.value(schema, 0) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    for key in &agent.keys {
        if let Some(example) = key.spec.example.as_ref().filter(|v| key.accepts(v)) {
            if fill == Fill::All || out.contains_key(&key.spec.key) || is_required(schema, &key.spec.key) {
                out.insert(key.spec.key.clone(), example.clone());
            }
        }
    }
    out.insert("message".into(), Value::String(message.to_string()));
    Value::Object(out)
}

fn is_required(schema: &Value, key: &str) -> bool {
    schema["required"].as_array().is_some_and(|r| r.iter().any(|k| k == key))
}

struct Generator<'a> {
    root: &'a Value,
    fill: Fill,
}

const MAX_DEPTH: u32 = 12;

impl Generator<'_> {
    fn value(&self, schema: &Value, depth: u32) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        let Some(obj) = schema.as_object() else {
            // `true` (or a non-object): anything goes.
            return (schema != &Value::Bool(false)).then(|| json!("example"));
        };
        if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
            let target = reference.strip_prefix('#').and_then(|p| self.root.pointer(p))?;
            return self.value(target, depth + 1);
        }
        if let Some(v) = obj.get("const") {
            return Some(v.clone());
        }
        if let Some(v) = obj.get("enum").and_then(Value::as_array).and_then(|a| a.first()) {
            return Some(v.clone());
        }
        for key in ["examples"] {
            if let Some(v) = obj.get(key).and_then(Value::as_array).and_then(|a| a.first()) {
                return Some(v.clone());
            }
        }
        for key in ["example", "default"] {
            if let Some(v) = obj.get(key) {
                return Some(v.clone());
            }
        }
        if let Some(all) = obj.get("allOf").and_then(Value::as_array) {
            let mut merged = obj.clone();
            merged.remove("allOf");
            for sub in all {
                merge_into(&mut merged, sub);
            }
            return self.value(&Value::Object(merged), depth + 1);
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(first) = obj.get(key).and_then(Value::as_array).and_then(|a| a.first()) {
                let mut merged = obj.clone();
                merged.remove(key);
                merge_into(&mut merged, first);
                return self.value(&Value::Object(merged), depth + 1);
            }
        }
        let kind = match obj.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(types)) => {
                types.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("null")
            }
            _ if obj.contains_key("properties") => "object",
            _ if obj.contains_key("items") => "array",
            _ => "string",
        };
        match kind {
            "object" => self.object(obj, depth),
            "array" => self.array(obj, depth),
            "string" => Some(Value::String(string(obj))),
            "integer" => Some(number(obj, true)),
            "number" => Some(number(obj, false)),
            "boolean" => Some(Value::Bool(true)),
            "null" => Some(Value::Null),
            _ => None,
        }
    }

    fn object(&self, obj: &Map<String, Value>, depth: u32) -> Option<Value> {
        let required: Vec<&str> =
            obj.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        let mut out = Map::new();
        if let Some(props) = obj.get("properties").and_then(Value::as_object) {
            for (name, sub) in props {
                if self.fill == Fill::All || required.contains(&name.as_str()) {
                    out.insert(name.clone(), self.value(sub, depth + 1)?);
                }
            }
        }
        for name in required {
            if !out.contains_key(name) {
                out.insert(name.to_string(), json!("example"));
            }
        }
        Some(Value::Object(out))
    }

    fn array(&self, obj: &Map<String, Value>, depth: u32) -> Option<Value> {
        let min = obj.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        let max = obj.get("maxItems").and_then(Value::as_u64).unwrap_or(u64::MAX);
        let count = min.max(1).min(max).min(16);
        let mut items = Vec::new();
        if let Some(prefix) = obj.get("prefixItems").and_then(Value::as_array) {
            for sub in prefix {
                items.push(self.value(sub, depth + 1)?);
            }
        }
        let item_schema = obj.get("items").cloned().unwrap_or(Value::Bool(true));
        while (items.len() as u64) < count {
            let mut v = self.value(&item_schema, depth + 1)?;
            if obj.get("uniqueItems") == Some(&Value::Bool(true)) && !items.is_empty() {
                // Distinct values are not always possible; numbers and strings get a suffix.
                v = match v {
                    Value::String(s) => Value::String(format!("{s}{}", items.len())),
                    Value::Number(n) => json!(n.as_f64().unwrap_or(0.0) + items.len() as f64),
                    other => other,
                };
            }
            items.push(v);
        }
        Some(Value::Array(items))
    }
}

/// Shallow merge of a sub-schema into `into` (properties and required are unioned).
fn merge_into(into: &mut Map<String, Value>, sub: &Value) {
    let Some(sub) = sub.as_object() else { return };
    for (k, v) in sub {
        match (k.as_str(), into.get_mut(k)) {
            ("properties", Some(Value::Object(props))) => {
                if let Some(more) = v.as_object() {
                    props.extend(more.clone());
                }
            }
            ("required", Some(Value::Array(req))) => {
                if let Some(more) = v.as_array() {
                    req.extend(more.iter().cloned());
                }
            }
            _ => {
                into.insert(k.clone(), v.clone());
            }
        }
    }
}

fn string(obj: &Map<String, Value>) -> String {
    let tomorrow = chrono::Local::now().date_naive() + chrono::Duration::days(1);
    let by_format = obj.get("format").and_then(Value::as_str).and_then(|f| match f {
        "date" => Some(tomorrow.format("%Y-%m-%d").to_string()),
        "date-time" => Some(tomorrow.format("%Y-%m-%dT12:00:00Z").to_string()),
        "time" => Some("12:00:00Z".to_string()),
        "email" | "idn-email" => Some("check-agent@example.com".to_string()),
        "uri" | "iri" | "uri-reference" | "iri-reference" | "url" => Some("https://example.com/".to_string()),
        "uuid" => Some("00000000-0000-4000-8000-000000000000".to_string()),
        "hostname" | "idn-hostname" => Some("example.com".to_string()),
        "ipv4" => Some("192.0.2.1".to_string()),
        "ipv6" => Some("2001:db8::1".to_string()),
        "duration" => Some("P1D".to_string()),
        _ => None,
    });
    if let Some(s) = by_format {
        return s;
    }
    if let Some(s) = obj.get("pattern").and_then(Value::as_str).and_then(from_pattern) {
        return s;
    }
    let min = obj.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
    let max = obj.get("maxLength").and_then(Value::as_u64).map_or(usize::MAX, |m| m as usize);
    let mut s = "example".to_string();
    while s.chars().count() < min {
        s.push('x');
    }
    s.chars().take(max).collect()
}

fn number(obj: &Map<String, Value>, integer: bool) -> Value {
    let get = |k: &str| obj.get(k).and_then(Value::as_f64);
    let step = if integer { 1.0 } else { 0.5 };
    let mut v: f64 = 1.0;
    if let Some(m) = get("minimum") {
        v = v.max(m);
    }
    if let Some(m) = get("exclusiveMinimum") {
        if v <= m {
            v = m + step;
        }
    }
    if let Some(m) = get("maximum") {
        v = v.min(m);
    }
    if let Some(m) = get("exclusiveMaximum") {
        if v >= m {
            v = m - step;
        }
    }
    if let Some(m) = get("multipleOf").filter(|m| *m > 0.0) {
        v = (v / m).ceil() * m;
    }
    if integer {
        v = v.ceil();
    }
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        json!(v as i64)
    } else {
        json!(v)
    }
}

/// The shortest string the regular expression `pattern` matches (a JSON Schema `pattern` is
/// unanchored, so a string matching the whole expression also matches it), with readable
/// characters picked from classes (`a`, `0`, `A` when allowed).
fn from_pattern(pattern: &str) -> Option<String> {
    let hir = regex_syntax::ParserBuilder::new().build().parse(pattern).ok()?;
    let mut out = String::new();
    walk(&hir, &mut out)?;
    Some(out)
}

fn walk(hir: &Hir, out: &mut String) -> Option<()> {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(lit) => out.push_str(std::str::from_utf8(&lit.0).ok()?),
        HirKind::Class(Class::Unicode(class)) => {
            let ranges: Vec<(char, char)> = class.ranges().iter().map(|r| (r.start(), r.end())).collect();
            out.push(pick(&ranges)?);
        }
        HirKind::Class(Class::Bytes(class)) => {
            let ranges: Vec<(char, char)> = class
                .ranges()
                .iter()
                .filter(|r| r.start().is_ascii())
                .map(|r| (char::from(r.start()), char::from(r.end().min(0x7f))))
                .collect();
            out.push(pick(&ranges)?);
        }
        HirKind::Repetition(rep) => {
            for _ in 0..rep.min.min(64) {
                walk(&rep.sub, out)?;
            }
        }
        HirKind::Capture(cap) => walk(&cap.sub, out)?,
        HirKind::Concat(parts) => {
            for p in parts {
                walk(p, out)?;
            }
        }
        HirKind::Alternation(alts) => walk(alts.first()?, out)?,
    }
    Some(())
}

fn pick(ranges: &[(char, char)]) -> Option<char> {
    ['a', '0', 'A', ' ']
        .into_iter()
        .find(|c| ranges.iter().any(|(lo, hi)| lo <= c && c <= hi))
        .or_else(|| ranges.iter().map(|(lo, _)| *lo).find(|c| !c.is_control()))
        .or_else(|| ranges.first().map(|(lo, _)| *lo))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gen(schema: Value, fill: Fill) -> Value {
        let g = Generator { root: &schema, fill };
        g.value(&schema, 0).unwrap()
    }

    fn assert_valid(schema: &Value, v: &Value) {
        let validator = crate::config::compile_schema(schema).unwrap();
        let errors: Vec<String> = validator.iter_errors(v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{v} fails {schema}: {errors:?}");
    }

    #[test]
    fn patterns_give_matching_strings() {
        assert_eq!(from_pattern(r"^[A-Za-z]{2}\d{3,4}$").unwrap(), "aa000");
        assert_eq!(from_pattern(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$").unwrap(), "0000-00-00T00:00");
        assert_eq!(from_pattern("^(yes|no)$").unwrap(), "yes");
        assert_eq!(from_pattern(r"^[^\s]+@[^\s]+$").unwrap(), "a@a");
    }

    #[test]
    fn generated_values_are_valid_and_fill_says_how_much() {
        let schema = json!({
            "type": "object",
            "$defs": { "money": { "type": "number", "exclusiveMinimum": 0, "multipleOf": 0.01 } },
            "properties": {
                "city": { "type": "string", "enum": ["北京", "上海"] },
                "date": { "type": "string", "format": "date" },
                "nights": { "type": "integer", "minimum": 1, "maximum": 30 },
                "amount": { "$ref": "#/$defs/money" },
                "tags": { "type": "array", "items": { "type": "string", "minLength": 12 }, "minItems": 2, "uniqueItems": true },
                "mode": { "oneOf": [{ "const": "fast" }, { "const": "slow" }] },
                "code": { "type": "string", "pattern": "^[A-Z]{3}$" },
                "note": { "type": ["null", "string"], "maxLength": 3 }
            },
            "required": ["city", "amount"]
        });
        let all = gen(schema.clone(), Fill::All);
        assert_valid(&schema, &all);
        assert_eq!(all.as_object().unwrap().len(), 8);
        let required = gen(schema.clone(), Fill::Required);
        assert_valid(&schema, &required);
        assert_eq!(required.as_object().unwrap().keys().collect::<Vec<_>>(), ["city", "amount"]);
    }
}
