//! Renders the reports from a committed fixture — a real `lockbench compare --quick` run of four
//! strategies (`tests/fixtures/compare-quick.json`) — and checks every file: the charts exist as SVG
//! with their labels and as valid PNGs of the declared size, the Markdown has the verdict matrix, the
//! derived rules and the headline numbers, the HTML is self-contained, and a baseline file adds the
//! changes.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::Path;
use std::sync::OnceLock;

use lockbench_reports::charts::availability::AvailabilityChart;
use lockbench_reports::charts::cost::CostChart;
use lockbench_reports::charts::latency::LatencyChart;
use lockbench_reports::charts::margin::MarginChart;
use lockbench_reports::charts::palette::{Palette, SeriesStyle};
use lockbench_reports::charts::render;
use lockbench_reports::charts::throughput::ThroughputChart;
use lockbench_reports::grid::Grid;
use lockbench_reports::report::{self, ReportInput, Section};
use lockbench_reports::rules;
use lockbench_reports::scale::{CostPoint, CostSeries};
use lockbench_reports::{Comparison, WrittenReport, write_report};

const FIXTURE: &str = include_str!("fixtures/compare-quick.json");

fn fixture() -> Comparison {
    Comparison::read(FIXTURE).unwrap()
}

/// The fixture's report, drawn once for the tests that only read it (drawing is slow in debug builds).
fn rendered() -> &'static (Comparison, WrittenReport) {
    static RENDERED: OnceLock<(Comparison, WrittenReport)> = OnceLock::new();
    RENDERED.get_or_init(|| {
        let c = fixture();
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("reports-render-fixture");
        let _ = fs::remove_dir_all(&dir);
        let written = write_report(&dir, input(&c)).unwrap();
        (c, written)
    })
}

fn input(c: &Comparison) -> ReportInput<'_> {
    ReportInput {
        current: c,
        baseline: None,
        cost: &[],
    }
}

/// Width and height from a PNG's IHDR, after checking the signature and decoding every pixel.
fn png_size(path: &Path) -> (u32, u32) {
    let bytes = fs::read(path).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{}", path.display());
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    let inked = pixels
        .chunks(3)
        .filter(|p| p.iter().any(|c| *c < 200))
        .count();
    let share = inked as f64 / (pixels.len() / 3) as f64;
    assert!(
        share > 0.005 && share < 0.9,
        "{}: {share} of the pixels are drawn",
        path.display()
    );
    (info.width, info.height)
}

#[test]
fn every_file_is_written_with_its_labels() {
    let (c, written) = rendered();
    assert!(written.html.exists() && written.markdown.exists());
    let strategies: Vec<String> = c.strategies.iter().map(|s| s.id.clone()).collect();
    assert_eq!(
        strategies,
        [
            "memory",
            "redis-watchdog",
            "redis-keyspace-naive",
            "zookeeper"
        ]
    );
    let grid = Grid::new(c);
    let rows: Vec<&str> = grid.rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(
        rows,
        [
            "baseline",
            "long-tail",
            "lease-too-short · fixed:1s",
            "lease-too-short · watchdog"
        ]
    );
    let mut sections = Vec::new();
    for name in &written.charts {
        let section = section_of(name);
        sections.push(section);
        let svg = fs::read_to_string(written.charts_dir.join(format!("{name}.svg"))).unwrap();
        assert!(svg.starts_with("<svg"), "{name}");
        let size = png_size(&written.charts_dir.join(format!("{name}.png")));
        assert!(
            svg.contains(&format!("viewBox=\"0 0 {} {}\"", size.0, size.1)),
            "{name}: the PNG has the SVG's size"
        );
        assert!(size.0 >= 600 && size.1 >= 150, "{name}: {size:?}");
        assert!(
            !svg.contains("height=\"-") && !svg.contains("width=\"-"),
            "{name}: negative sizes"
        );
        let expected: Vec<&str> = match section {
            Section::Throughput => {
                let mut labels = vec!["Throughput", "completed critical sections per second"];
                labels.extend(["memory", "redis-watchdog", "redis-keyspace-naive"]);
                labels
            }
            Section::Latency => vec![
                "Acquire latency by percentile",
                "percentile of acquires",
                "acquire latency (ms, log scale)",
                "50%",
                "redis-watchdog",
            ],
            Section::Margin => vec![
                "Renewal margin",
                "TTL left on the server when the renewal landed (ms)",
                "redis-watchdog",
                "TTL",
            ],
            Section::Timeline => vec![
                "ms since the case started",
                "client ",
                "held, then released",
                "two holders at once",
            ],
            Section::Cost => vec!["held locks"],
            Section::Availability => vec![
                "Lock availability over time",
                "time from the fault",
                "shaded: the fault",
                "no lock was granted",
            ],
        };
        for label in expected {
            assert!(svg.contains(label), "{name}.svg lacks the label {label:?}");
        }
    }
    for section in [
        Section::Throughput,
        Section::Latency,
        Section::Margin,
        Section::Timeline,
    ] {
        assert!(sections.contains(&section), "{section:?}");
    }
    assert_eq!(
        sections
            .iter()
            .filter(|s| **s == Section::Throughput)
            .count(),
        rows.len()
    );
    assert!(
        !sections.contains(&Section::Cost),
        "no scale data, no cost chart"
    );
}

fn section_of(name: &str) -> Section {
    match name.split('-').next().unwrap() {
        "throughput" => Section::Throughput,
        "availability" => Section::Availability,
        "latency" => Section::Latency,
        "margin" => Section::Margin,
        "timeline" => Section::Timeline,
        "cost" => Section::Cost,
        other => panic!("unknown chart {other}"),
    }
}

