//! The tables the documentation quotes from committed results files stay what the report renderer makes
//! of those files. A generated block in a Markdown file reads
//!
//! ```text
//! <!-- generated from docs/results/X.json.gz, section models, by LOCKBENCH_UPDATE_DOCS=1 cargo test -p lockbench --test doc_tables -->
//! …the section, as `lockbench report` writes it into report.md…
//! <!-- end generated -->
//! ```
//!
//! (`from A.json.gz and B-scale.json` adds a `lockbench scale` file, as `lockbench report --scale`
//! does). Two sections are not the report's: `bench` renders a `cargo bench` results file
//! ([`lockbench_reports::bench`], written by `scripts/bench-results.sh`), and `scale-runs` renders
//! several `lockbench scale` files of one command (`from A.json and B.json and C.json`) as one table of
//! medians ([`lockbench_reports::scale_runs`]); `scale-pairs` the pairs of several `lockbench scale
//! --peers` files ([`lockbench_reports::scale_pairs`]). The test fails when a block differs from a fresh
//! rendering; with `LOCKBENCH_UPDATE_DOCS=1` it writes every block anew instead. Every results file under `docs/results/` must be quoted somewhere
//! and described in `docs/results/README.md` (its command, date, commit and machine).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use lockbench::commands::scale::RAW_SENDER;
use lockbench_reports::bench::BenchResults;
use lockbench_reports::sections::Part;
use lockbench_reports::{
    Comparison, ReportInput, markdown, report, scale::ScaleResults, scale_pairs, scale_runs,
};

const START: &str = "<!-- generated from ";
const END: &str = "<!-- end generated -->";
/// The section of a `cargo bench` results file.
const BENCH: &str = "bench";
/// The section of several `lockbench scale` runs of one command.
const SCALE_RUNS: &str = "scale-runs";
/// The pairs of several `lockbench scale --peers` runs of one command.
const SCALE_PAIRS: &str = "scale-pairs";

/// The repository's root (this crate lives in `bench/`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bench/ has a parent")
        .to_path_buf()
}

/// Every Markdown file under `dir`, build output and hidden folders left out.
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && !matches!(name.as_str(), "target" | "node_modules") {
                markdown_files(&path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// What a block's opening line asks for.
#[derive(Debug, PartialEq)]
struct Source {
    /// The files it is made from, relative to the repository's root: a results file and perhaps a
    /// `lockbench scale` file beside it (a report section), a bench file, or scale files.
    files: Vec<String>,
    /// The section's name ([`Part::name`], [`BENCH`] or [`SCALE_RUNS`]).
    section: String,
}

/// One generated block of a document: where its body lies and what it was made from.
#[derive(Debug)]
struct Block {
    source: Source,
    /// Byte range of the body: after the opening line, up to the closing marker.
    body: std::ops::Range<usize>,
}

/// Parses an opening line's text after [`START`]: `FILE[ and FILE…], section NAME, by …-->`.
fn parse_source(rest: &str) -> Result<Source, String> {
    let (files, rest) = rest
        .split_once(", section ")
        .ok_or("no \", section NAME\" after the file")?;
    let section = rest
        .split([',', ' '])
        .next()
        .filter(|s| !s.is_empty())
        .ok_or("no section name")?;
    Ok(Source {
        files: files.split(" and ").map(|f| f.trim().to_owned()).collect(),
        section: section.to_owned(),
    })
}

/// Every generated block of `text` (a marker opens its line); a malformed one is an error naming it.
fn blocks(text: &str) -> Result<Vec<Block>, String> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(START).map(|i| from + i) {
        // Only a marker that opens its line; one quoted in running text is prose.
        if at > 0 && !text[..at].ends_with('\n') {
            from = at + START.len();
            continue;
        }
        let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i + 1);
        let source = parse_source(&text[at + START.len()..line_end])
            .map_err(|e| format!("{}: {e}", text[at..line_end].trim()))?;
        let end = text[line_end..]
            .find(END)
            .map(|i| line_end + i)
            .ok_or_else(|| format!("{}: no {END}", text[at..line_end].trim()))?;
        found.push(Block {
            source,
            body: line_end..end,
        });
        from = end + END.len();
    }
    Ok(found)
}

