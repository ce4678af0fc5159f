//! The JSON schemas of the files lockbench writes, derived from the model types (`schemars`), so the
//! schema and the serde types cannot drift apart.
//!
//! [`results`] describes `results.json` of `lockbench run`, [`comparison`] the `results.json` of
//! `lockbench compare`, [`scale`] the `scale.json` of `lockbench scale`. The schemas are draft 2020-12
//! and describe what this version writes, strictly:
//!
//! - every property is required, except those a reader fills in when missing (fields added after a
//!   version was first written, marked with a `default`): a file of the same
//!   [`crate::SCHEMA_VERSION`] from an older writer still validates;
//! - objects admit no other properties (maps such as `histograms` are objects with
//!   `additionalProperties`, not `properties`);
//! - string fields that take a fixed set of values list them in `enum`.
//!
//! The generated text is committed in `reports/schema/` ([`FILES`]); a golden-file test in
//! `reports/tests/schema.rs` fails when the model changes without it (regenerate with
//! `UPDATE_GOLDEN=1 cargo test -p lockbench-reports --test schema`). [`validate`] checks a document
//! against a schema.

mod validate;

use std::path::{Path, PathBuf};

use schemars::generate::SchemaSettings;
use schemars::transform::{Transform, transform_subschemas};
use schemars::{JsonSchema, Schema};
use serde_json::Value;

pub use validate::validate;

use crate::comparison::Comparison;
use crate::model::Results;
use crate::scale::ScaleResults;

/// The schema of a `lockbench run` results file ([`Results`]).
pub fn results() -> Value {
    generate::<Results>()
}

/// The schema of a `lockbench compare` results file ([`Comparison`]).
pub fn comparison() -> Value {
    generate::<Comparison>()
}

/// The schema of a `lockbench scale` results file ([`ScaleResults`]).
pub fn scale() -> Value {
    generate::<ScaleResults>()
}

/// A schema's committed file name and its generator.
pub type SchemaFile = (&'static str, fn() -> Value);

/// Each schema with the name of its committed file in `reports/schema/`.
pub const FILES: [SchemaFile; 3] = [
    ("results.schema.json", results),
    ("comparison.schema.json", comparison),
    ("scale.schema.json", scale),
];

/// A schema as committed: pretty-printed JSON ending in a newline.
pub fn to_text(schema: &Value) -> String {
    // A `Value` always serializes.
    let mut text = serde_json::to_string_pretty(schema).unwrap_or_default();
    text.push('\n');
    text
}

/// Writes every schema of [`FILES`] into `dir` (created when missing); returns the paths written.
pub fn write_all(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    FILES
        .iter()
        .map(|(name, schema)| {
            let path = dir.join(name);
            std::fs::write(&path, to_text(&schema()))?;
            Ok(path)
        })
        .collect()
}

fn generate<T: JsonSchema>() -> Value {
    SchemaSettings::draft2020_12()
        .with_transform(Strict)
        .with_transform(PlainDescriptions)
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// Makes every object schema strict: no other properties, every property required unless it has a
/// `default` (serde's `#[serde(default)]`: the reader fills it in).
#[derive(Debug, Clone, Copy)]
struct Strict;

impl Transform for Strict {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(object) = schema.as_object_mut()
            && let Some(Value::Object(properties)) = object.get("properties")
        {
            let required: Vec<Value> = properties
                .iter()
                .filter(|(_, property)| property.get("default").is_none())
                .map(|(name, _)| Value::String(name.clone()))
                .collect();
            object.insert("required".to_owned(), Value::Array(required));
            object
                .entry("additionalProperties")
                .or_insert(Value::Bool(false));
        }
        transform_subschemas(self, schema);
    }
}

/// Turns the doc comments schemars copies into descriptions into plain text: rustdoc links
/// (``[`SCHEMA_VERSION`]``) become code spans, and lines wrapped in the source are joined (paragraph
/// breaks stay).
#[derive(Debug, Clone, Copy)]
struct PlainDescriptions;

impl Transform for PlainDescriptions {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(Value::String(text)) = schema.get_mut("description") {
            *text = plain(text);
        }
        transform_subschemas(self, schema);
    }
}

fn plain(doc: &str) -> String {
    let joined = doc
        .split("\n\n")
        .map(|paragraph| {
            paragraph
                .split('\n')
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n\n");
    let mut out = String::with_capacity(joined.len());
    let mut rest = joined.as_str();
    while let Some(start) = rest.find("[`") {
        let Some(len) = rest[start + 2..].find("`]") else {
            break;
        };
        out.push_str(&rest[..start]);
        out.push('`');
        out.push_str(&rest[start + 2..start + 2 + len]);
        out.push('`');
        rest = &rest[start + 2 + len + 2..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_read_as_plain_text() {
        assert_eq!(
            plain("[`SCHEMA_VERSION`] of the\nwriter.\n\nSee [`Results`]."),
            "`SCHEMA_VERSION` of the writer.\n\nSee `Results`."
        );
        assert_eq!(plain("a [`b"), "a [`b");
    }
}