#[test]
fn markdown_has_the_matrix_the_rules_and_the_numbers() {
    let (_, written) = rendered();
    let md = fs::read_to_string(&written.markdown).unwrap();
    for needle in [
        // A quick run's single trials give no interval to rank on.
        "**Fastest:** not ranked under baseline: a single trial gives no 95 % interval to rank on (redis-watchdog 734, redis-keyspace-naive 587, zookeeper 422).",
        "**Fewest client requests per CS, within each server kind:**",
        "| strategy | CS/s (95 % interval) | acquire p99 ms | client requests per CS | breaks under (predicted) | breaks under (unexpected) | fencing | data |",
        "## Cost under baseline",
        "| strategy | CS/s | client CPU ms / CS | threads | RSS MiB | client requests / CS | server calls / CS | server CPU ms / CS | server kind |",
        "**Breaking points:** 4 of 15 strategy × scenario cells violated in at least one trial",
        "## Breaking points: verdicts",
        "| strategy | baseline | long-tail | lease-too-short · fixed:1s | lease-too-short · watchdog |",
        "| redis-watchdog | safe | safe | **VIOLATED · data harmed** | safe |",
        "| zookeeper | safe | safe | – | safe |",
        "## Which strategy when",
        "**Unsafe under lease-too-short · fixed:1s.**",
        "don't use fixed leases for tasks with tails",
        "**Fastest safe strategy under baseline.**",
        "Rule: highest throughput",
        "## Headline numbers",
        "| strategy | lease | CS/s | acquire p50 | acquire p99 | hand-off p50 | margin min | margin p50 | overlaps | lost updates | stale accepted | verdict |",
        "Machine: ",
        "zookeeper under lease-too-short · fixed:1s: skipped",
    ] {
        assert!(md.contains(needle), "report.md lacks {needle:?}\n{md}");
    }
    // Every chart the Markdown links exists.
    let mut links = 0;
    for part in md.split("](charts/").skip(1) {
        let name = &part[..part.find(')').unwrap()];
        assert!(written.charts_dir.join(name).exists(), "{name}");
        links += 1;
    }
    assert_eq!(links, written.charts.len());
}

#[test]
fn the_html_is_one_self_contained_file() {
    let (_, written) = rendered();
    let html = fs::read_to_string(&written.html).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<table id=\"verdicts\" class=\"matrix\">"));
    // "Which strategy when" names the strategies in each conclusion; the figures are collapsed.
    let which = &html[html.find("id=\"which\"").unwrap()..];
    let which = &which[..which.find("</ol>").unwrap()];
    let collapsed = which
        .matches("<details><summary>the figures it rests on (")
        .count();
    assert!(collapsed > 0, "{which}");
    assert_eq!(which.matches("<ul>").count(), collapsed, "{which}");
    for anchor in ["fastest", "cost", "breaking"] {
        assert!(
            html.contains(&format!("href=\"#{anchor}\"")),
            "the first screen links {anchor}"
        );
        assert!(
            html.contains(&format!("id=\"{anchor}\"")),
            "{anchor} is a section"
        );
    }
    assert_eq!(html.matches("<svg").count(), written.charts.len());
    for banned in [
        "<script", "<link", "<img", "<iframe", "@import", "url(", "src=",
    ] {
        assert!(!html.contains(banned), "report.html contains {banned}");
    }
    // The only URL is the SVG namespace (an identifier, never fetched).
    let urls = html.matches("http://").count() + html.matches("https://").count();
    assert_eq!(urls, html.matches("http://www.w3.org/2000/svg").count());
}

#[test]
fn a_baseline_adds_the_changes() {
    let c = fixture();
    let mut old = fixture();
    for run in &mut old.runs {
        for case in &mut run.results.cases {
            case.throughput.completed_per_s *= 2.0;
            if case.strategy == "redis-watchdog" && case.lease == "watchdog" {
                case.safety.overlap.pairs += 3;
            }
        }
    }
    old.runs.retain(|r| r.results.scenario.name != "long-tail");
    let dir = tempfile::tempdir().unwrap();
    let written = write_report(
        dir.path(),
        ReportInput {
            current: &c,
            baseline: Some((&old, "old.json")),
            cost: &[],
        },
    )
    .unwrap();
    let md = fs::read_to_string(&written.markdown).unwrap();
    let html = fs::read_to_string(&written.html).unwrap();
    for text in [&md, &html] {
        assert!(text.contains("Changes against old.json"));
        assert!(text.contains("-50%"), "throughput halved");
        assert!(text.contains("3 → 0 (-3)"), "overlaps went away");
        // The yardstick (memory, in-process) is listed last, after the strategies it measures the
        // driver for.
        assert!(text.contains("Only in this run: long-tail redis-watchdog"));
        assert!(text.contains(", long-tail memory."));
        assert!(
            text.contains("11 of 11 cases changed beyond noise (11 slower); 0 new violations"),
            "every matched case ran at half its old throughput"
        );
    }
    assert!(html.contains("<table id=\"changes\">"));
}

#[test]
fn scale_data_adds_cost_charts() {
    let point = |held: u64, calls: f64, cpu: f64| CostPoint {
        held_locks: held,
        renew_calls_per_s: Some(calls),
        server_cpu_ms_per_s: Some(cpu),
        client_cpu_percent: cpu / 2.0,
        rss_mb: 20.0 + held as f64 / 1000.0,
        threads: 4,
        lost: 0,
        renew_failures: 0,
        thinnest_margin_ms: None,
    };
    let cost = vec![
        CostSeries {
            strategy: "redis-watchdog".into(),
            stopped: None,
            points: vec![point(1000, 1000.0, 5.0), point(10_000, 10_000.0, 40.0)],
            repeats: Vec::new(),
        },
        CostSeries {
            strategy: "redis-watchdog-batched".into(),
            stopped: Some("stopped at 9000: budget".into()),
            points: vec![point(1000, 10.0, 1.0)],
            repeats: Vec::new(),
        },
    ];
    let charts = CostChart::of_scale(&cost, &Palette::default());
    assert_eq!(
        charts.len(),
        5,
        "renew calls, server CPU, client CPU, RSS, threads"
    );
    let chart = render("cost-renew-calls", &charts[0].title, &charts[0]).unwrap();
    let texts: Vec<String> = svg_texts(&chart.svg).into_iter().map(|t| t.2).collect();
    for label in [
        "renew calls per second, log scale",
        // Each row named at its left, its values at its right, in step order.
        "redis-watchdog",
        "1\u{2009}000 → 10\u{2009}000",
        "redis-watchdog-batched",
        "10",
        "redis-watchdog-batched stopped at 9000: budget",
        "\u{25cb} 1\u{2009}000 held locks · \u{25cf} 10\u{2009}000 held locks · values at the right, in that order",
    ] {
        assert!(
            texts.iter().any(|t| t == label),
            "no {label:?} in {texts:?}"
        );
    }
    assert!(
        CostChart::of_scale(&[], &Palette::default()).is_empty(),
        "no data, no chart"
    );
}