/// A results file's text (`name` relative to the repository's root): gunzipped when it ends in `.gz`.
fn read_text(name: &str) -> Result<String, String> {
    lockbench::base::output::read_text(&root().join(name)).map_err(|e| format!("{name}: {e}"))
}

/// The results files read so far, by path.
#[derive(Default)]
struct Sources {
    results: BTreeMap<String, Comparison>,
    scale: BTreeMap<String, ScaleResults>,
}

impl Sources {
    /// The run of the scale file `name`.
    fn scale(&mut self, name: &str) -> Result<&ScaleResults, String> {
        if !self.scale.contains_key(name) {
            let text = read_text(name)?;
            let run = ScaleResults::from_json(&text).map_err(|e| format!("{name}: {e}"))?;
            self.scale.insert(name.to_owned(), run);
        }
        Ok(&self.scale[name])
    }

    /// The body a block should have: the section rendered afresh, between blank lines.
    fn render(&mut self, source: &Source) -> Result<String, String> {
        let text = match source.section.as_str() {
            BENCH => {
                let [file] = source.files.as_slice() else {
                    return Err(format!("section {BENCH} is made from one file"));
                };
                let results = BenchResults::from_json(&read_text(file)?)
                    .map_err(|e| format!("{file}: {e}"))?;
                lockbench_reports::bench::markdown_table(&results)
            }
            SCALE_RUNS => {
                let mut runs = Vec::new();
                for file in &source.files {
                    runs.push(self.scale(file)?.clone());
                }
                scale_runs::markdown_table(&runs, Some(RAW_SENDER))
            }
            SCALE_PAIRS => {
                let mut runs = Vec::new();
                for file in &source.files {
                    runs.push(self.scale(file)?.clone());
                }
                scale_pairs::render_markdown(&runs)
            }
            name => self.report_section(name, &source.files)?,
        };
        Ok(format!("\n{}\n\n", text.trim_end()))
    }

    /// Section `name` of the report of `files`: a results file, then perhaps a scale file.
    fn report_section(&mut self, name: &str, files: &[String]) -> Result<String, String> {
        let part = Part::named(name).ok_or_else(|| {
            let mut names: Vec<_> = Part::ALL.iter().map(|p| p.name()).collect();
            names.extend([BENCH, SCALE_RUNS, SCALE_PAIRS]);
            format!("no section '{name}' (sections: {names:?})")
        })?;
        let (results, scale) = match files {
            [results] => (results, None),
            [results, scale] => (results, Some(scale)),
            _ => {
                return Err(format!(
                    "section {name} is made from a results file and at most one scale file"
                ));
            }
        };
        if !self.results.contains_key(results) {
            let text = read_text(results)?;
            let comparison = Comparison::read(&text).map_err(|e| format!("{results}: {e}"))?;
            self.results.insert(results.clone(), comparison);
        }
        let cost = match scale {
            Some(scale) => self.scale(scale)?.cost_series(),
            None => Vec::new(),
        };
        let report = report::without_charts(ReportInput {
            current: &self.results[results],
            baseline: None,
            cost: &cost,
        });
        markdown::section(&report, part)
            .ok_or_else(|| format!("{results} has no data for section {}", part.name()))
    }
}

