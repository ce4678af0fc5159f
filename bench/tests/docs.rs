//! The documentation holds together, checked without servers or network:
//!
//! - every relative Markdown link `[text](path)` or `[text](path#anchor)` points at a file that exists,
//!   and every `#anchor` on a Markdown file (or on the page itself) names one of its headings, slugged
//!   as GitHub slugs them;
//! - every `docs/design.md §N` (or `design.md §Name`) cited in code or docs names a section of
//!   docs/design.md, and every `docs/….md` file named in code or docs exists;
//! - no section of the user docs starts mid-sentence (the first line after a heading does not start with
//!   a lowercase letter or closing punctuation);
//! - the user docs cite no issue numbers and no commit hashes except where a line cites a committed
//!   results file (the commit the file was produced at): history belongs in git;
//! - no source file in a crate's `src/` is over [`MOST_SOURCE_LINES`] lines before its inline tests
//!   (functions over 100 lines are clippy's `too_many_lines`, set in `clippy.toml`), and every crate
//!   root in a `src/` enables that lint for its code.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The repository's root (this crate lives in `bench/`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bench/ has a parent")
        .to_path_buf()
}

/// Every file below `dir` whose name ends in one of `endings`, skipping build output, installed
/// packages, hidden folders and the `results/` folders runs write (but not the committed `docs/results/`).
fn files(dir: &Path, endings: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if path.is_dir() {
            let run_output = name == "results" && !path.ends_with("docs/results");
            let skipped = name.starts_with('.')
                || run_output
                || matches!(
                    name.as_str(),
                    "target" | "node_modules" | "build" | "vendor"
                );
            if !skipped {
                files(&path, endings, out);
            }
        } else if endings.iter().any(|e| name.ends_with(e)) {
            out.push(path);
        }
    }
}

/// Every Markdown file of the repository.
fn markdown_files() -> Vec<PathBuf> {
    let mut docs = Vec::new();
    files(&root(), &[".md"], &mut docs);
    assert!(docs.len() >= 5, "Markdown files found: {docs:?}");
    docs
}

/// A path as the failure messages show it: relative to the repository's root.
fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", shown(path)))
}

/// The lines of a Markdown text outside fenced code blocks, with their 1-based line numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut lines = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            lines.push((i + 1, line));
        }
    }
    lines
}

/// A line with its inline code spans (`` `…` ``) removed.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    for (i, part) in line.split('`').enumerate() {
        if i % 2 == 0 {
            out.push_str(part);
        }
    }
    out
}

/// The targets of `[text](target)` links (and images) on one line, code spans left out.
fn line_link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut targets = Vec::new();
    for (at, _) in line.match_indices("](") {
        let rest = &line[at + 2..];
        if let Some(end) = rest.find(')') {
            let target = rest[..end].trim();
            // `[text](path "title")` and `[text](<path>)`.
            let target = target.split(' ').next().unwrap_or("");
            let target = target.trim_start_matches('<').trim_end_matches('>');
            targets.push(target.to_owned());
        }
    }
    targets
}

/// The targets of `[text](target)` links in Markdown, fenced code left out.
fn link_targets(text: &str) -> Vec<String> {
    prose_lines(text)
        .into_iter()
        .flat_map(|(_, line)| line_link_targets(line))
        .collect()
}

/// The ATX headings (`## Title`) of a Markdown text, outside fenced code: line number and title.
fn headings(text: &str) -> Vec<(usize, String)> {
    prose_lines(text)
        .into_iter()
        .filter_map(|(n, line)| {
            let hashes = line.chars().take_while(|&c| c == '#').count();
            let title = line.get(hashes..)?;
            if (1..=6).contains(&hashes) && title.starts_with(' ') {
                Some((n, title.trim().trim_end_matches('#').trim().to_owned()))
            } else {
                None
            }
        })
        .collect()
}

