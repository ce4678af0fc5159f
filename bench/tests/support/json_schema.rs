//! A small JSON Schema (draft 2020-12) validator for the subset `results.schema.json` uses: `type`,
//! `properties`, `required`, `additionalProperties`, `items`, `minItems`, `enum`, `const`, `minimum`,
//! `anyOf` and local `$ref`s (`#/$defs/...`). Anything else in a schema is an error, so the schema
//! cannot silently grow a keyword this validator ignores. (The `jsonschema` crate would pull some 25
//! crates into a cold build for this.)

use serde_json::Value;

const IGNORED: &[&str] = &["$schema", "$id", "$defs", "title", "description"];
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
    "$ref",
];

/// Every violation of `schema` by `doc`, as `path: problem` lines (empty: valid).
pub(crate) fn validate(schema: &Value, doc: &Value) -> Vec<String> {
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

fn check(root: &Value, schema: &Value, doc: &Value, path: &str, errors: &mut Vec<String>) {
    let Some(rules) = schema.as_object() else {
        errors.push(format!("{path}: schema is not an object"));
        return;
    };
    for key in rules.keys() {
        if !KNOWN.contains(&key.as_str()) && !IGNORED.contains(&key.as_str()) {
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
    if let Some(types) = rules.get("type") {
        let names: Vec<&str> = match types {
            Value::String(s) => vec![s.as_str()],
            Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        if !names.iter().any(|n| type_matches(n, doc)) {
            errors.push(format!("{path}: expected {names:?}, got {doc}"));
            return;
        }
    }
    if let Some(options) = rules.get("enum").and_then(Value::as_array)
        && !options.contains(doc)
    {
        errors.push(format!("{path}: {doc} is not one of {options:?}"));
    }
    if let Some(expected) = rules.get("const")
        && expected != doc
    {
        errors.push(format!("{path}: expected {expected}, got {doc}"));
    }
    if let (Some(min), Some(value)) = (rules.get("minimum").and_then(Value::as_f64), doc.as_f64())
        && value < min
    {
        errors.push(format!("{path}: {value} is below the minimum {min}"));
    }
    if let Some(options) = rules.get("anyOf").and_then(Value::as_array)
        && !options.iter().any(|o| validate_inner(root, o, doc))
    {
        errors.push(format!("{path}: matches none of anyOf"));
    }
    if let Some(object) = doc.as_object() {
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
                    Some(extra @ Value::Object(_)) => check(root, extra, value, &child, errors),
                    _ => {}
                },
            }
        }
    }
    if let Some(items) = doc.as_array() {
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
}

fn validate_inner(root: &Value, schema: &Value, doc: &Value) -> bool {
    let mut errors = Vec::new();
    check(root, schema, doc, "$", &mut errors);
    errors.is_empty()
}