/// The text elements of an SVG chart: (x, y, text), their entities decoded.
fn svg_texts(svg: &str) -> Vec<(i32, i32, String)> {
    let attribute = |tag: &str, name: &str| -> i32 {
        let tag = format!(" {tag}");
        let at = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        tag[at..at + tag[at..].find('"').unwrap()].parse().unwrap()
    };
    svg.split("<text ")
        .skip(1)
        .map(|part| {
            let (tag, rest) = part.split_once('>').unwrap();
            let content = rest[..rest.find("</text>").unwrap()]
                .trim()
                .replace("&apos;", "'")
                .replace("&quot;", "\"")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&");
            (attribute(tag, "x"), attribute(tag, "y"), content)
        })
        .collect()
}

/// The fixture's fault row, each case unavailable for longer than the one before it (100, 200, …
/// ms): the lanes must run in the opposite order to the report's.
#[test]
fn each_strategy_of_a_fault_row_gets_its_own_lane_worst_first() {
    use lockbench_reports::model::Gap;
    let mut c = with_a_fault_row();
    let fault = c.runs.last_mut().unwrap();
    for (i, case) in fault.results.cases.iter_mut().enumerate() {
        let a = case.availability.as_mut().unwrap();
        let from_ms = case.faults[0].start_ms + 200.0;
        a.longest_blocked = Some(Gap {
            from_ms,
            to_ms: from_ms + 100.0 * (i + 1) as f64,
        });
    }
    let grid = Grid::new(&c);
    let palette = report::palette(&grid, &[]);
    let row = grid
        .rows
        .iter()
        .find(|r| r.slug == "process-pause")
        .unwrap();
    let chart = AvailabilityChart::of_row(&grid, row, &palette).unwrap();
    let lanes: Vec<&str> = chart.lanes.iter().map(|l| l.strategy.as_str()).collect();
    let mut run_order: Vec<&str> = row
        .run
        .results
        .cases
        .iter()
        .map(|c| c.strategy.as_str())
        .collect();
    assert!(run_order.len() >= 3, "{run_order:?}");
    run_order.reverse();
    assert_eq!(lanes, run_order, "the longest unavailability first");
    let svg = render("availability", &chart.title, &chart).unwrap().svg;
    let texts = svg_texts(&svg);
    let mut lane_ys = Vec::new();
    for (k, lane) in chart.lanes.iter().enumerate() {
        // Its name once, at the left of its lane.
        let names: Vec<&(i32, i32, String)> =
            texts.iter().filter(|t| t.2 == lane.strategy).collect();
        assert_eq!(names.len(), 1, "{}: {texts:?}", lane.strategy);
        let (x, y, _) = *names[0];
        // What differs, at the right of the same lane.
        let length = 100 * (chart.lanes.len() - k);
        let words = format!(
            "unavailable for {length} ms (+0.20 to +{:.2} s)",
            0.2 + length as f64 / 1e3
        );
        assert_eq!(lane.label, words);
        let written = format!("{length} ms");
        assert!(
            texts.iter().any(|t| t.2 == written && t.1 == y && t.0 > x),
            "{written:?} beside {}: {texts:?}",
            lane.strategy
        );
        // Its bar, in its colour, in its lane.
        let (r, g, b) = (lane.style.color.0, lane.style.color.1, lane.style.color.2);
        let fill = format!("opacity=\"1\" fill=\"#{r:02X}{g:02X}{b:02X}\"");
        let in_lane = svg.split("<rect ").skip(1).any(|rect| {
            let top = rect_attribute(rect, "y");
            let height = rect_attribute(rect, "height");
            rect.contains(&fill) && height > 10 && (top + height / 2 - y).abs() <= 4
        });
        assert!(in_lane, "no bar of {} in its lane at y {y}", lane.strategy);
        lane_ys.push(y);
    }
    assert!(lane_ys.windows(2).all(|w| w[1] - w[0] >= 30), "{lane_ys:?}");
}

fn rect_attribute(rect: &str, name: &str) -> i32 {
    let at = rect
        .find(&format!(" {name}=\""))
        .map_or(0, |i| i + name.len() + 3);
    rect[at..at + rect[at..].find('"').unwrap()]
        .parse()
        .unwrap()
}