/// A heading's text as GitHub shows it: links read as their text.
fn heading_text(title: &str) -> String {
    let mut out = String::new();
    let mut rest = title;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find("](") {
            Some(close) if after[close + 2..].contains(')') => {
                out.push_str(&after[..close]);
                let tail = &after[close + 2..];
                rest = &tail[tail.find(')').map_or(tail.len(), |e| e + 1)..];
            }
            _ => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// GitHub's anchor for a heading: lowercase, punctuation other than `-` and `_` dropped, spaces to `-`.
fn slug(title: &str) -> String {
    heading_text(title)
        .to_lowercase()
        .chars()
        .filter(|&c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor a Markdown text's headings give, a repeated heading's later ones suffixed `-1`, `-2`, ….
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (_, title) in headings(text) {
        let base = slug(&title);
        let count = seen.entry(base.clone()).or_insert(0);
        out.push(if *count == 0 {
            base.clone()
        } else {
            format!("{base}-{count}")
        });
        *count += 1;
    }
    out
}

#[test]
fn every_relative_markdown_link_resolves() {
    let mut broken = Vec::new();
    let mut anchor_cache: HashMap<PathBuf, Vec<String>> = HashMap::new();
    for path in markdown_files() {
        let text = read(&path);
        for (n, line) in prose_lines(&text) {
            for target in line_link_targets(line) {
                let external = target.contains("://") || target.starts_with("mailto:");
                if target.is_empty() || external {
                    continue;
                }
                let (file, anchor) = match target.split_once('#') {
                    Some((file, anchor)) => (file, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let resolved = if file.is_empty() {
                    path.clone()
                } else {
                    path.parent().expect("a file has a folder").join(file)
                };
                if !resolved.exists() {
                    broken.push(format!("{}:{n}: {target}: no such file", shown(&path)));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if resolved.extension().is_none_or(|e| e != "md") {
                    continue;
                }
                let key = resolved.canonicalize().unwrap_or_else(|_| resolved.clone());
                let known = anchor_cache
                    .entry(key)
                    .or_insert_with(|| anchors(&read(&resolved)));
                if !known.iter().any(|a| a == anchor) {
                    broken.push(format!(
                        "{}:{n}: {target}: no heading with the anchor #{anchor}",
                        shown(&path)
                    ));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to files or headings that do not exist:\n{}",
        broken.join("\n")
    );
}

/// The `## N. Title` sections of docs/design.md, and the titles of all its headings.
fn design_headings() -> (Vec<u32>, Vec<String>) {
    let text = read(&root().join("docs/design.md"));
    let titles: Vec<String> = headings(&text).into_iter().map(|(_, t)| t).collect();
    let numbers = titles
        .iter()
        .filter_map(|t| t.split('.').next()?.trim().parse().ok())
        .collect();
    (numbers, titles)
}

/// What a design citation names: a numbered section, or a heading by (the start of) its title.
#[derive(Debug, PartialEq)]
enum Cited {
    Number(u32),
    Title(String),
}

/// The design sections a text cites after `marker` (`§3`, `§5, §8`, `§3 batched renewal, §5 …`,
/// `§Verdicts and trials`), with their line numbers.
fn cited_sections(text: &str, marker: &str) -> Vec<(usize, Cited)> {
    let mut cited = Vec::new();
    for (at, _) in text.match_indices(marker) {
        let line = text[..at].matches('\n').count() + 1;
        let rest = text[at + marker.len()..]
            .trim_start_matches(')')
            .trim_start();
        if !rest.starts_with('§') {
            continue;
        }
        // The citation runs to the end of its clause: `design.md §3 batched renewal, §5 cost, §8 targets)`.
        let clause = rest.split([')', '\n', ';', ':', '`']).next().unwrap_or("");
        for part in clause.split('§').skip(1) {
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(n) = digits.parse() {
                cited.push((line, Cited::Number(n)));
            } else {
                let title: String = part
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
                    .collect();
                if !title.trim().is_empty() {
                    cited.push((line, Cited::Title(title.trim().to_owned())));
                }
            }
        }
    }
    cited
}

#[test]
fn every_cited_design_section_exists() {
    let (numbers, titles) = design_headings();
    assert!(
        numbers.len() >= 8,
        "docs/design.md has numbered sections: {numbers:?}"
    );
    let mut sources = Vec::new();
    files(
        &root(),
        &[".rs", ".md", ".toml", ".sh", ".java", ".go", ".py", ".js"],
        &mut sources,
    );
    let mut checked = 0;
    let mut missing = Vec::new();
    // This file's own examples are not citations.
    for path in sources
        .iter()
        .filter(|p| !p.ends_with("bench/tests/docs.rs"))
    {
        let text = fs::read_to_string(path).unwrap_or_default();
        for marker in ["DESIGN ", "DESIGN.md ", "design.md ", "design.md)"] {
            for (n, cited) in cited_sections(&text, marker) {
                checked += 1;
                let exists = match &cited {
                    Cited::Number(number) => numbers.contains(number),
                    Cited::Title(title) => titles
                        .iter()
                        .any(|t| t.to_lowercase().contains(&title.to_lowercase())),
                };
                if !exists {
                    missing.push(format!("{}:{n}: design.md §{cited:?}", shown(path)));
                }
            }
        }
    }
    assert!(
        checked > 10,
        "the code cites the design ({checked} citations found)"
    );
    assert!(
        missing.is_empty(),
        "citations of sections docs/design.md lacks:\n{}",
        missing.join("\n")
    );
}

/// The `docs/….md` paths a text names (the path runs over letters, digits, `-`, `_`, `.` and `/`).
fn cited_docs(text: &str) -> Vec<String> {
    let mut cited = Vec::new();
    for (at, _) in text.match_indices("docs/") {
        let path: String = text[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
            .collect();
        let path = path.trim_end_matches('.');
        if path.ends_with(".md") {
            cited.push(path.to_owned());
        }
    }
    cited
}

#[test]
fn every_cited_docs_file_exists() {
    let mut sources = Vec::new();
    files(
        &root(),
        &[".rs", ".md", ".toml", ".sh", ".java", ".go", ".py", ".js"],
        &mut sources,
    );
    let mut checked = 0;
    let mut missing = Vec::new();
    for path in sources
        .iter()
        .filter(|p| !p.ends_with("bench/tests/docs.rs"))
    {
        let text = fs::read_to_string(path).unwrap_or_default();
        for cited in cited_docs(&text) {
            checked += 1;
            if !root().join(&cited).is_file() {
                missing.push(format!("{}: {cited}", shown(path)));
            }
        }
    }
    assert!(checked > 10, "the code names docs files ({checked} found)");
    assert!(
        missing.is_empty(),
        "docs files named that do not exist:\n{}",
        missing.join("\n")
    );
}

/// README.md and every Markdown file under docs/.
fn readme_and_docs() -> Vec<PathBuf> {
    markdown_files()
        .into_iter()
        .filter(|p| p == &root().join("README.md") || p.starts_with(root().join("docs")))
        .collect()
}

/// Whether the first line of a section reads as the middle of a sentence.
fn starts_mid_sentence(line: &str) -> bool {
    if line.starts_with("    ") || line.starts_with('\t') {
        return false; // an indented code block
    }
    match line.trim_start().chars().next() {
        Some(c) => c.is_lowercase() || matches!(c, ')' | ']' | '}' | ',' | '.' | ';' | ':'),
        None => false,
    }
}

/// The first non-blank line after each heading that is not itself a heading or an HTML comment.
fn section_openings(text: &str) -> Vec<(usize, &str)> {
    let lines = prose_lines(text);
    let mut openings = Vec::new();
    let mut after_heading = false;
    for (n, line) in lines {
        let trimmed = line.trim();
        if headings(line).len() == 1 {
            after_heading = true;
        } else if after_heading && !trimmed.is_empty() && !trimmed.starts_with("<!--") {
            openings.push((n, line));
            after_heading = false;
        }
    }
    openings
}

#[test]
fn no_section_starts_mid_sentence() {
    let mut broken = Vec::new();
    for path in readme_and_docs() {
        let text = read(&path);
        for (n, line) in section_openings(&text) {
            if starts_mid_sentence(line) {
                broken.push(format!("{}:{n}: {line}", shown(&path)));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "sections that start mid-sentence:\n{}",
        broken.join("\n")
    );
}

/// The user docs: README.md, docs/**/*.md but the committed results' notes, adapters/*.md.
fn user_docs() -> Vec<PathBuf> {
    let root = root();
    markdown_files()
        .into_iter()
        .filter(|p| {
            p == &root.join("README.md")
                || (p.starts_with(root.join("docs")) && !p.starts_with(root.join("docs/results")))
                || p.parent() == Some(root.join("adapters").as_path())
        })
        .collect()
}

/// An issue reference on a line: `issue 40`, `Issues 12` (any case).
fn issue_reference(line: &str) -> Option<String> {
    let lower = line.to_lowercase();
    for word in ["issue ", "issues "] {
        for (at, _) in lower.match_indices(word) {
            let before = lower[..at].chars().next_back();
            if before.is_some_and(char::is_alphanumeric) {
                continue;
            }
            let rest = &lower[at + word.len()..];
            if rest.starts_with(|c: char| c.is_ascii_digit()) {
                let number: String = rest.chars().take_while(char::is_ascii_digit).collect();
                return Some(format!("{word}{number}"));
            }
        }
    }
    None
}

/// A word of 7 to 40 hex digits with both a digit and a letter in it: a commit hash, by its look.
fn commit_hash(line: &str) -> Option<&str> {
    line.split(|c: char| !c.is_ascii_alphanumeric())
        .find(|word| {
            (7..=40).contains(&word.len())
                && word
                    .chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
                && word.chars().any(|c| c.is_ascii_digit())
                && word.chars().any(|c| c.is_ascii_lowercase())
        })
}

/// Whether a line cites a committed results file (and so may name the commit it was produced at).
fn cites_results(line: &str) -> bool {
    line.contains("results") || line.contains(".json")
}

/// The lines of a user doc the history check reads: prose outside the tables the renderer generates
/// from results files (`<!-- generated from … -->` … `<!-- end generated -->`; a script's SHA1 there is
/// not a commit).
fn history_checked_lines(text: &str) -> Vec<(usize, &str)> {
    let mut generated = false;
    let mut out = Vec::new();
    for (n, line) in prose_lines(text) {
        if line.starts_with("<!-- generated from") {
            generated = true;
        } else if line.starts_with("<!-- end generated") {
            generated = false;
        } else if !generated {
            out.push((n, line));
        }
    }
    out
}

#[test]
fn user_docs_cite_no_issues_and_no_commits_but_results() {
    let mut found = Vec::new();
    for path in user_docs() {
        // The example report is a report as lockbench writes it, not prose (docs/example/README.md).
        if path.ends_with("docs/example/report.md") {
            continue;
        }
        let text = read(&path);
        for (n, line) in history_checked_lines(&text) {
            if let Some(issue) = issue_reference(line) {
                found.push(format!("{}:{n}: issue reference `{issue}`", shown(&path)));
            }
            if let Some(hash) = commit_hash(line)
                && !cites_results(line)
            {
                found.push(format!(
                    "{}:{n}: commit `{hash}` on a line that cites no results file",
                    shown(&path)
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "history in the user docs (say what is, with its command and results file; history belongs in git):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_checks_find_what_they_look_for() {
    let numbers = |v: Vec<(usize, Cited)>| -> Vec<u32> {
        v.into_iter()
            .filter_map(|(_, c)| match c {
                Cited::Number(n) => Some(n),
                Cited::Title(_) => None,
            })
            .collect()
    };
    assert_eq!(
        numbers(cited_sections(
            "threads (DESIGN §3 batched renewal, §5 client/server cost, §8 targets).",
            "DESIGN "
        )),
        vec![3, 5, 8]
    );
    assert_eq!(
        numbers(cited_sections(
            "see docs/design.md §12; and §4 later",
            "design.md "
        )),
        vec![12]
    );
    assert_eq!(
        numbers(cited_sections(
            "in [design.md](design.md) §7.",
            "design.md)"
        )),
        vec![7]
    );
    assert_eq!(
        cited_sections("design.md §Verdicts and trials, x", "design.md "),
        vec![(1, Cited::Title("Verdicts and trials".to_owned()))]
    );
    assert_eq!(
        cited_docs("see docs/findings/redisson.md. And ../docs/x.md#a, docs/results/a.json.gz"),
        vec!["docs/findings/redisson.md", "docs/x.md"]
    );
    assert_eq!(
        link_targets(
            "[a](docs/x.md) and [b](https://e.invalid) `[e](no.md)`\n```\n[c](no.md)\n```\n[d](y.md#top) ![i](p.png \"t\")"
        ),
        vec!["docs/x.md", "https://e.invalid", "y.md#top", "p.png"]
    );
    assert_eq!(
        slug("5. The driver: `run`, [links](x.md) & more_stuff"),
        "5-the-driver-run-links--more_stuff"
    );
    assert_eq!(
        anchors("# A\n## B\n```\n# not\n```\n## B\n"),
        vec!["a", "b", "b-1"]
    );
    assert!(starts_mid_sentence("to back) and runs the suite"));
    assert!(starts_mid_sentence(", and more"));
    assert!(!starts_mid_sentence("`lockbench` runs"));
    assert!(!starts_mid_sentence("    cargo run"));
    assert!(!starts_mid_sentence("- a list"));
    assert_eq!(
        section_openings("# T\n\n<!-- x -->\nthe rest\n## U\nFine.\n"),
        vec![(4, "the rest"), (6, "Fine.")]
    );
    assert_eq!(
        issue_reference("as in Issue 40, finding 5"),
        Some("issue 40".into())
    );
    assert_eq!(issue_reference("no issue here, 40 times"), None);
    assert_eq!(issue_reference("tissue 4"), None);
    assert_eq!(commit_hash("at 86b4b64 (2026-11-27)"), Some("86b4b64"));
    assert_eq!(commit_hash("t 123456789 and defaced"), None);
    assert!(cites_results(
        "commit 3fbc7aa, its results file docs/results/x.json.gz"
    ));
    assert_eq!(
        history_checked_lines("a\n<!-- generated from f -->\n0b0feb4\n<!-- end generated -->\nb"),
        vec![(1, "a"), (5, "b")]
    );
}

/// The most lines a source file in a crate's `src/` may have before its inline tests.
const MOST_SOURCE_LINES: usize = 700;

/// Every `.rs` file under the `src/` of each crate of the workspace.
fn crate_sources() -> Vec<PathBuf> {
    let mut sources = Vec::new();
    let mut crates: Vec<PathBuf> = fs::read_dir(root())
        .expect("the repository's root")
        .flatten()
        .map(|e| e.path())
        .filter(|dir| dir.join("Cargo.toml").is_file() && dir.join("src").is_dir())
        .collect();
    crates.sort();
    for dir in crates {
        files(&dir.join("src"), &[".rs"], &mut sources);
    }
    assert!(sources.len() >= 50, "source files found: {sources:?}");
    sources
}

/// The lines of a source text before its inline tests (the first `#[cfg(test)]` or
/// `#[cfg(all(test, …))]` at the start of a line).
fn lines_before_tests(text: &str) -> usize {
    text.lines()
        .take_while(|line| {
            !(line.starts_with("#[cfg(test)]") || line.starts_with("#[cfg(all(test"))
        })
        .count()
}

#[test]
fn no_source_file_is_over_the_line_limit() {
    let mut long = Vec::new();
    for path in crate_sources() {
        let lines = lines_before_tests(&read(&path));
        if lines > MOST_SOURCE_LINES {
            long.push(format!("{}: {lines} lines before its tests", shown(&path)));
        }
    }
    assert!(
        long.is_empty(),
        "source files over {MOST_SOURCE_LINES} lines (split them along their jobs):\n{}",
        long.join("\n")
    );
    assert_eq!(lines_before_tests("a\nb\n#[cfg(test)]\nmod tests {}\n"), 2);
    assert_eq!(
        lines_before_tests("a\n#[cfg(all(test, feature = \"x\"))]\n"),
        1
    );
}

/// The attribute that enables clippy's `too_many_lines` (threshold in `clippy.toml`) for a crate's own
/// code but not its inline tests (integration tests and benches are crates of their own, without it).
const LONG_FUNCTIONS_LINT: &str = "#![cfg_attr(not(test), warn(clippy::too_many_lines))]";

#[test]
fn every_crate_root_enables_the_function_length_lint() {
    let roots: Vec<PathBuf> = crate_sources()
        .into_iter()
        .filter(|path| {
            let in_src = path.parent().is_some_and(|dir| dir.ends_with("src"));
            let in_bin = path.parent().is_some_and(|dir| dir.ends_with("src/bin"));
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            (in_src && matches!(name, "lib.rs" | "main.rs")) || in_bin
        })
        .collect();
    assert!(roots.len() >= 5, "crate roots found: {roots:?}");
    let without: Vec<String> = roots
        .iter()
        .filter(|path| !read(path).lines().any(|line| line == LONG_FUNCTIONS_LINT))
        .map(|path| shown(path))
        .collect();
    assert!(
        without.is_empty(),
        "crate roots without `{LONG_FUNCTIONS_LINT}`: {without:?}"
    );
}