#[test]
fn generated_tables_match_their_results_files() {
    let update = std::env::var_os("LOCKBENCH_UPDATE_DOCS").is_some();
    let mut docs = Vec::new();
    markdown_files(&root(), &mut docs);
    let mut sources = Sources::default();
    let mut quoted = Vec::new();
    let mut stale = Vec::new();
    let mut broken = Vec::new();
    for path in &docs {
        let text = fs::read_to_string(path).unwrap_or_default();
        let found = blocks(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if found.is_empty() {
            continue;
        }
        let mut updated = String::new();
        let mut copied = 0;
        for block in &found {
            quoted.extend(block.source.files.iter().cloned());
            // A block that cannot be rendered keeps its text (the others are still written anew).
            let fresh = match sources.render(&block.source) {
                Ok(fresh) => fresh,
                Err(e) => {
                    broken.push(format!("{}: {e}", path.display()));
                    text[block.body.clone()].to_owned()
                }
            };
            if text[block.body.clone()] != fresh {
                stale.push(format!(
                    "{}: section {} of {}",
                    path.display(),
                    block.source.section,
                    block.source.files.join(" and ")
                ));
            }
            updated.push_str(&text[copied..block.body.start]);
            updated.push_str(&fresh);
            copied = block.body.end;
        }
        updated.push_str(&text[copied..]);
        if update && updated != text {
            fs::write(path, updated).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
    }
    assert!(
        broken.is_empty(),
        "generated tables that cannot be rendered: {broken:#?}"
    );
    assert!(
        quoted.len() >= 4,
        "the findings quote generated tables ({} blocks found)",
        quoted.len()
    );
    assert!(
        update || stale.is_empty(),
        "generated tables that no longer match their results files (LOCKBENCH_UPDATE_DOCS=1 cargo test -p lockbench --test doc_tables writes them anew): {stale:#?}"
    );
    let listing = fs::read_to_string(root().join("docs/results/README.md"))
        .expect("docs/results/README.md describes the results files");
    for entry in fs::read_dir(root().join("docs/results")).expect("docs/results exists") {
        let name = entry.expect("a readable entry").file_name();
        let name = name.to_string_lossy();
        if name == "README.md" {
            continue;
        }
        let path = format!("docs/results/{name}");
        assert!(
            quoted.contains(&path),
            "{path} is quoted by no generated table"
        );
        assert!(
            listing.contains(&*name),
            "{path} is not described in docs/results/README.md"
        );
    }
}

#[test]
fn blocks_are_found_and_a_changed_one_is_told_apart() {
    let text = "intro\n<!-- generated from docs/results/a.json.gz and docs/results/a-scale.json, section cost, by X -->\n\n| a |\n\n<!-- end generated -->\nmid\n<!-- generated from b.json, section models, by X -->\nbody\n<!-- end generated -->\n";
    let found = blocks(text).expect("well formed");
    assert_eq!(found.len(), 2);
    assert_eq!(
        found[0].source,
        Source {
            files: vec![
                "docs/results/a.json.gz".into(),
                "docs/results/a-scale.json".into()
            ],
            section: "cost".into(),
        }
    );
    assert_eq!(&text[found[0].body.clone()], "\n| a |\n\n");
    assert_eq!(found[1].source.section, "models");
    assert_eq!(found[1].source.files, ["b.json"]);
    assert_eq!(&text[found[1].body.clone()], "body\n");
    assert!(blocks("<!-- generated from x.json, section models -->\nno end").is_err());
    assert!(blocks("<!-- generated from x.json -->\n<!-- end generated -->").is_err());
    assert!(
        blocks("prose quoting `<!-- generated from FILE` markers")
            .expect("prose")
            .is_empty()
    );
    assert!(Part::named("models").is_some() && Part::named("nonesuch").is_none());
}

/// A quoted section is the report's own: each part, rendered alone, appears word for word in the whole
/// Markdown report of the same results file.
#[test]
fn a_section_alone_is_the_whole_reports_section() {
    let results = "docs/results/libraries.json.gz";
    let comparison = Comparison::read(&read_text(results).expect("committed")).expect("readable");
    let report = report::without_charts(ReportInput {
        current: &comparison,
        baseline: None,
        cost: &[],
    });
    let whole = markdown::render(&report, "charts");
    let mut rendered = 0;
    for part in Part::ALL {
        if let Some(text) = markdown::section(&report, part) {
            rendered += 1;
            assert!(
                whole.contains(&text),
                "section {} of {results} differs from the whole report's",
                part.name()
            );
        }
    }
    assert_eq!(
        rendered,
        Part::ALL.len(),
        "every section has data in this run"
    );
}
