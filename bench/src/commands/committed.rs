//! Scenarios the default suite leaves out for time, shown on its first screen from their committed
//! runs: each a results file in docs/results/, built into the binary, marked with its file, date and
//! commit wherever the report shows it, and never taken for a run of this command.

use lockbench_reports::comparison::SuiteRun;
use lockbench_reports::{Comparison, Results};

use crate::base::stdout::outln;
use crate::commands::suite::Suite;

/// A committed run: the scenario, the file it is read from, and that file's bytes (gzip'd JSON of
/// `lockbench run`).
struct CommittedRun {
    scenario: &'static str,
    file: &'static str,
    gzip: &'static [u8],
}

/// The silent partition that PostgreSQL notices only by keepalive: a namespaced server of its own
/// and three trials a row (about a minute), which the default suite's 20 minutes do not hold. Made
/// by `lockbench run -s postgres-keepalive-partition --strategies
/// postgres-advisory,postgres-lease,jvm-spring-jdbc --trials 3`.
const COMMITTED: [CommittedRun; 1] = [CommittedRun {
    scenario: "postgres-keepalive-partition",
    file: "docs/results/postgres-keepalive-partition.json.gz",
    gzip: include_bytes!("../../../docs/results/postgres-keepalive-partition.json.gz"),
}];

/// What the comparison's own runs are: which suite, and whether the workload, time scale and
/// servers are the ones the committed runs had (the presets', at full time, started by lockbench).
#[derive(Clone, Copy)]
pub(crate) struct Setting {
    /// The suite that ran.
    pub suite: Suite,
    /// `--scenarios` named the scenarios.
    pub selected: bool,
    /// The presets' own workloads at full time, on servers lockbench started.
    pub as_committed: bool,
}

/// Appends to `comparison` the committed runs of the scenarios its suite left out, keeping the cases
/// of the strategies it compares; only for the default suite run as the committed runs were (the
/// presets' workloads, full time, lockbench's own servers). A committed file that cannot be read is a
/// note, not a failure.
pub(crate) fn attach(comparison: &mut Comparison, setting: &Setting) {
    if setting.suite != Suite::Default || setting.selected || !setting.as_committed {
        return;
    }
    for committed in &COMMITTED {
        if comparison
            .runs
            .iter()
            .any(|r| r.results.scenario.name == committed.scenario)
        {
            continue;
        }
        let mut results = match read(committed) {
            Ok(results) => results,
            Err(e) => {
                comparison
                    .notes
                    .push(format!("{}: committed run unreadable: {e}", committed.file));
                continue;
            }
        };
        results
            .cases
            .retain(|c| comparison.strategies.iter().any(|s| s.id == c.strategy));
        if results.cases.is_empty() {
            continue;
        }
        let if_violated = crate::scenarios::load(committed.scenario)
            .ok()
            .and_then(|l| l.file.if_violated);
        let run = SuiteRun {
            if_violated,
            results,
            committed: Some(committed.file.to_owned()),
        };
        outln!(
            "{}: shown from {} (not run here: the default suite's budget does not hold it)",
            run.name(),
            committed.file
        );
        comparison.runs.push(run);
    }
}

fn read(committed: &CommittedRun) -> Result<Results, String> {
    let text = crate::base::output::gunzip_text(committed.gzip).map_err(|e| e.to_string())?;
    Results::from_json(&text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_reports::grid::Grid;
    use lockbench_reports::scorecard::worst_unavailable;

    fn with_postgres_advisory() -> Comparison {
        let mut c = Comparison::read(include_str!(
            "../../../reports/tests/fixtures/compare-quick.json"
        ))
        .expect("fixture");
        let mut row = c.strategies[0].clone();
        row.id = "postgres-advisory".into();
        c.strategies.push(row);
        c
    }

    /// The default suite's comparison gains the committed run, with only its own strategies' cases,
    /// and the scorecard's unavailable column names it with its date; a run of named scenarios or
    /// of the team's own workload does not.
    #[test]
    fn the_default_suite_shows_the_committed_keepalive_partition() {
        let default = Setting {
            suite: Suite::Default,
            selected: false,
            as_committed: true,
        };
        let mut c = with_postgres_advisory();
        let before = c.runs.len();
        attach(&mut c, &default);
        assert_eq!(c.runs.len(), before + 1, "{:?}", c.notes);
        let run = c.runs.last().expect("attached");
        assert_eq!(run.committed.as_deref(), Some(COMMITTED[0].file));
        let strategies: Vec<&str> = run
            .results
            .cases
            .iter()
            .map(|c| c.strategy.as_str())
            .collect();
        assert!(
            strategies.iter().all(|s| *s == "postgres-advisory"),
            "{strategies:?}"
        );
        assert!(!strategies.is_empty());
        let (ms, label, _) = worst_unavailable(&Grid::new(&c), "postgres-advisory")
            .expect("the committed run measured it");
        assert!(ms > 1000.0, "{ms}");
        assert!(
            label.starts_with("postgres-keepalive-partition, committed run of 20"),
            "{label}"
        );

        for setting in [
            Setting {
                selected: true,
                ..default
            },
            Setting {
                as_committed: false,
                ..default
            },
            Setting {
                suite: Suite::Quick,
                ..default
            },
        ] {
            let mut c = with_postgres_advisory();
            attach(&mut c, &setting);
            assert_eq!(c.runs.len(), before);
        }
    }

    /// Every committed run reads, is the scenario it names, and is complete.
    #[test]
    fn the_committed_runs_read() {
        for committed in &COMMITTED {
            let results = read(committed).expect("a committed run reads");
            assert_eq!(results.scenario.name, committed.scenario);
            assert!(results.complete, "{}", committed.file);
            assert!(!results.cases.is_empty());
        }
    }
}