/// Rows of the report without a figure are named on the cost chart, not left out silently: a
/// strategy the scale run measured without renew calls, and one the run left out.
#[test]
fn the_cost_chart_names_the_rows_it_cannot_plot() {
    let c = fixture();
    let grid = Grid::new(&c);
    let point = |held: u64, calls: Option<f64>| CostPoint {
        held_locks: held,
        renew_calls_per_s: calls,
        server_cpu_ms_per_s: Some(3.0),
        client_cpu_percent: held as f64 / 1000.0,
        rss_mb: 20.0,
        threads: 4,
        lost: 0,
        renew_failures: 0,
        thinnest_margin_ms: None,
    };
    let series = |strategy: &str, calls: Option<f64>| CostSeries {
        strategy: strategy.into(),
        stopped: None,
        points: vec![point(1000, calls), point(10_000, calls.map(|c| c * 10.0))],
        repeats: Vec::new(),
    };
    let cost = vec![
        series("redis-watchdog", Some(1000.0)),
        series("zookeeper", None),
    ];
    let absent = report::absent_at_scale(&grid, &cost);
    assert_eq!(
        absent.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
        ["redis-keyspace-naive"],
        "memory is a yardstick, not a row"
    );
    let palette = report::palette(&grid, &cost);
    let charts: Vec<CostChart> = CostChart::of_scale(&cost, &palette)
        .into_iter()
        .map(|chart| chart.naming_absent(&absent))
        .collect();
    let renew = charts.iter().find(|c| c.slug == "renew-calls").unwrap();
    let texts: Vec<String> = svg_texts(&render("renew", &renew.title, renew).unwrap().svg)
        .into_iter()
        .map(|t| t.2)
        .collect();
    for label in [
        "redis-watchdog",
        "1\u{2009}000 → 10\u{2009}000",
        "Not measured: zookeeper (the scale run has no renew calls per second of it)",
        "Not in the scale run: redis-keyspace-naive",
    ] {
        assert!(
            texts.iter().any(|t| t == label),
            "no {label:?} in {texts:?}"
        );
    }
    assert!(
        !texts.iter().any(|t| t == "zookeeper"),
        "no row without a figure"
    );
    // Where every measured row has the figure, only the strategy the run left out is named.
    let cpu = charts.iter().find(|c| c.slug == "client-cpu").unwrap();
    let notes = cpu.notes();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert_eq!(notes[1], "Not in the scale run: redis-keyspace-naive");
    assert_eq!(cpu.rows().len(), 2);
}

/// Every chart of a report draws a strategy in the same look — its place in the report's strategy
/// list — and no two strategies alike: the throughput bars, latency curves and margin ranges of
/// every row and the cost lines, whose series come in another order and add a strategy.
#[test]
fn each_strategy_keeps_its_colour_in_every_chart() {
    let c = with_a_fault_row();
    let grid = Grid::new(&c);
    let series = |strategy: &str| CostSeries {
        strategy: strategy.into(),
        stopped: None,
        points: vec![CostPoint {
            held_locks: 1000,
            renew_calls_per_s: Some(100.0),
            server_cpu_ms_per_s: Some(3.0),
            client_cpu_percent: 1.0,
            rss_mb: 20.0,
            threads: 4,
            lost: 0,
            renew_failures: 0,
            thinnest_margin_ms: None,
        }],
        repeats: Vec::new(),
    };
    let cost = vec![
        series("zookeeper"),
        series("redis-guard-thread"),
        series("memory"),
    ];
    let palette = report::palette(&grid, &cost);
    let mut seen: Vec<(String, SeriesStyle, &str)> = Vec::new();
    for row in &grid.rows {
        let bars = ThroughputChart::of_row(&grid, row, &palette).bars;
        seen.extend(
            bars.into_iter()
                .map(|b| (b.strategy, b.style, "throughput")),
        );
        if let Some(chart) = LatencyChart::of_row(&grid, row, &palette) {
            seen.extend(
                chart
                    .curves
                    .into_iter()
                    .map(|c| (c.strategy, c.style, "latency")),
            );
        }
        if let Some(chart) = MarginChart::of_row(&grid, row, &palette) {
            seen.extend(
                chart
                    .ranges
                    .into_iter()
                    .map(|r| (r.strategy, r.style, "margin")),
            );
        }
        if let Some(chart) = AvailabilityChart::of_row(&grid, row, &palette) {
            seen.extend(
                chart
                    .lanes
                    .into_iter()
                    .map(|l| (l.strategy, l.style, "availability")),
            );
        }
    }
    for chart in CostChart::of_scale(&cost, &palette) {
        seen.extend(
            chart
                .lines
                .into_iter()
                .map(|l| (l.strategy, l.style, "cost")),
        );
    }
    for kind in ["throughput", "latency", "margin", "cost", "availability"] {
        assert!(seen.iter().any(|(_, _, k)| *k == kind), "no {kind} chart");
    }
    for (id, style, kind) in &seen {
        for (other, other_style, other_kind) in &seen {
            assert_eq!(
                id == other,
                style == other_style,
                "{id} in {kind} and {other} in {other_kind}"
            );
        }
    }
    let ids: std::collections::BTreeSet<&str> = seen.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(
        ids.len(),
        5,
        "the fixture's four and the cost data's extra one"
    );
}

#[test]
fn the_rules_follow_from_the_numbers() {
    let c = fixture();
    let grid = Grid::new(&c);
    let findings = rules::derive(&grid);
    let titles: Vec<&str> = findings.iter().map(|f| f.title.as_str()).collect();
    assert!(
        titles.contains(&"Unsafe under lease-too-short · fixed:1s"),
        "{titles:?}"
    );
    assert!(titles.contains(&"Safe with watchdog leases"), "{titles:?}");
    let fastest = findings
        .iter()
        .find(|f| f.title == "Fastest safe strategy under baseline")
        .unwrap();
    // The pick is the highest baseline throughput among the safe distributed strategies.
    let baseline = grid.rows.iter().find(|r| r.label == "baseline").unwrap();
    let safe = findings
        .iter()
        .find(|f| f.title == "Safe with watchdog leases")
        .unwrap();
    let best = grid
        .strategies
        .iter()
        .filter(|s| s.is_distributed())
        .filter(|s| safe.conclusion.contains(&s.id))
        .filter_map(|s| baseline.case(&s.id))
        .max_by(|a, b| {
            a.throughput
                .completed_per_s
                .total_cmp(&b.throughput.completed_per_s)
        })
        .unwrap();
    assert!(
        fastest
            .conclusion
            .starts_with(&format!("{}:", best.strategy)),
        "{fastest:?}"
    );
    let refs = findings.iter().find(|f| f.title == "References").unwrap();
    assert!(refs.conclusion.contains("memory (in-process)"));
    assert!(
        !safe.conclusion.contains("memory"),
        "references are never picked"
    );
}

