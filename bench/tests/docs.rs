//! The documentation's references hold: every `docs/design.md §N` (or older `DESIGN §N`) cited in code
//! or docs names a section that exists, every `docs/….md` file named in code or docs exists, and every
//! relative link in a Markdown file points at a file that exists.

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
/// packages and hidden folders.
fn files(dir: &Path, endings: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            let skipped = name.starts_with('.')
                || matches!(
                    name.as_str(),
                    "target" | "node_modules" | "build" | "results"
                );
            if !skipped {
                files(&path, endings, out);
            }
        } else if endings.iter().any(|e| name.ends_with(e)) {
            out.push(path);
        }
    }
}

/// The section numbers `docs/design.md` has (`## N. …`).
fn design_sections() -> Vec<u32> {
    let text = fs::read_to_string(root().join("docs/design.md")).expect("docs/design.md exists");
    text.lines()
        .filter_map(|l| l.strip_prefix("## "))
        .filter_map(|l| l.split('.').next()?.trim().parse().ok())
        .collect()
}

/// The section numbers a text cites after `marker` (`§3`, `§5, §8`, `§3 batched renewal, §5 …`).
fn cited_sections(text: &str, marker: &str) -> Vec<u32> {
    let mut cited = Vec::new();
    for (at, _) in text.match_indices(marker) {
        let rest = &text[at + marker.len()..];
        // The citation runs to the end of its clause: `DESIGN §3 batched renewal, §5 cost, §8 targets)`.
        let clause = rest.split([')', '\n', ';', ':']).next().unwrap_or("");
        for part in clause.split('§').skip(1) {
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(n) = digits.parse() {
                cited.push(n);
            }
        }
    }
    cited
}

#[test]
fn every_cited_design_section_exists() {
    let sections = design_sections();
    assert!(
        sections.len() >= 8,
        "docs/design.md has numbered sections: {sections:?}"
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
        for marker in ["DESIGN ", "DESIGN.md ", "design.md "] {
            for n in cited_sections(&text, marker) {
                checked += 1;
                if !sections.contains(&n) {
                    missing.push(format!("{}: {marker}§{n}", path.display()));
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
        "citations of sections docs/design.md lacks: {missing:#?}"
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
                missing.push(format!("{}: {cited}", path.display()));
            }
        }
    }
    assert!(checked > 10, "the code names docs files ({checked} found)");
    assert!(
        missing.is_empty(),
        "docs files named that do not exist: {missing:#?}"
    );
}

/// The targets of `[text](target)` links in Markdown, fenced code left out.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for (at, _) in line.match_indices("](") {
            let rest = &line[at + 2..];
            if let Some(end) = rest.find(')') {
                targets.push(rest[..end].trim().to_owned());
            }
        }
    }
    targets
}

#[test]
fn every_relative_markdown_link_resolves() {
    let mut docs = Vec::new();
    files(&root(), &[".md"], &mut docs);
    assert!(docs.len() >= 5, "Markdown files found: {docs:?}");
    let mut broken = Vec::new();
    for path in &docs {
        let text = fs::read_to_string(path).unwrap_or_default();
        for target in link_targets(&text) {
            let file = target
                .split('#')
                .next()
                .unwrap_or("")
                .split(' ')
                .next()
                .unwrap_or("");
            let external = file.contains("://") || file.starts_with("mailto:");
            if file.is_empty() || external {
                continue;
            }
            let resolved = path.parent().expect("a file has a folder").join(file);
            if !resolved.exists() {
                broken.push(format!("{} -> {target}", path.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to files that do not exist: {broken:#?}"
    );
}

#[test]
fn the_checks_find_what_they_look_for() {
    assert_eq!(
        cited_sections(
            "threads (DESIGN §3 batched renewal, §5 client/server cost, §8 targets).",
            "DESIGN "
        ),
        vec![3, 5, 8]
    );
    assert_eq!(
        cited_sections("see docs/design.md §12; and §4 later", "design.md "),
        vec![12]
    );
    assert_eq!(
        cited_docs("see docs/findings/redisson.md. And ../docs/x.md#a, docs/results/a.json.gz"),
        vec!["docs/findings/redisson.md", "docs/x.md"]
    );
    assert_eq!(
        link_targets(
            "[a](docs/x.md) and [b](https://e.invalid) \n```\n[c](no.md)\n```\n[d](y.md#top)"
        ),
        vec!["docs/x.md", "https://e.invalid", "y.md#top"]
    );
}
