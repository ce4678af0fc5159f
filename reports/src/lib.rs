//! `lockbench-reports`: what a lockbench run writes ([`model`], the versioned results file, whose JSON
//! schema [`schema`] derives; [`comparison`], the file of a whole suite) and the charts and reports
//! built from it.
//!
//! Reports know only the results model: a results file written by any version with the same
//! [`model::SCHEMA_VERSION`] can be read back with [`model::Results::from_json`] (one run) or
//! [`comparison::Comparison::read`] (either kind), and [`write::write_report`] turns it into
//! `report.html`, `report.md` and `charts/*.{png,svg}`.
//!
//! | module | job |
//! |---|---|
//! | [`model`], [`comparison`] | the results files (serde types) |
//! | [`scale`] | the `lockbench scale` file: cost of holding many locks |
//! | [`scale_pairs`] | lockbench's rows beside the libraries in a `lockbench scale --peers` run |
//! | [`mod@bench`] | the ratio benches' file (`cargo bench`) and its table |
//! | [`scale_runs`] | several `lockbench scale` runs of one command as one table of medians |
//! | [`repeats`] | the median of a figure over repeated runs |
//! | [`schema`] | the files' JSON schemas, derived from those types, and a validator |
//! | [`grid`] | rows (scenario × lease) by columns (strategies); facts of one case |
//! | [`histogram`] | the raw HdrHistograms: the codec, summaries, percentile curves, spreads |
//! | [`rate_interval`] | a case's CS/s with its 95 % interval, from its trials' own rates |
//! | [`scorecard`] | the first screen: one row per strategy and the headline lines |
//! | [`many_locks`] | the many-locks cell: a strategy's passes of holding many locks, flagged only for a repeated loss |
//! | [`rules`] | "which strategy when", derived from the numbers by stated rules |
//! | [`delta`] | changes against a baseline results file |
//! | [`contradictions`] | first-screen cells two runs contradict each other on, beyond their trials' uncertainty |
//! | [`charts`] | every chart, as SVG and PNG, with the embedded font |
//! | [`report`] | builds a report: charts, findings, changes |
//! | [`topics`] | the sections shown only with their data: Redlock and clocks, peers |
//! | [`pairing`] | the section "Models against their libraries" (each model row against its libraries) |
//! | [`agreement`] | whether a library agrees with its model under a scenario: the test, the mechanism |
//! | [`content`], [`mod@format`] | the cells and figures both formats show; the RFC 3339 timestamp |
//! | [`sections`] | the sections in report order, each format a [`sections::Layout`]; the headings, sentences and topics both show alike |
//! | [`markdown`], [`html`] | the two layouts |
//! | [`mod@csv`] | the scorecard and the verdict matrix as CSV |
//! | [`mod@write`] | writes a report to a directory |

// Functions of at most 100 lines (clippy.toml) in this crate's code; its inline tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod agreement;
pub mod bench;
pub mod charts;
pub mod comparison;
pub mod content;
pub mod contradictions;
pub mod csv;
pub mod delta;
pub mod format;
pub mod grid;
pub mod histogram;
pub mod html;
pub mod limits;
pub mod many_locks;
pub mod markdown;
pub mod model;
pub mod pairing;
pub mod rate_interval;
pub mod repeats;
pub mod report;
pub mod rules;
pub mod scale;
pub mod scale_pairs;
pub mod scale_runs;
pub mod schema;
pub mod scorecard;
pub mod sections;
pub mod topics;
pub mod write;

pub use comparison::{COMPARISON_SCHEMA, Comparison};
pub use model::{Results, SCHEMA, SCHEMA_VERSION};
pub use report::ReportInput;
pub use write::{WriteError, WrittenReport, write_report};
