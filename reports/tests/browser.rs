//! Opens the HTML report in headless Chromium: it must load without a console message (the page has
//! no script, so any message is an error: a blocked fetch, a parse error) and show the verdict table.
//! A control page that logs an error proves the console check can fail. Chromium is required: a machine
//! without it fails here with the command that installs it.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use lockbench_reports::report::ReportInput;
use lockbench_reports::{Comparison, write_report};

const FIXTURE: &str = include_str!("fixtures/compare-quick.json");
const INSTALL: &str = "bash docker/install-deps.sh --with-browser";

fn chromium() -> PathBuf {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::var("PATH").unwrap_or_default().split(':') {
            let path = Path::new(dir).join(name);
            if path.is_file() {
                return path;
            }
        }
    }
    panic!("Chromium is not installed: the HTML report test needs it; install it with `{INSTALL}`");
}

/// Loads `page` headless; returns (DOM, console lines).
fn load(page: &Path) -> (String, Vec<String>) {
    let profile = tempfile::tempdir().unwrap();
    // Output goes to files: the DOM is larger than a pipe's buffer.
    let stdout_path = profile.path().join("dom.html");
    let stderr_path = profile.path().join("log.txt");
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .arg(format!(
            "--user-data-dir={}",
            profile.path().join("profile").display()
        ))
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("Chromium does not start ({e}); reinstall it with `{INSTALL}`"));
    // Bounded: a hung browser fails the test instead of hanging it.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("Chromium did not finish loading {} in 60 s", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = child.wait().unwrap();
    let log = std::fs::read_to_string(&stderr_path).unwrap();
    assert!(status.success(), "Chromium failed: {log}");
    let console = log
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .map(str::to_owned)
        .collect();
    (std::fs::read_to_string(&stdout_path).unwrap(), console)
}

#[test]
fn the_report_loads_cleanly_and_shows_the_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let control = dir.path().join("control.html");
    std::fs::write(
        &control,
        "<!DOCTYPE html><html><body><script>console.error('lockbench-control')</script></body></html>",
    )
    .unwrap();
    let (_, console) = load(&control);
    assert!(
        console.iter().any(|l| l.contains("lockbench-control")),
        "the console check must see the control page's error: {console:?}"
    );

    let c = Comparison::read(FIXTURE).unwrap();
    let written = write_report(
        dir.path(),
        ReportInput {
            current: &c,
            baseline: None,
            cost: &[],
        },
    )
    .unwrap();
    let (dom, console) = load(&written.html);
    assert!(console.is_empty(), "console messages: {console:?}");
    let table = &dom[dom
        .find("<table id=\"verdicts\">")
        .expect("verdict table in the DOM")..];
    let table = &table[..table.find("</table>").unwrap()];
    for text in [
        "redis-watchdog",
        "zookeeper",
        "lease-too-short · fixed:1s",
        "VIOLATED",
        "safe",
        "skipped",
    ] {
        assert!(table.contains(text), "the verdict table lacks {text:?}");
    }
    assert_eq!(
        dom.matches("<svg").count(),
        written.charts.len(),
        "every chart rendered inline"
    );
}