#[test]
fn a_single_run_file_renders_too() {
    let c = fixture();
    let single = c.runs[2].results.to_json();
    let read = Comparison::read(&single).unwrap();
    assert_eq!(read.runs.len(), 1);
    let dir = tempfile::tempdir().unwrap();
    let written = write_report(dir.path(), input(&read)).unwrap();
    let md = fs::read_to_string(&written.markdown).unwrap();
    assert!(md.starts_with("# lockbench run — lease-too-short"), "{md}");
}

/// The fixture with a server restart (redis-watchdog: 2 of 3 trials violated, 4 token regressions)
/// and redis-keyspace-naive posing as a peer of redis-watchdog.
/// The fixture with a fault row: its baseline again as `process-pause`, each case with a pause at
/// 500 ms for 1 s and grants over time that stop during it.
fn with_a_fault_row() -> Comparison {
    use lockbench_reports::model::{Availability, FaultWindow, Gap};
    let mut c = fixture();
    let mut fault = c.runs[0].clone();
    fault.results.scenario.name = "process-pause".into();
    for (i, case) in fault.results.cases.iter_mut().enumerate() {
        let start_ms = 500.0 + 50.0 * i as f64;
        case.faults = vec![FaultWindow {
            kind: "pause_worker".into(),
            target: "client 0".into(),
            parameters: Default::default(),
            start_ms,
            stop_ms: Some(start_ms + 1000.0),
            recovery_ms: Some(1000.0),
            loss_noticed_ms: None,
            note: None,
            applied: Some(true),
            evidence: None,
            cut_short: None,
        }];
        let waits: Vec<Option<f64>> = (0..30)
            .map(|bin| {
                let at = bin as f64 * 100.0;
                (at < start_ms || at > start_ms + 1000.0).then_some(2.0 + bin as f64)
            })
            .collect();
        case.availability = Some(Availability {
            bin_ms: 100.0,
            grants: waits.iter().map(|w| u32::from(w.is_some())).collect(),
            max_wait_ms: waits,
            longest_gap: Some(Gap {
                from_ms: start_ms,
                to_ms: start_ms + 1000.0,
            }),
            longest_blocked: None,
        });
    }
    c.runs.push(fault);
    c
}

#[test]
fn a_fault_row_charts_availability_over_time_instead_of_throughput() {
    let c = with_a_fault_row();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("reports-render-fault-row");
    let _ = fs::remove_dir_all(&dir);
    let written = write_report(&dir, input(&c)).unwrap();
    assert!(
        written
            .charts
            .iter()
            .any(|n| n == "availability-process-pause"),
        "{:?}",
        written.charts
    );
    assert!(
        !written
            .charts
            .iter()
            .any(|n| n == "throughput-process-pause")
    );
    assert!(written.charts.iter().any(|n| n == "throughput-baseline"));
    let svg = fs::read_to_string(dir.join("charts/availability-process-pause.svg")).unwrap();
    for needle in [
        "time from the fault",
        "the longest stretch in which no lock was granted",
        "1.00 s",
    ] {
        assert!(svg.contains(needle), "{needle}");
    }
    let md = fs::read_to_string(&written.markdown).unwrap();
    assert!(md.contains("### Lock availability under faults"), "{md}");
}

fn with_restart_and_peer() -> Comparison {
    use lockbench_reports::model::{Trials, Verdict};
    let mut c = fixture();
    let mut restart = c.runs[0].clone();
    restart.results.scenario.name = "server-restart".into();
    restart.results.scenario.theory =
        Some("A restart without persistence forgets the token counter.".into());
    for case in &mut restart.results.cases {
        if case.strategy == "redis-watchdog" {
            case.safety.verdict = Verdict::Violated;
            case.safety.fencing.token_regressions = Some(4);
            case.trials = Some(Trials {
                runs: 3,
                violated: 2,
                rate_low: Some(0.21),
                rate_high: Some(0.94),
                stopped_early: false,
                fault_not_applied: 0,
                unknown: 0,
                each: Vec::new(),
                stopped_by: None,
            });
        }
    }
    c.runs = vec![c.runs[0].clone(), c.runs[2].clone(), restart];
    c.strategies[2].counterpart = Some("redis-watchdog".into());
    for case in &mut c.runs[0].results.cases {
        if case.strategy == c.strategies[2].id {
            case.protocol_round_trip_ms = Some(0.0421);
        }
    }
    c
}

#[test]
fn redlock_and_peer_sections_show_with_their_data() {
    use lockbench_reports::{html, markdown, report};
    let c = with_restart_and_peer();
    let built = report::build(input(&c)).unwrap();
    let md = markdown::render(&built, "charts");
    for needle in [
        "**Also:** [Redlock and clocks](#redlock-and-clocks) · [Peers beside their counterparts](#peers-beside-their-counterparts)",
        "## Redlock and clocks",
        "### server-restart\n\nA restart without persistence forgets the token counter.",
        "| strategy | violated trials | 95 % interval | token regressions |",
        "| redis-watchdog | 2 of 3 | 21–94 % | 4 |",
        "## Peers beside their counterparts",
        "### redis-keyspace-naive beside redis-watchdog",
        "| figure | redis-keyspace-naive | redis-watchdog |",
        "| baseline CS/s | 587 | 734 |",
        "| violated under lease-too-short · watchdog (not told apart by 1 trial) | 1/1 | 0/1 |",
        "| adapter protocol round trip (ms; about 2 per cycle) | 0.042 | none (in process) |",
    ] {
        assert!(md.contains(needle), "report.md lacks {needle:?}\n{md}");
    }
    // Only the scenarios where the two do not agree are listed.
    assert!(!md.contains("| violated under lease-too-short · fixed:1s"));
    let html = html::render(&built);
    for needle in [
        "<a href=\"#redlock\">Redlock and clocks</a>",
        "<a href=\"#peers\">Peers beside their counterparts</a>",
        "<h2 id=\"redlock\">Redlock and clocks</h2>",
        "<td>redis-watchdog</td><td>2 of 3</td><td>21–94 %</td><td>4</td>",
        "<h2 id=\"peers\">Peers beside their counterparts</h2>",
        "<td>baseline CS/s</td><td>587</td><td>734</td>",
    ] {
        assert!(html.contains(needle), "report.html lacks {needle:?}");
    }
}

