//! A small JSON Schema (draft 2020-12) validator for the subset the generated schemas use: `type`,
//! `properties`, `required`, `additionalProperties`, `items`, `minItems`, `enum`, `const`, `minimum`,
//! `anyOf`, `oneOf`, boolean schemas and local `$ref`s (`#/$defs/...`); `format`, `default` and the
//! descriptive keywords are annotations it skips, as draft 2020-12 does by default. Any other keyword
//! in a schema is an error, so the schema cannot silently grow one this validator ignores. (The
//! `jsonschema` crate would pull some 25 crates into a cold build for this.)

use serde_json::{Map, Value};

const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "$defs",
    "title",
    "description",
    "format",
    "default",
];
const KNOWN: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "enum",
    "const",
    "minimum",
    "anyOf",
    "oneOf",
    "$ref",
];

/// Every violation of `schema` by `doc`, as `path: problem` lines (`$.cases[0].status: ...`); empty
/// when `doc` is valid. A keyword outside the supported subset is reported as a violation too.
pub fn validate(schema: &Value, doc: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check(schema, schema, doc, "$", &mut errors);
    errors
}

fn type_matches(name: &str, value: &Value) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        _ => false,
    }
}

/// Checks `doc` at `path` against `schema` (`root`: the whole schema, for `$ref`s), adding each
/// violation to `errors`.
fn check(root: &Value, schema: &Value, doc: &Value, path: &str, errors: &mut Vec<String>) {
    let rules = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => {
            errors.push(format!("{path}: no value is allowed here"));
            return;
        }
        Value::Object(rules) => rules,
        _ => {
            errors.push(format!("{path}: schema is not an object or a boolean"));
            return;
        }
    };
    for key in rules.keys() {
        if !KNOWN.contains(&key.as_str()) && !ANNOTATIONS.contains(&key.as_str()) {
            errors.push(format!("{path}: unsupported schema keyword {key}"));
        }
    }
    if let Some(reference) = rules.get("$ref").and_then(Value::as_str) {
        let target = reference
            .strip_prefix("#/$defs/")
            .and_then(|name| root.get("$defs")?.get(name));
        match target {
            Some(target) => check(root, target, doc, path, errors),
            None => errors.push(format!("{path}: unresolvable $ref {reference}")),
        }
    }
    if !check_type(rules, doc, path, errors) {
        return;
    }
    check_value(root, rules, doc, path, errors);
    if let Some(object) = doc.as_object() {
        check_object(root, rules, object, path, errors);
    }
    if let Some(items) = doc.as_array() {
        check_array(root, rules, items, path, errors);
    }
}

/// Checks `type`: false (with the error added) when `doc` is none of the types it names.
fn check_type(
    rules: &Map<String, Value>,
    doc: &Value,
    path: &str,
    errors: &mut Vec<String>,
) -> bool {
    let Some(types) = rules.get("type") else {
        return true;
    };
    let names: Vec<&str> = match types {
        Value::String(s) => vec![s.as_str()],
        Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    if !names.iter().any(|n| type_matches(n, doc)) {
        errors.push(format!("{path}: expected {names:?}, got {}", short(doc)));
        return false;
    }
    true
}

/// Checks the keywords on the value itself: `enum`, `const`, `minimum`, `anyOf` and `oneOf`.
fn check_value(
    root: &Value,
    rules: &Map<String, Value>,
    doc: &Value,
    path: &str,
    errors: &mut Vec<String>,
) {
    if let Some(options) = rules.get("enum").and_then(Value::as_array)
        && !options.contains(doc)
    {
        errors.push(format!("{path}: {} is not one of {options:?}", short(doc)));
    }
    if let Some(expected) = rules.get("const")
        && expected != doc
    {
        errors.push(format!("{path}: expected {expected}, got {}", short(doc)));
    }
    if let (Some(min), Some(value)) = (rules.get("minimum").and_then(Value::as_f64), doc.as_f64())
        && value < min
    {
        errors.push(format!("{path}: {value} is below the minimum {min}"));
    }
    if let Some(options) = rules.get("anyOf").and_then(Value::as_array)
        && !options.iter().any(|o| validate_inner(root, o, doc))
    {
        errors.push(format!("{path}: {} matches none of anyOf", short(doc)));
    }
    if let Some(options) = rules.get("oneOf").and_then(Value::as_array) {
        let matching = options
            .iter()
            .filter(|o| validate_inner(root, o, doc))
            .count();
        if matching != 1 {
            errors.push(format!(
                "{path}: {} matches {matching} of oneOf, not exactly one",
                short(doc)
            ));
        }
    }
}

/// Checks an object against `required`, `properties` and `additionalProperties`.
fn check_object(
    root: &Value,
    rules: &Map<String, Value>,
    object: &Map<String, Value>,
    path: &str,
    errors: &mut Vec<String>,
) {
    let properties = rules.get("properties").and_then(Value::as_object);
    for name in rules
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !object.contains_key(name) {
            errors.push(format!("{path}: missing required {name}"));
        }
    }
    for (name, value) in object {
        let child = format!("{path}.{name}");
        match properties.and_then(|p| p.get(name)) {
            Some(schema) => check(root, schema, value, &child, errors),
            None => match rules.get("additionalProperties") {
                Some(Value::Bool(false)) => {
                    errors.push(format!("{child}: not allowed by the schema"))
                }
                Some(extra) => check(root, extra, value, &child, errors),
                _ => {}
            },
        }
    }
}

/// Checks an array against `minItems` and `items`.
fn check_array(
    root: &Value,
    rules: &Map<String, Value>,
    items: &[Value],
    path: &str,
    errors: &mut Vec<String>,
) {
    if let Some(min) = rules.get("minItems").and_then(Value::as_u64)
        && (items.len() as u64) < min
    {
        errors.push(format!("{path}: fewer than {min} items"));
    }
    if let Some(schema) = rules.get("items") {
        for (i, item) in items.iter().enumerate() {
            check(root, schema, item, &format!("{path}[{i}]"), errors);
        }
    }
}

/// `value` as JSON, cut to a length that fits in one line of a message.
fn short(value: &Value) -> String {
    const MAX: usize = 60;
    let text = value.to_string();
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

fn validate_inner(root: &Value, schema: &Value, doc: &Value) -> bool {
    let mut errors = Vec::new();
    check(root, schema, doc, "$", &mut errors);
    errors.is_empty()
}
