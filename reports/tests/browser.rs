//! Opens the HTML report in headless Chromium: it must load without a console message (the page has
//! no script, so any message is an error: a blocked fetch, a parse error) and show the verdict table.
//! A control page that logs an error proves the console check can fail. A report of a full-size suite
//! (16 scenario columns, every strategy a row, k/n cells) must fit a 1280-px-wide window and a
//! 390-px phone without the page scrolling sideways, with the scorecard on the first screen (800 px):
//! measured by the browser's layout in one wrapper page, with screenshots of both first screens kept
//! (`first-screen-1280.png`, `first-screen-390.png` under the target's tmp directory), and a control
//! page that is too wide proves the measure can fail. Chromium is required: a machine without it fails
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

/// How `page` lays out in a frame of each width (800 px high), measured by a script in one wrapper
/// page (the report itself has none; one Chromium start for every width).
#[derive(Debug, Clone, Copy)]
struct Layout {
    /// The document's scroll width.
    scroll: u32,
    /// The frame's width.
    client: u32,
    /// The right edge of the element `verdicts` (0 without it).
    right: u32,
    /// The bottom edge of the scorecard table `card` (0 without it).
    card_bottom: u32,
}

fn layouts(dir: &Path, page: &str, widths: &[u32]) -> Vec<Layout> {
    let wrapper = dir.join(format!("measure-{page}"));
    let frames: String = widths
        .iter()
        .map(|w| {
            format!(
                "<iframe class=\"f\" src=\"{page}\" style=\"width:{w}px;height:800px;border:0\"></iframe>"
            )
        })
        .collect();
    std::fs::write(
        &wrapper,
        format!(
            "<!DOCTYPE html><html><body style=\"margin:0\">{frames}<script>\
             window.addEventListener('load', () => {{\
               const p = document.createElement('pre'); p.id = 'measure';\
               for (const f of document.querySelectorAll('iframe.f')) {{\
                 const d = f.contentDocument;\
                 const edge = (id, side) => {{ const e = d.getElementById(id);\
                   return e ? Math.ceil(e.getBoundingClientRect()[side]) : 0; }};\
                 p.textContent += 'width ' + d.documentElement.scrollWidth + ' ' + \
                   d.documentElement.clientWidth + ' ' + edge('verdicts', 'right') + ' ' + \
                   edge('card', 'bottom') + ' end\\n'; }}\
               document.body.appendChild(p); }});</script></body></html>"
        ),
    )
    .unwrap();
    let total: u32 = widths.iter().sum::<u32>() + 20;
    let (dom, _) = load_with(
        &wrapper,
        &[
            "--allow-file-access-from-files".to_owned(),
            format!("--window-size={total},900"),
            "--virtual-time-budget=10000".to_owned(),
        ],
    );
    let marker = "<pre id=\"measure\">";
    let at = dom.find(marker).expect("the measuring script ran");
    let text = &dom[at + marker.len()..];
    let text = &text[..text.find("</pre>").unwrap()];
    let found: Vec<Layout> = text
        .lines()
        .map(|line| {
            let n: Vec<u32> = line
                .split_whitespace()
                .skip(1)
                .take(4)
                .map(|n| n.parse().unwrap())
                .collect();
            Layout {
                scroll: n[0],
                client: n[1],
                right: n[2],
                card_bottom: n[3],
            }
        })
        .collect();
    assert_eq!(found.len(), widths.len(), "{text}");
    found
}

/// Takes a screenshot of the first screen of `page` at `width` × 900 px, kept under the target
/// directory as `name` for a reviewer.
fn screenshot(page: &Path, width: u32, name: &str) {
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_file(&shot);
    load_with(
        page,
        &[
            format!("--screenshot={}", shot.display()),
            format!("--window-size={width},900"),
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
                unknown: 0,
                each: Vec::new(),
                stopped_by: None,
            });
        }
        c.runs.push(run);
    }
    c
}

#[test]
fn a_full_suite_fits_1280_px_and_a_390_px_phone_with_the_scorecard_first() {
    let dir = tempfile::tempdir().unwrap();
    // Control: a page wider than the frame must measure wider, or the check proves nothing.
    std::fs::write(
        dir.path().join("wide.html"),
        "<!DOCTYPE html><html><body><table id=\"verdicts\" style=\"width:2000px\"><tr><td>x</td></tr></table></body></html>",
    )
    .unwrap();
    let wide = layouts(dir.path(), "wide.html", &[1280])[0];
    assert!(
        wide.scroll > wide.client && wide.right > 1280,
        "the control must overflow: {wide:?}"
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
    let [desktop, phone] = layouts(dir.path(), &page, &[1280, 390])[..] else {
        unreachable!()
    };
    assert!(
        desktop.scroll <= desktop.client && desktop.right <= 1280,
        "the verdict matrix overflows a 1280-px window: {desktop:?}"
    );
    // On a 390-px phone nothing widens the page: wide tables and charts scroll in their own box.
    assert!(
        phone.scroll <= phone.client,
        "the report overflows a 390-px phone: {phone:?}"
    );
    for (width, layout) in [(1280, desktop), (390, phone)] {
        assert!(
            layout.card_bottom > 0 && layout.card_bottom <= 800,
            "the scorecard is not on the first screen at {width} px: {layout:?}"
        );
    }
    // The screenshots a reviewer can look at (kept under the target directory).
    screenshot(&written.html, 1280, "first-screen-1280.png");
    screenshot(&written.html, 390, "first-screen-390.png");
}