#[test]
fn redlock_and_peer_sections_are_absent_without_their_data() {
    let (_, written) = rendered();
    let md = fs::read_to_string(&written.markdown).unwrap();
    let html = fs::read_to_string(&written.html).unwrap();
    for absent in [
        "Redlock and clocks",
        "Peers beside",
        "Models against",
        "**Also:**",
    ] {
        assert!(!md.contains(absent), "report.md has {absent:?}");
        assert!(!html.contains(absent), "report.html has {absent:?}");
    }
}

#[test]
fn the_process_pause_counts_only_for_redlock() {
    use lockbench_reports::topics::redlock_faults;
    let mut c = fixture();
    c.runs.truncate(1);
    c.runs[0].results.scenario.name = "process-pause".into();
    assert!(
        redlock_faults(&Grid::new(&c)).is_empty(),
        "no Redlock ran it"
    );
    // A peer modelled by redlock (on Redlock's nodes) is a Redlock row.
    c.strategies[2].counterpart = Some("redlock".into());
    c.strategies[2].server = "redis-nodes".into();
    let faults = redlock_faults(&Grid::new(&c));
    assert_eq!(faults.len(), 1);
    assert_eq!(faults[0].label, "process-pause");
    let who: Vec<&str> = faults[0].rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(who, ["redis-keyspace-naive"]);
    assert_eq!(
        faults[0].columns.len(),
        3,
        "no token column outside restarts"
    );
}

#[test]
fn the_cost_table_and_the_server_work_rule_divide_alike() {
    // Server counts cover the whole case, so both divide by the critical sections the resource saw
    // over the whole case; the rule's figure is the table's.
    let mut c = fixture();
    for run in &mut c.runs {
        for case in &mut run.results.cases {
            if let Some(cost) = case.server_cost.as_mut() {
                cost.client_requests = Some(cost.requests / 3);
            }
        }
    }
    let grid = Grid::new(&c);
    let findings = rules::derive(&grid);
    let rule = findings
        .iter()
        .find(|f| f.title == "Least server work under baseline")
        .unwrap();
    let table = lockbench_reports::topics::cost_table(&grid).unwrap();
    let (pick, figure) = rule.conclusion.split_once(" (").unwrap();
    let row = table.rows.iter().find(|r| r[0] == pick).unwrap();
    assert!(
        figure.contains(&format!(": {} client requests", row[5])),
        "rule {:?} vs table {row:?}",
        rule.conclusion
    );
}

/// Gives `strategy`'s baseline case in `c` trials of `completed` critical sections in 1 s each, with
/// their pooled rate and window.
fn with_baseline_trials(c: &mut Comparison, strategy: &str, completed: &[u64]) {
    use lockbench_reports::model::{Trial, Trials, Verdict};
    let n = completed.len();
    for run in &mut c.runs {
        if run.results.scenario.name != "baseline" {
            continue;
        }
        for case in &mut run.results.cases {
            if case.strategy != strategy {
                continue;
            }
            case.throughput.completed_per_s = completed.iter().sum::<u64>() as f64 / n as f64;
            case.window.measured_ms = 1000.0 * n as f64;
            case.trials = Some(Trials {
                runs: n as u32,
                violated: 0,
                rate_low: None,
                rate_high: None,
                stopped_early: false,
                fault_not_applied: 0,
                unknown: 0,
                stopped_by: None,
                each: completed
                    .iter()
                    .enumerate()
                    .map(|(seed, &completed)| Trial {
                        seed: seed as u64,
                        verdict: Verdict::Safe,
                        reasons: Vec::new(),
                        completed,
                        measured_ms: Some(1000.0),
                    })
                    .collect(),
            });
        }
    }
}

#[test]
fn the_fastest_line_names_the_fastest_strategy_that_held() {
    let mut c = fixture();
    // Three trials each, the fixture's rates ± 1 %: intervals far apart.
    for s in [
        "memory",
        "redis-watchdog",
        "redis-keyspace-naive",
        "zookeeper",
    ] {
        let per_s = c.runs[0]
            .results
            .cases
            .iter()
            .find(|c| c.strategy == s)
            .unwrap()
            .throughput
            .completed_per_s as u64;
        with_baseline_trials(&mut c, s, &[per_s * 99 / 100, per_s, per_s * 101 / 100]);
    }
    let grid = Grid::new(&c);
    let card = lockbench_reports::scorecard::of(&grid, &[]).unwrap();
    let baseline = grid.rows.iter().find(|r| r.label == "baseline").unwrap();
    let best = grid
        .strategies
        .iter()
        .filter(|s| s.is_distributed())
        .filter_map(|s| baseline.case(&s.id))
        .filter(|c| lockbench_reports::grid::violated_of(c).0 == 0)
        .max_by(|a, b| {
            a.throughput
                .completed_per_s
                .total_cmp(&b.throughput.completed_per_s)
        })
        .unwrap();
    assert_eq!(card.headlines[0].0, "Fastest");
    let fastest = &card.headlines[0].1;
    assert!(
        fastest.starts_with(&format!("under baseline, {}:", best.strategy)),
        "{fastest}"
    );
    assert!(
        fastest.contains("its 95 % interval lies above every other's"),
        "{fastest}"
    );
}

