//! The binary's command line: help, listings, stubs, and bad input — which must give exactly one
//! error line, exit code 2, and be caught before anything is measured.

#![allow(clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

use support::run;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `args`, expects exit code 2, nothing on stdout, one line on stderr containing `needle`, no
/// output directory left behind (not even an empty one), and a quick exit (nothing was measured).
fn usage_error(args: &[&str], needle: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let mut full: Vec<&str> = args.to_vec();
    let out_text = out_dir.to_string_lossy().into_owned();
    if args.first() == Some(&"run") && !args.contains(&"--out") {
        full.extend(["--out", &out_text]);
    }
    let began = Instant::now();
    let out = run(&full);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        out.stdout.is_empty(),
        "{args:?} printed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        err.lines().count(),
        1,
        "{args:?}: one line expected:\n{err}"
    );
    assert!(err.starts_with("lockbench: "), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err:?} lacks {needle:?}");
    assert!(
        !out_dir.exists(),
        "{args:?} left its output directory behind"
    );
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{args:?} took {:?}",
        began.elapsed()
    );
}

#[test]
fn help_and_version() {
    let out = run(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    for command in [
        "strategies",
        "scenarios",
        "run",
        "compare",
        "report",
        "worker",
    ] {
        assert!(help.contains(command), "{help}");
    }
    let out = run(&["run", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--scenario"));
    let out = run(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("lockbench "));
}

#[test]
fn listings() {
    let out = run(&["strategies"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("memory "), "{text}");
    assert!(
        text.contains("capabilities: reentrant fencing auto_renew fixed_lease"),
        "{text}"
    );
    let out = run(&["scenarios"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    for preset in ["baseline", "long-tail", "lease-too-short", "overhead"] {
        let line = text
            .lines()
            .find(|l| l.starts_with(preset))
            .unwrap_or_else(|| panic!("{preset}: {text}"));
        assert!(
            line.len() > preset.len() + 20,
            "{preset} has a description: {line}"
        );
    }
}

#[test]
fn unknown_names_and_arguments() {
    usage_error(&["frobnicate"], "unrecognized subcommand");
    usage_error(&["run", "--bogus"], "unexpected argument '--bogus'");
    usage_error(
        &["run", "--strategies", "redis-nope"],
        "unknown strategy 'redis-nope'; known: memory",
    );
    usage_error(&["run", "--strategies", ""], "strategies:");
    usage_error(
        &["run", "--scenario", "no-such-scenario"],
        "unknown scenario 'no-such-scenario'",
    );
}

#[test]
fn clap_errors_keep_the_argument_and_the_suggestion() {
    usage_error(
        &["report"],
        "the following required arguments were not provided: <RESULTS.json> (see --help)",
    );
    usage_error(
        &["run", "--clinets", "3"],
        "unexpected argument '--clinets' found; tip: a similar argument exists: '--clients'",
    );
    usage_error(&["reprot"], "tip: a similar subcommand exists: 'report'");
}

#[test]
fn misspelled_names_get_a_suggestion() {
    usage_error(
        &["run", "--strategies", "memory,redis-watchdg"],
        "unknown strategy 'redis-watchdg'; did you mean 'redis-watchdog'?",
    );
    usage_error(
        &["run", "--scenario", "proces-pause"],
        "did you mean 'process-pause'?",
    );
    usage_error(
        &["compare", "--scenarios", "lease-to-short"],
        "--scenarios: 'lease-to-short' is not in the suite; did you mean 'lease-too-short'?",
    );
}

#[test]
fn negative_numbers_are_named_as_such() {
    usage_error(
        &["run", "--clients", "-1"],
        "invalid value '-1' for '--clients <N>': must not be negative",
    );
    usage_error(&["run", "--keys=-2"], "'--keys <N>': must not be negative");
    usage_error(&["run", "--rate", "-5"], "rate: must be a positive number");
    usage_error(
        &["compare", "--trials", "-3"],
        "'--trials <N>': must not be negative",
    );
    usage_error(
        &["scale", "--concurrency", "-1"],
        "'--concurrency <N>': must not be negative",
    );
    usage_error(&["scale", "--hold", "-1s"], "--hold");
}

#[test]
fn bad_values_name_their_field() {
    usage_error(&["run", "--clients", "0"], "clients: must be");
    usage_error(&["run", "--keys", "0"], "keys: must be 1..=");
    // Bounds named where they are parsed: never an overflow, an allocation failure or a fork bomb.
    usage_error(
        &["run", "--keys", "4000000000"],
        "keys: must be 1..=1000000",
    );
    usage_error(
        &["run", "--workers", "processes", "--clients", "10000"],
        "clients: at most 256 with workers = processes",
    );
    usage_error(
        &["run", "--strategies", "memory", "--duration", "1000y"],
        "limit of 30 days",
    );
    usage_error(&["run", "--warmup", "100000h"], "limit of 30 days");
    usage_error(&["run", "--clients", "lots"], "invalid value 'lots'");
    usage_error(
        &["run", "--duration=-5s"],
        "duration: duration must not be negative",
    );
    usage_error(
        &["run", "--duration", "soon"],
        "duration: expected a duration",
    );
    usage_error(
        &["run", "--warmup", "-1s"],
        "warmup: duration must not be negative",
    );
    usage_error(&["run", "--think", "5 parsecs"], "think:");
    usage_error(
        &["run", "--task", "50% 1ms"],
        "task: mix weights add up to 50%",
    );
    usage_error(
        &["run", "--leases", "forever"],
        "leases: expected watchdog or fixed",
    );
    usage_error(
        &["run", "--leases", "fixed:0s"],
        "leases: a fixed lease must be longer than 0",
    );
    usage_error(
        &["run", "--workers", "threads"],
        "workers: expected tasks, processes or remote",
    );
    usage_error(
        &["run", "--on-lost", "panic"],
        "on_lost: expected abort or ignore",
    );
    usage_error(&["run", "--rate", "0"], "rate: must be a positive number");
}

#[test]
fn bad_scenario_files() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mine.toml");
    std::fs::write(&file, "clients = 2\ncolour = \"blue\"\n").unwrap();
    usage_error(
        &["run", "--scenario", file.to_str().unwrap()],
        "line 2 (colour = \"blue\"): unknown field `colour`",
    );
    std::fs::write(&file, "clients = -3\n").unwrap();
    usage_error(
        &["run", "--scenario", file.to_str().unwrap()],
        "line 1 (clients = -3)",
    );
    std::fs::write(&file, "# to do\n\n").unwrap();
    usage_error(
        &["run", "--scenario", file.to_str().unwrap()],
        "mine.toml: empty",
    );
}

#[test]
fn memory_cannot_run_in_worker_processes() {
    usage_error(
        &["run", "--strategies", "memory", "--workers", "processes"],
        "strategy memory cannot run with workers = processes",
    );
}

#[test]
fn unreachable_servers_are_caught_before_running() {
    // Port 1 on loopback refuses connections. The check covers every address given, whatever the
    // strategies, with one code path for every server kind.
    usage_error(
        &[
            "run",
            "--strategies",
            "memory",
            "--redis",
            "redis://127.0.0.1:1",
        ],
        "--redis redis://127.0.0.1:1: cannot connect to 127.0.0.1:1",
    );
    usage_error(
        &[
            "run",
            "--strategies",
            "memory",
            "--etcd",
            "http://127.0.0.1:1",
        ],
        "--etcd http://127.0.0.1:1: cannot connect",
    );
    usage_error(
        &["run", "--strategies", "memory", "--zk", "127.0.0.1:1"],
        "--zk 127.0.0.1:1: cannot connect",
    );
    usage_error(
        &["run", "--strategies", "memory", "--redis", "redis://"],
        "--redis redis://: no host",
    );
}

#[test]
fn unwritable_output_is_caught_before_running() {
    usage_error(
        &[
            "run",
            "--strategies",
            "memory",
            "--out",
            "/proc/lockbench/x",
        ],
        "output directory /proc/lockbench/x",
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "x").unwrap();
    usage_error(
        &[
            "run",
            "--strategies",
            "memory",
            "--out",
            file.to_str().unwrap(),
        ],
        "exists and is not a directory",
    );
}

/// `report NEW --baseline OLD --fail-on …`: the CI gate. The fixture's baseline scenario (kept
/// alone: fewer charts to draw) against itself changes nothing; a copy with one case violated fails
/// `--fail-on violation`; a copy with one case at half the throughput fails only
/// `--fail-on regression`.
#[test]
fn baseline_changes_gate_ci() {
    let fixture = include_str!("../../reports/tests/fixtures/compare-quick.json");
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, edit: &dyn Fn(&mut serde_json::Value)| {
        let mut doc: serde_json::Value = serde_json::from_str(fixture).unwrap();
        doc["runs"].as_array_mut().unwrap().truncate(1);
        edit(&mut doc["runs"][0]["results"]["cases"][1]);
        let path = dir.path().join(name);
        std::fs::write(&path, doc.to_string()).unwrap();
        path.to_string_lossy().into_owned()
    };
    let old = write("old.json", &|_| {});
    let broken = write("broken.json", &|case| {
        case["safety"]["verdict"] = "violated".into();
        case["safety"]["overlap"]["pairs"] = 1.into();
    });
    let slower = write("slower.json", &|case| {
        let half = case["throughput"]["completed_per_s"].as_f64().unwrap() / 2.0;
        case["throughput"]["completed_per_s"] = half.into();
    });
    let out = dir.path().join("out").to_string_lossy().into_owned();
    let report = |new: &str, fail_on: &str| {
        let result = run(&[
            "report",
            new,
            "--baseline",
            &old,
            "--fail-on",
            fail_on,
            "--out",
            &out,
        ]);
        let stdout = String::from_utf8_lossy(&result.stdout).into_owned();
        (result.status.code(), stdout, stderr(&result))
    };

    let (code, stdout, err) = report(&old, "violation");
    assert_eq!(code, Some(0), "{err}");
    assert!(
        stdout.contains("0 of 4 cases changed beyond noise; 0 new violations"),
        "{stdout}"
    );
    // A results directory stands for its results.json, as the baseline too.
    let old_dir = dir.path().join("old-run");
    std::fs::create_dir(&old_dir).unwrap();
    std::fs::copy(&old, old_dir.join("results.json")).unwrap();
    let by_dir = run(&[
        "report",
        &old,
        "--baseline",
        old_dir.to_str().unwrap(),
        "--out",
        &out,
    ]);
    assert_eq!(by_dir.status.code(), Some(0), "{}", stderr(&by_dir));

    let (code, stdout, err) = report(&broken, "violation");
    assert_eq!(code, Some(1), "{stdout}{err}");
    assert!(
        stdout.contains("1 of 4 cases changed beyond noise; 1 new violation\n"),
        "{stdout}"
    );
    assert!(err.contains("--fail-on violation: 1 found"), "{err}");
    let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(
        html.contains("3 within noise are not"),
        "only the changed row"
    );

    let (code, stdout, err) = report(&slower, "violation");
    assert_eq!(code, Some(0), "a slowdown is no violation: {stdout}{err}");
    assert!(stdout.contains("1 of 4 cases changed beyond noise (1 slower)"));
    let (code, _, err) = report(&slower, "regression");
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("--fail-on regression: 1 found"), "{err}");

    usage_error(
        &["report", &old, "--fail-on", "regression"],
        "--baseline OLD",
    );
    usage_error(
        &["report", &old, "--baseline", &old, "--fail-on", "violatoin"],
        "expected regression, violation, contradiction or a limit such as p99>200ms",
    );

    // Without a baseline, `violation` is any violated case, and a limit bounds every complete case
    // of the scenario it names.
    let gate = |file: &str, fail_on: &str| {
        let result = run(&["report", file, "--fail-on", fail_on, "--out", &out]);
        (result.status.code(), stderr(&result))
    };
    let (code, err) = gate(&broken, "violation,baseline:cs/s<1000000");
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("--fail-on violation: 1 found this run"),
        "{err}"
    );
    assert!(
        err.contains("--fail-on baseline:cs/s<1000000: 4 found this run\n  baseline · "),
        "{err}"
    );
    assert!(
        err.contains(" cs/s\n"),
        "each breach with its figure: {err}"
    );
    assert_eq!(gate(&old, "violation,baseline:cs/s<0.5,p99>1h").0, Some(0));
    usage_error(
        &["report", &old, "--fail-on", "nope:p99>1s"],
        "scenario 'nope' is not among the scenarios here",
    );
    usage_error(&["report", &old, "--fail-on", "p98>1s"], "unknown metric");
    usage_error(
        &["compare", "--fail-on", "baseline:p99>soon"],
        "is not a duration",
    );
    usage_error(&["compare", "--fail-on", "contradiction"], "--baseline OLD");
}

/// `report DIR` reads DIR/results.json and, without `--scale`, the many-locks passes `compare` wrote
/// beside it (DIR/runs/many-locks/scale.json): a strategy that lost leases in two of its three passes
/// is flagged in the verdict matrix and the scorecard, with each pass's count; one that lost them in
/// one pass reads "sometimes" and is not flagged; a strategy the pass left out says why.
#[test]
fn report_reads_a_results_directory_and_flags_only_a_repeated_many_locks_loss() {
    let dir = tempfile::tempdir().unwrap();
    let mut results: serde_json::Value = serde_json::from_str(include_str!(
        "../../reports/tests/fixtures/compare-quick.json"
    ))
    .unwrap();
    results["runs"].as_array_mut().unwrap().truncate(1);
    // What `compare` now records of a strategy its many-locks pass leaves out.
    results["strategies"][2]["not_at_scale"] =
        "locks lost and re-taken at every expiry by design: a held count means nothing".into();
    std::fs::write(dir.path().join("results.json"), results.to_string()).unwrap();
    let mut scale: serde_json::Value = serde_json::from_str(include_str!(
        "../../reports/tests/fixtures/scale-redis.json"
    ))
    .unwrap();
    scale["settings"]["passes"] = 3.into();
    // Three passes of each series: the first is its points, the others its repeats.
    let with_losses = |series: &serde_json::Value, losses: [(u64, u64); 3]| {
        let pass = |(lost, failed): (u64, u64)| {
            let mut points = series["points"].clone();
            let last = points.as_array_mut().unwrap().last_mut().unwrap();
            last["lost"] = lost.into();
            last["renew_failures"] = failed.into();
            serde_json::json!({"points": points, "stopped": series["stopped"].clone()})
        };
        let mut series = series.clone();
        let first = pass(losses[0]);
        series["points"] = first["points"].clone();
        series["repeats"] = serde_json::json!([pass(losses[1]), pass(losses[2])]);
        series
    };
    let strategies = scale["strategies"].as_array_mut().unwrap();
    let mut watchdog = with_losses(&strategies[0], [(107, 17159), (12, 0), (0, 0)]);
    watchdog["strategy"] = "redis-watchdog".into();
    let mut zookeeper = with_losses(&strategies[0], [(0, 0), (36, 2380), (0, 0)]);
    zookeeper["strategy"] = "zookeeper".into();
    *strategies = vec![watchdog, zookeeper];
    let many = dir.path().join("runs/many-locks");
    std::fs::create_dir_all(&many).unwrap();
    std::fs::write(many.join("scale.json"), scale.to_string()).unwrap();
    let result = run(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(result.status.code(), Some(0), "{}", stderr(&result));
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    let flagged = "LOSES LOCKS: lost locks in 2 of 3 passes: 107, 12, 0 of 300; failed renewals \
                   in 1 of 3 passes: 17159, 0, 0";
    assert_eq!(md.matches(flagged).count(), 2, "scorecard and matrix: {md}");
    assert_eq!(
        md.matches(&format!("**{flagged}**")).count(),
        1,
        "bold in the matrix"
    );
    let sometimes = "sometimes: 1 of 3 passes lost 36 of 300 (2380 failed renewals)";
    assert_eq!(md.matches(sometimes).count(), 2, "{md}");
    assert!(!md.contains(&format!("**{sometimes}")), "not flagged: {md}");
    assert!(md.contains(
        "**Losses at scale:** holding many locks, redis-watchdog lost leases or failed renewals \
         in 2 or more passes"
    ));
    assert!(
        md.contains("locks lost and re-taken at every expiry by design"),
        "{md}"
    );
    assert!(
        md.contains("no lock server: not measured at scale"),
        "memory: {md}"
    );
    assert!(md.contains("| many-locks |"), "{md}");
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(
        html.contains(&format!("<td class=\"violated\">{flagged}</td>")),
        "the matrix cell is red"
    );
    assert!(
        html.contains(&format!("<td class=\"other\">{sometimes}</td>")),
        "a one-off is neither red nor green"
    );
}

#[test]
fn bad_workloads_for_compare_are_caught_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    for (name, text, needle) in [
        (
            "unknown.toml",
            "clients = 4\ncolour = \"blue\"",
            "unknown field `colour`",
        ),
        ("bad.toml", "think = \"soon\"", "think: expected a duration"),
        (
            "negative.toml",
            "acquire_wait = \"-1s\"",
            "acquire_wait: duration must not be negative",
        ),
        (
            "ttl.toml",
            "watchdog_timeout = \"2ttl\"",
            "watchdog_timeout: \"2ttl\" is relative",
        ),
    ] {
        let path = file(name, text);
        usage_error(&["compare", "--workload", &path, "--out", out], needle);
    }
    usage_error(
        &["compare", "--time-scale", "0", "--out", out],
        "--time-scale: must be a number from 0.1 to 1000",
    );
    usage_error(
        &["compare", "--think", "0.5task", "--out", out],
        "think: \"0.5task\" is relative",
    );
}

/// `report FILE --section NAME` prints that section of the Markdown report alone and writes nothing;
/// a gzip'd results file is read like a plain one; a section the file has no data for, or a name
/// that is no section, is one line (the latter listing the names).
#[test]
fn report_prints_one_section() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.json.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(include_bytes!(
        "../../reports/tests/fixtures/compare-quick.json"
    ))
    .unwrap();
    std::fs::write(&path, gz.finish().unwrap()).unwrap();
    let file = path.to_str().unwrap();
    let out = run(&["report", file, "--section", "verdicts"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("## Breaking points: verdicts\n"), "{text}");
    assert!(text.contains("| baseline |"), "{text}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "nothing written beside the results file"
    );
    usage_error(
        &["report", file, "--section", "verdict"],
        "[possible values: scorecard, verdicts, which, redlock, peers, models, cost]",
    );
    usage_error(
        &["report", file, "--section", "peers"],
        "no data for section peers",
    );
}

/// Every visible long flag of every subcommand, as `(subcommand, flag, value name)`: what a user
/// reads in `--help` (hidden flags and hidden aliases left out).
fn visible_long_flags() -> Vec<(String, String, String)> {
    use clap::CommandFactory as _;
    let cli = lockbench::Cli::command();
    let mut flags = Vec::new();
    for command in cli.get_subcommands() {
        for arg in command.get_arguments().filter(|a| !a.is_hide_set()) {
            let value = arg
                .get_value_names()
                .map(|names| names.join(" "))
                .unwrap_or_default();
            for long in arg
                .get_long()
                .into_iter()
                .chain(arg.get_visible_aliases().into_iter().flatten())
            {
                flags.push((
                    command.get_name().to_owned(),
                    long.to_owned(),
                    value.clone(),
                ));
            }
        }
    }
    flags
}

/// One dialect (the rule at the top of bench/src/cli.rs): no underscore in a flag; no concept spelled
/// two ways across commands (`--warmup` beside `--warm-up`); a flag taking a comma-separated LIST
/// is plural, as the workload file's field is (`--leases`, not `--lease`).
#[test]
fn every_flag_speaks_one_dialect() {
    let flags = visible_long_flags();
    assert!(flags.len() > 40, "flags found: {flags:?}");
    let mut problems = Vec::new();
    let mut spellings: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        std::collections::BTreeMap::new();
    for (command, flag, value) in &flags {
        if flag.contains('_') || flag.chars().any(|c| c.is_ascii_uppercase()) {
            problems.push(format!(
                "{command} --{flag}: write it lower-case, words joined by '-'"
            ));
        }
        if value == "LIST" && !flag.ends_with('s') {
            problems.push(format!("{command} --{flag} {value}: a list flag is plural"));
        }
        spellings
            .entry(flag.replace('-', ""))
            .or_default()
            .insert(format!("--{flag}"));
    }
    for (_, spelled) in spellings.iter().filter(|(_, s)| s.len() > 1) {
        problems.push(format!("one concept, two spellings: {spelled:?}"));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The spellings replaced by the dialect still parse, as hidden aliases: old command lines work.
#[test]
fn old_spellings_still_parse() {
    use clap::Parser as _;
    for argv in [
        &["lockbench", "run", "--warm-up", "1s", "--lease", "watchdog"][..],
        &["lockbench", "run", "--warmup", "1s", "--leases", "watchdog"],
        &["lockbench", "scale", "--warm-up", "1s"],
        &["lockbench", "scale", "--warmup", "1s"],
        &[
            "lockbench",
            "compare",
            "--scenario",
            "baseline",
            "--lease",
            "watchdog",
        ],
        &[
            "lockbench",
            "compare",
            "-s",
            "baseline,long-tail",
            "--leases",
            "watchdog",
        ],
    ] {
        if let Err(e) = lockbench::Cli::try_parse_from(argv) {
            panic!("{argv:?}: {e}");
        }
    }
    for (command, old) in [
        ("run", "--warm-up"),
        ("run", "--lease "),
        ("scale", "--warm-up"),
        ("compare", "--lease "),
        ("compare", "--scenario "),
    ] {
        let help = String::from_utf8_lossy(&run(&[command, "--help"]).stdout).into_owned();
        assert!(!help.contains(old), "{command} --help shows {old}:\n{help}");
    }
}

/// Every command's help ends with examples, and states the syntax of the values it takes: `compare`
/// takes `--task` and durations as `run` does, so its help shows their syntax too.
#[test]
fn every_help_has_examples_and_its_syntax() {
    use clap::CommandFactory as _;
    let cli = lockbench::Cli::command();
    let mut commands = vec![Vec::new()];
    commands.extend(
        cli.get_subcommands()
            .filter(|c| !c.is_hide_set())
            .map(|c| vec![c.get_name().to_owned()]),
    );
    assert!(commands.len() >= 8, "{commands:?}");
    for command in &commands {
        let mut args: Vec<&str> = command.iter().map(String::as_str).collect();
        args.push("--help");
        let out = run(&args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(
            help.contains("\nExamples") && help.contains(":\n  lockbench "),
            "{args:?} has no examples:\n{help}"
        );
    }
    for command in ["run", "compare"] {
        let help = String::from_utf8_lossy(&run(&[command, "--help"]).stdout).into_owned();
        for syntax in [
            "DURATIONS are humantime: 500ms",
            "TASK distributions: 50ms | uniform 10ms..100ms",
            "LEASES: watchdog | fixed:<duration>",
        ] {
            assert!(
                help.contains(syntax),
                "{command} --help lacks {syntax:?}:\n{help}"
            );
        }
    }
}

/// `lockbench scenarios` says which suites of `compare` run each scenario (read from the suite), and
/// which run only by name; `compare --help` says how long `--thorough` takes.
#[test]
fn scenarios_name_their_suites() {
    let out = run(&["scenarios"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name}: {text}"))
            .to_owned()
    };
    assert!(line("scenario").contains("suites"), "a header: {text}");
    for (name, suites) in [
        ("baseline", "quick, default, full, thorough"),
        ("cpu-starvation", "default, full, thorough"),
        ("renewal-error", "full, thorough"),
        ("many-locks", "default, full, thorough"),
        ("overhead", "by name only"),
    ] {
        let found = line(name);
        assert!(found.contains(&format!("  {suites}  ")), "{name}: {found}");
    }
    let help = String::from_utf8_lossy(&run(&["compare", "--help"]).stdout).into_owned();
    let thorough = help
        .lines()
        .skip_while(|l| !l.contains("--thorough"))
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        thorough.contains("hours"),
        "--thorough states its time: {thorough}"
    );
}

/// The console holds progress and findings: the driver's own cost per cycle prints only with
/// `-v`/`--verbose` (a global flag, before or after the command).
#[test]
fn diagnostics_print_only_when_verbose() {
    let driver_lines = |verbose: &[&str]| {
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("out");
        let mut args = verbose.to_vec();
        args.extend([
            "run",
            "--strategies",
            "memory",
            "--duration",
            "300ms",
            "--warmup",
            "0s",
            "--no-progress",
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(stdout.contains("results: "), "{stdout}");
        stdout
            .lines()
            .filter(|l| l.contains("driver overhead"))
            .count()
    };
    assert_eq!(driver_lines(&[]), 0, "no diagnostics by default");
    assert!(driver_lines(&["-v"]) > 0, "-v shows the driver's overhead");
    assert!(driver_lines(&["--verbose"]) > 0);
}

/// The fields of one CSV record (RFC 4180: a quoted field may hold commas and doubled quotes).
fn csv_fields(record: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let (mut quoted, mut chars) = (false, record.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                fields.last_mut().unwrap().push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(String::new()),
            (c, _) => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

/// `report RESULTS --format csv` writes scorecard.csv and verdicts.csv beside report.md: a header row
/// and one row per strategy, every row as wide as its header, CRLF line ends.
#[test]
fn report_writes_its_tables_as_csv() {
    let dir = tempfile::tempdir().unwrap();
    let mut results: serde_json::Value = serde_json::from_str(include_str!(
        "../../reports/tests/fixtures/compare-quick.json"
    ))
    .unwrap();
    results["runs"].as_array_mut().unwrap().truncate(1);
    let mut strategies: Vec<String> = results["runs"][0]["results"]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["strategy"].as_str().unwrap().to_owned())
        .collect();
    strategies.dedup();
    let file = dir.path().join("results.json");
    std::fs::write(&file, results.to_string()).unwrap();
    let out = run(&["report", file.to_str().unwrap(), "--format", "csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("scorecard.csv"));
    assert!(dir.path().join("report.md").is_file());
    for (name, first) in [
        (
            "scorecard.csv",
            "strategy,CS/s (95 % interval),acquire p99 ms",
        ),
        (
            "verdicts.csv",
            "strategy,baseline: violated,baseline: trials,baseline: 95% interval,baseline: verdict",
        ),
    ] {
        let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert!(
            text.ends_with("\r\n") && !text.contains("\n\n"),
            "{name}: {text:?}"
        );
        let lines: Vec<&str> = text.split_terminator("\r\n").collect();
        assert!(lines[0].starts_with(first), "{name}: {}", lines[0]);
        let width = csv_fields(lines[0]).len();
        let rows: Vec<String> = lines[1..]
            .iter()
            .map(|l| {
                let fields = csv_fields(l);
                assert_eq!(fields.len(), width, "{name}: {l}");
                fields[0].clone()
            })
            .collect();
        // One row per strategy; the yardstick (`memory`, never ranked) is set apart, last.
        let mut ids: Vec<String> = rows
            .iter()
            .map(|r| r.trim_end_matches(" (yardstick)").to_owned())
            .collect();
        assert_eq!(
            ids.last().map(String::as_str),
            Some("memory"),
            "{name}: {rows:?}"
        );
        ids.sort();
        let mut expected = strategies.clone();
        expected.sort();
        assert_eq!(ids, expected, "{name}: one row per strategy");
    }
    let verdicts = std::fs::read_to_string(dir.path().join("verdicts.csv")).unwrap();
    let memory = verdicts
        .split_terminator("\r\n")
        .find(|l| l.starts_with("memory,") || l.starts_with("memory (yardstick),"));
    let memory = csv_fields(memory.unwrap());
    assert_eq!(
        (memory[1].as_str(), memory[4].as_str()),
        ("0", "safe"),
        "{memory:?}"
    );
    assert!(memory[2].parse::<u32>().unwrap() >= 1, "{memory:?}");
    usage_error(
        &["report", file.to_str().unwrap(), "--format", "xlsx"],
        "[possible values: csv]",
    );
}

/// Runs `args` with a stdout whose reader goes away: before reading anything when `read_first` is
/// false (every write then meets a closed pipe), after one line otherwise (as `| head -1`). Returns
/// the exit code and stderr.
fn with_closed_stdout(args: &[&str], read_first: bool) -> (Option<i32>, String) {
    use std::io::BufRead as _;
    use std::process::Stdio;
    let mut child = support::lockbench()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    if read_first {
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .unwrap();
        assert!(!line.is_empty(), "{args:?} printed nothing");
    } else {
        drop(stdout);
    }
    let out = child.wait_with_output().unwrap();
    (out.status.code(), stderr(&out))
}

/// A reader that closes early (`lockbench scenarios | head -1`) ends a command quietly: exit 0 and
/// nothing on stderr, never "panicked" or "Broken pipe"; `report DIR` still writes its reports.
#[test]
fn a_closed_stdout_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.json");
    std::fs::write(
        &results,
        include_str!("../../reports/tests/fixtures/compare-quick.json"),
    )
    .unwrap();
    let results = results.to_str().unwrap();
    let commands: [&[&str]; 11] = [
        &["scenarios"],
        &["completions", "bash"],
        &["man"],
        &["strategies"],
        &["strategies", "--peers"],
        &["--help"],
        &["run", "--help"],
        &["compare", "--help"],
        &["--version"],
        &["report", results, "--section", "verdicts"],
        &["report", results],
    ];
    for args in commands {
        for read_first in [false, true] {
            let (code, err) = with_closed_stdout(args, read_first);
            assert!(
                !err.contains("panicked") && !err.contains("Broken pipe"),
                "{args:?}: {err}"
            );
            assert_eq!(code, Some(0), "{args:?} (read first: {read_first}): {err}");
            assert_eq!(err, "", "{args:?}: stderr should be empty");
        }
    }
    assert!(dir.path().join("report.md").exists());
    assert!(dir.path().join("report.html").exists());
}

/// `compare --time-scale` takes decimals and prints them and the durations they make as written,
/// without float noise; a bad value (zero, negative, not a number, infinite, absurdly large, too
/// many decimals) is one line and exit 2 before any server starts.
#[test]
fn time_scale_takes_decimals_and_refuses_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    for bad in [
        "0",
        "-1",
        "-0.5",
        "NaN",
        "inf",
        "-inf",
        "abc",
        "",
        "1e3",
        "1e999",
        "100000",
        "99999999999999999999999",
        "0.0001",
    ] {
        usage_error(
            &["compare", "--time-scale", bad, "--out", out],
            "--time-scale: ",
        );
    }
    // A server that is not there stops the command before anything runs, after the plan is printed.
    for (scale, ttl, task) in [
        ("2.25", "13333ms", "4444us"),
        ("0.5", "1m", "20ms"),
        ("1.5", "20s", "6667us"),
        ("10", "3s", "1ms"),
    ] {
        let result = run(&[
            "compare",
            "--quick",
            "--scenarios",
            "baseline",
            "--strategies",
            "redis-watchdog",
            "--redis",
            "redis://127.0.0.1:1",
            "--watchdog-timeout",
            "30s",
            "--task",
            "10ms",
            "--time-scale",
            scale,
            "--out",
            out,
        ]);
        let err = stderr(&result);
        assert_eq!(result.status.code(), Some(2), "{scale}: {err}");
        assert!(err.contains("--redis"), "{scale}: {err}");
        let plan = String::from_utf8_lossy(&result.stdout);
        let expected = format!(
            "Your workload at 1/{scale} time: a 30s TTL run as {ttl}, a 10ms task as {task}."
        );
        assert!(plan.contains(&expected), "{scale}: {plan}");
        assert!(plan.contains(&format!("divided by {scale} ")), "{plan}");
        assert!(
            plan.contains("baseline: 1 cases"),
            "{scale}: no case skipped: {plan}"
        );
        assert!(
            !plan.contains("0000000") && !plan.contains("9999999"),
            "{plan}"
        );
        assert!(
            !std::path::Path::new(out).exists(),
            "{scale} left its output directory"
        );
    }
}

/// `lockbench completions SHELL` prints a completion script naming the commands, for every shell
/// clap_complete knows; `lockbench man` prints a roff page opening with its `.TH` line; a shell that is
/// not one of them is one error line, exit 2.
#[test]
fn completions_and_the_man_page() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = run(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", stderr(&out));
        let script = String::from_utf8(out.stdout).unwrap();
        for word in ["lockbench", "compare", "scenarios", "time-scale"] {
            assert!(script.contains(word), "{shell} lacks {word}:\n{script}");
        }
        assert!(
            out.stderr.is_empty(),
            "{shell}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = run(&["man"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.starts_with(".TH lockbench 1 "), "{page}");
    for part in [
        ".SH NAME",
        ".SH SYNOPSIS",
        "compare",
        "completions",
        "Examples:",
    ] {
        assert!(page.contains(part), "the man page lacks {part}:\n{page}");
    }
    assert!(page.ends_with('\n'));
    usage_error(
        &["completions", "tcsh"],
        "[possible values: bash, elvish, fish, powershell, zsh]",
    );
    usage_error(&["completions"], "<SHELL>");
    usage_error(&["man", "extra"], "unexpected argument 'extra'");
}
