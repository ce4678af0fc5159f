//! Opens the HTML report in headless Chromium: it must load without a console message (the page has
//! no script, so any message is an error: a blocked fetch, a parse error) and show the verdict table.
//! A control page that logs an error proves the console check can fail. A report of a full-size suite
//! (16 scenario columns, every strategy a row, k/n cells) must fit a 1280-px-wide window without
//! scrolling sideways: measured by the browser's layout, with a screenshot kept, and a control page
//! that is too wide proves the measure can fail. Chromium is required: a machine without it fails
//! here with the command that installs it.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use lockbench_reports::model::{Trials, Verdict};
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
    load_with(page, &[])
}

/// Loads `page` headless with extra flags; returns (DOM, console lines).
fn load_with(page: &Path, extra: &[String]) -> (String, Vec<String>) {
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
        .args(extra)
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
        .find("<table id=\"verdicts\"")
        .expect("verdict table in the DOM")..];
    let table = &table[..table.find("</table>").unwrap()];
    for text in [
        "redis-<wbr>watchdog",
        "zookeeper",
        "lease-too-short · fixed:1s",
        "VIOLATED",
        "safe",
        "–",
    ] {
        assert!(table.contains(text), "the verdict table lacks {text:?}");
    }
    for line in [
        "Fastest:",
        "Fewest client requests per CS, within each server kind:",
        "Breaking points:",
    ] {
        assert!(dom.contains(line), "the first screen lacks {line:?}");
    }
    assert_eq!(
        dom.matches("<svg").count(),
        written.charts.len(),
        "every chart rendered inline"
    );
}

/// How wide `page` lays out in a 1280-px-wide frame: (document scroll width, frame width, right edge
/// of the element `id`), measured by a script in a wrapper page (the report itself has none).
fn layout_width(dir: &Path, page: &str, id: &str) -> (u32, u32, u32) {
    let wrapper = dir.join(format!("measure-{page}"));
    std::fs::write(
        &wrapper,
        format!(
            "<!DOCTYPE html><html><body style=\"margin:0\"><iframe id=\"f\" src=\"{page}\" \
             style=\"width:1280px;height:800px;border:0\"></iframe><script>\
             document.getElementById('f').addEventListener('load', () => {{\
               const d = document.getElementById('f').contentDocument;\
               const e = d.getElementById('{id}');\
               const p = document.createElement('pre'); p.id = 'measure';\
               p.textContent = 'width ' + d.documentElement.scrollWidth + ' ' + \
                 d.documentElement.clientWidth + ' ' + Math.ceil(e.getBoundingClientRect().right) + ' end';\
               document.body.appendChild(p); }});</script></body></html>"
        ),
    )
    .unwrap();
    let (dom, _) = load_with(
        &wrapper,
        &[
            "--allow-file-access-from-files".to_owned(),
            "--window-size=1300,900".to_owned(),
            "--virtual-time-budget=10000".to_owned(),
        ],
    );
    let marker = "<pre id=\"measure\">width ";
    let at = dom.find(marker).expect("the measuring script ran");
    let numbers: Vec<u32> = dom[at + marker.len()..]
        .split_whitespace()
        .take(3)
        .map(|n| n.parse().unwrap())
        .collect();
    (numbers[0], numbers[1], numbers[2])
}

/// The fixture grown to a full suite: every scenario of the default suite as a row, each case with
/// three trials.
fn full_suite() -> Comparison {
    let mut c = Comparison::read(FIXTURE).unwrap();
    let template = c.runs.clone();
    c.runs.clear();
    for (i, name) in [
        "baseline",
        "long-tail",
        "lease-too-short",
        "process-pause",
        "client-crash",
        "cpu-starvation",
        "cpu-quota",
        "cpu-hog",
        "network-delay",
        "network-partition",
        "server-freeze",
        "redis-client-pause",
        "pubsub-drop",
        "redis-failover",
        "leader-loss",
    ]
    .into_iter()
    .enumerate()
    {
        let mut run = template[if name == "lease-too-short" { 2 } else { i % 2 }].clone();
        run.results.scenario.name = name.to_owned();
        for case in &mut run.results.cases {
            let violated = u32::from(case.safety.verdict == Verdict::Violated) * 2;
            case.trials = Some(Trials {
                runs: 3,
                violated,
                rate_low: Some(if violated > 0 { 0.2077 } else { 0.0 }),
                rate_high: Some(if violated > 0 { 0.9385 } else { 0.5615 }),
                stopped_early: false,
                fault_not_applied: 0,
                each: Vec::new(),
            });
        }
        c.runs.push(run);
    }
    c
}

#[test]
fn the_verdict_matrix_of_a_full_suite_fits_1280_px() {
    let dir = tempfile::tempdir().unwrap();
    // Control: a page wider than the frame must measure wider, or the check proves nothing.
    std::fs::write(
        dir.path().join("wide.html"),
        "<!DOCTYPE html><html><body><table id=\"verdicts\" style=\"width:2000px\"><tr><td>x</td></tr></table></body></html>",
    )
    .unwrap();
    let (scroll, client, right) = layout_width(dir.path(), "wide.html", "verdicts");
    assert!(
        scroll > client && right > 1280,
        "the control must overflow: {scroll} {client} {right}"
    );

    let c = full_suite();
    let written = write_report(
        dir.path(),
        ReportInput {
            current: &c,
            baseline: None,
            cost: &[],
        },
    )
    .unwrap();
    let page = written
        .html
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let (scroll, client, right) = layout_width(dir.path(), &page, "verdicts");
    assert!(
        scroll <= client && right <= 1280,
        "the verdict matrix overflows a 1280-px window: document {scroll} px in {client} px, table ends at {right} px"
    );
    // The screenshot a reviewer can look at (kept under the target directory).
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("verdict-matrix-1280.png");
    let _ = std::fs::remove_file(&shot);
    load_with(
        &written.html,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,1000".to_owned(),
        ],
    );
    assert!(
        std::fs::metadata(&shot)
            .map(|m| m.len() > 10_000)
            .unwrap_or(false),
        "no screenshot at {}",
        shot.display()
    );
}