#[test]
fn strategies_whose_intervals_overlap_are_named_as_a_tie() {
    let mut c = fixture();
    // 734 ± 4.303 · 30 / √3 = 659–809 and 700 ± 4.303 · 40 / √3 = 601–799 overlap; 422 ± 5 does not.
    with_baseline_trials(&mut c, "redis-watchdog", &[704, 734, 764]);
    with_baseline_trials(&mut c, "zookeeper", &[660, 700, 740]);
    with_baseline_trials(&mut c, "redis-keyspace-naive", &[420, 422, 424]);
    let grid = Grid::new(&c);
    let card = lockbench_reports::scorecard::of(&grid, &[]).unwrap();
    let fastest = &card.headlines[0].1;
    assert_eq!(
        fastest,
        "a tie under baseline: the fastest, redis-watchdog 734 (95 % 659–809), and 1 whose 95 % interval overlaps it (zookeeper 700 (95 % 601–799)), too close to rank on this machine. Cells: the scorecard's CS/s column, baseline × redis-watchdog, zookeeper."
    );
}

/// The fixture with the violated redis-watchdog case of lease-too-short · fixed:1s given `trials`.
fn with_trials(trials: lockbench_reports::model::Trials) -> Comparison {
    let mut c = fixture();
    for run in &mut c.runs {
        for case in &mut run.results.cases {
            if case.strategy == "redis-watchdog" && case.lease == "fixed:1s" {
                case.trials = Some(trials.clone());
            }
        }
    }
    c
}

#[test]
fn a_stopped_cell_has_no_interval_and_a_full_one_has() {
    use lockbench_reports::content::matrix_cell;
    use lockbench_reports::model::Trials;
    let cell = |c: &Comparison| {
        let grid = Grid::new(c);
        let row = grid
            .rows
            .iter()
            .find(|r| r.label == "lease-too-short · fixed:1s")
            .unwrap();
        matrix_cell(row, "redis-watchdog")
    };
    // Stopped at its first (violated) trial: when it broke, no rate.
    let stopped = with_trials(Trials {
        runs: 1,
        violated: 1,
        rate_low: None,
        rate_high: None,
        stopped_early: true,
        fault_not_applied: 0,
        unknown: 0,
        each: Vec::new(),
        stopped_by: None,
    });
    let stopped_cell = cell(&stopped);
    assert_eq!(stopped_cell.text, "broke at trial 1 · data harmed");
    assert_eq!(
        stopped_cell.detail, "",
        "a stopped cell carries no interval"
    );
    assert!(
        stopped_cell
            .note
            .starts_with("broke at trial 1 (stopped there, so no rate)"),
        "{}",
        stopped_cell.note
    );
    let built = lockbench_reports::report::build(input(&stopped)).unwrap();
    let md = lockbench_reports::markdown::render(&built, "charts");
    assert!(
        md.contains("**broke at trial 1 · data harmed** |"),
        "report.md lacks the stopped cell\n{md}"
    );
    assert!(!md.contains("21–100 %"), "an interval over-claims\n{md}");
    // Every trial ran: the rate and its interval.
    let full = with_trials(Trials {
        runs: 3,
        violated: 1,
        rate_low: Some(0.0615),
        rate_high: Some(0.7923),
        stopped_early: false,
        fault_not_applied: 0,
        unknown: 0,
        each: Vec::new(),
        stopped_by: None,
    });
    let full_cell = cell(&full);
    assert_eq!(full_cell.text, "1/3 · data harmed");
    assert_eq!(full_cell.detail, "6–79 %");
}

/// The section "Models against their libraries" from a hand-made file: the fixture's baseline with
/// redis-keyspace-naive posing as a library modelled by redis-watchdog, and what the server saw of
/// each (100 critical sections of 10 ms each: one held lock-second).
#[test]
fn models_against_libraries_renders_from_a_hand_made_file() {
    use lockbench_reports::{html, markdown, report};
    let mut c = fixture();
    c.runs.truncate(1);
    c.strategies[2].counterpart = Some("redis-watchdog".into());
    for case in &mut c.runs[0].results.cases {
        let (renewals, sent, scripts): (u64, u64, &[&str]) = match case.strategy.as_str() {
            "redis-watchdog" => (5, 300, &["aaaaaaaaaa", "bbbbbbbbbb"]),
            "redis-keyspace-naive" => (12, 450, &["aaaaaaaaaa", "cccccccccc"]),
            _ => continue,
        };
        case.safety.lost_updates.completed_writes = 100;
        case.latency.hold.mean_ms = Some(10.0);
        let cost = case.server_cost.as_mut().unwrap();
        cost.renew_calls = Some(renewals);
        cost.client_requests = Some(sent);
        cost.scripts = scripts.iter().map(|s| ((*s).to_owned(), 1)).collect();
    }
    let built = report::build(input(&c)).unwrap();
    let md = markdown::render(&built, "charts");
    for needle in [
        "[Models against their libraries](#models-against-their-libraries)",
        "## Models against their libraries",
        "### redis-watchdog against its libraries",
        "| scenario | figure | redis-watchdog | redis-keyspace-naive |",
        "| baseline | violated / trials | 0/1 | 0/1 |",
        "| baseline | against the model | – | agree |",
        "Fisher's exact test",
        "| baseline | renewal calls / held lock / s | 5.0 | 12 |",
        "| baseline | client requests / CS | 3.0 | 4.5 |",
        "| baseline | scripts (SHA1) | aaaaaaa bbbbbbb | aaaaaaa ccccccc (1 of 2 the model's) |",
    ] {
        assert!(md.contains(needle), "report.md lacks {needle:?}\n{md}");
    }
    let html = html::render(&built);
    for needle in [
        "<h2 id=\"models\">Models against their libraries</h2>",
        "<td>baseline</td><td>renewal calls / held lock / s</td><td>5.0</td><td>12</td>",
    ] {
        assert!(html.contains(needle), "report.html lacks {needle:?}");
    }
    // The same scripts read "same".
    for case in &mut c.runs[0].results.cases {
        if case.strategy == "redis-keyspace-naive" {
            let cost = case.server_cost.as_mut().unwrap();
            cost.scripts = ["aaaaaaaaaa", "bbbbbbbbbb"]
                .iter()
                .map(|s| ((*s).to_owned(), 3))
                .collect();
        }
    }
    let md = markdown::render(&report::build(input(&c)).unwrap(), "charts");
    assert!(
        md.contains("| baseline | scripts (SHA1) | aaaaaaa bbbbbbb | same |"),
        "{md}"
    );
    // 0/10 against 10/10 differs; the cell quotes the scenario's `either` mechanism, and without
    // one it says so.
    use lockbench_reports::model::{Expectation, Trials, Verdict};
    for case in &mut c.runs[0].results.cases {
        let violated = match case.strategy.as_str() {
            "redis-watchdog" => 0,
            "redis-keyspace-naive" => 10,
            _ => continue,
        };
        if violated > 0 {
            case.safety.verdict = Verdict::Violated;
        }
        case.trials = Some(Trials {
            runs: 10,
            violated,
            rate_low: None,
            rate_high: None,
            stopped_early: false,
            fault_not_applied: 0,
            unknown: 0,
            each: Vec::new(),
            stopped_by: None,
        });
    }
    let unexplained = markdown::render(&report::build(input(&c)).unwrap(), "charts");
    assert!(
        unexplained.contains("| baseline | against the model | – | differ, unexplained |"),
        "{unexplained}"
    );
    let scenario = &mut c.runs[0].results.scenario;
    scenario
        .expect
        .insert("redis-keyspace-naive".into(), Expectation::Either);
    scenario.either_mechanisms.insert(
        "redis-keyspace-naive".into(),
        "Its re-take races the waiter's acquire.".into(),
    );
    let md = markdown::render(&report::build(input(&c)).unwrap(), "charts");
    assert!(
        md.contains(
            "| baseline | against the model | – | differ: Its re-take races the waiter's acquire. |"
        ),
        "{md}"
    );
    assert!(
        md.contains("| violated under baseline (differ: Its re-take races the waiter's acquire.) | 10/10 | 0/10 |"),
        "{md}"
    );
}

/// The numbers of `text` in order (`734`, `148.6`, `1`), HTML entities decoded first.
fn numbers(text: &str) -> Vec<String> {
    let text = text
        .replace("&#39;", "'")
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map(|n| n.trim_matches('.'))
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `html` with each tag (and its attributes, such as tooltips) replaced by a space.
fn without_tags(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => {
                in_tag = true;
                out.push(' ');
            }
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// The part of `text` from `start` up to `end` (excluded).
fn between<'t>(text: &'t str, start: &str, end: &str) -> &'t str {
    let from = text.find(start).unwrap_or_else(|| panic!("no {start:?}"));
    let rest = &text[from..];
    &rest[..rest
        .find(end)
        .unwrap_or_else(|| panic!("no {end:?} after {start:?}"))]
}

/// The Markdown and the HTML report of one results file show the same figures, in the same order,
/// on the first screen (scorecard, headline lines) and in the verdict matrix.
#[test]
fn markdown_and_html_agree_on_every_figure() {
    use lockbench_reports::model::{Trial, Trials, Verdict};
    use lockbench_reports::{html, markdown};
    // Every case with three trials of different counts: spreads, k/n cells and intervals to compare.
    let mut c = fixture();
    for run in &mut c.runs {
        for case in &mut run.results.cases {
            let verdict = case.safety.verdict;
            let violated = u32::from(verdict == Verdict::Violated) * 2;
            case.trials = Some(Trials {
                runs: 3,
                violated,
                rate_low: Some(if violated > 0 { 0.2077 } else { 0.0 }),
                rate_high: Some(if violated > 0 { 0.9385 } else { 0.5615 }),
                stopped_early: false,
                fault_not_applied: 0,
                unknown: 0,
                stopped_by: None,
                each: [95, 100, 107]
                    .into_iter()
                    .enumerate()
                    .map(|(seed, completed)| Trial {
                        seed: seed as u64,
                        verdict,
                        reasons: Vec::new(),
                        completed,
                        measured_ms: None,
                    })
                    .collect(),
            });
        }
    }
    let built = report::build(input(&c)).unwrap();
    let md = markdown::render(&built, "charts");
    let html = html::render(&built);
    let md_card = between(&md, "| strategy | CS/s", "\nRun ");
    let html_card = without_tags(between(&html, "<section id=\"scorecard\">", "</section>"));
    let md_matrix = between(&md, "## Breaking points: verdicts", "\nEach cell");
    let md_matrix = &md_matrix[md_matrix.find('|').unwrap()..];
    let html_matrix = without_tags(between(&html, "<table id=\"verdicts\"", "</table>"));
    for (what, md, html) in [
        ("scorecard", md_card, html_card.as_str()),
        ("verdict matrix", md_matrix, html_matrix.as_str()),
    ] {
        let (m, h) = (numbers(md), numbers(html));
        assert!(m.len() > 10, "{what}: too few figures to compare: {m:?}");
        assert_eq!(m, h, "{what}: Markdown and HTML figures differ");
    }
    // The check can fail: one figure changed is a difference (the first CS/s cell: its trials'
    // counts over a third of the pooled 1 s window each, 285–321 CS/s).
    let changed = md_card.replacen("302 (", "303 (", 1);
    assert_ne!(numbers(&changed), numbers(&html_card));
}
