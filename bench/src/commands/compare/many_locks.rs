//! The many-locks entry of the suite: a short `lockbench scale` pass holding 10,000 locks, in
//! [`MANY_LOCKS_PASSES`] passes of every chosen strategy that can hold many locks, read back as the
//! cost series the report's many-locks cells and charts draw.

use std::path::Path;

use lockbench_reports::scale::{CostSeries, ScaleResults};

use crate::backends::GivenAddresses;
use crate::base::error::BenchError;
use crate::commands::scale::{self, ScaleOptions, ScaleRequest};
use crate::commands::suite::{
    MANY_LOCKS, MANY_LOCKS_HOLD, MANY_LOCKS_PASSES, MANY_LOCKS_STEP_BUDGET, MANY_LOCKS_STEPS,
};
use crate::strategies::{Strategy, StrategyChoice};

/// Runs the many-locks entry: `lockbench scale` holding 10k locks, [`MANY_LOCKS_PASSES`] passes of
/// every strategy with a server; its cost series feed the report's many-locks cells (every pass) and
/// its cost-against-held-locks charts (the first).
pub(super) async fn many_locks(
    servers: &GivenAddresses,
    at_scale: &[&'static Strategy],
    out_dir: &Path,
) -> Result<Vec<CostSeries>, BenchError> {
    let dir = out_dir.join("runs").join(MANY_LOCKS);
    scale::command(many_locks_request(servers, at_scale, &dir)?).await?;
    let text = std::fs::read_to_string(dir.join(scale::SCALE_FILE))
        .map_err(|e| BenchError::failed(format!("many-locks: {e}")))?;
    ScaleResults::from_json(&text)
        .map(|s| s.cost_series())
        .map_err(|e| BenchError::failed(format!("many-locks: {e}")))
}

/// The `lockbench scale` run of the many-locks entry, writing into `dir`: `at_scale`, the chosen
/// strategies that can hold many locks ([`Strategy::not_at_scale`], as the plan picked them), each in
/// [`MANY_LOCKS_PASSES`] passes.
fn many_locks_request(
    servers: &GivenAddresses,
    at_scale: &[&'static Strategy],
    dir: &Path,
) -> Result<ScaleRequest, BenchError> {
    if at_scale.is_empty() {
        return Err(BenchError::usage(
            "many-locks: none of the chosen strategies has a lock server",
        ));
    }
    let chosen = at_scale
        .iter()
        .fold(StrategyChoice::default(), |choice, s| choice.with_named(s));
    Ok(ScaleRequest {
        options: ScaleOptions {
            strategies: Some(chosen),
            steps: MANY_LOCKS_STEPS.to_owned(),
            hold: MANY_LOCKS_HOLD.to_owned(),
            step_budget: MANY_LOCKS_STEP_BUDGET.to_owned(),
            passes: MANY_LOCKS_PASSES,
            // The cost chart needs no yardstick.
            yardstick: false,
            ..ScaleOptions::default()
        },
        out: Some(dir.to_path_buf()),
        servers: servers.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_locks_holds_ten_thousand_locks_in_three_passes_of_the_strategies_that_can() {
        let dir = Path::new("many-locks");
        let list = "redis-watchdog,postgres-advisory,memory,redis-keyspace-naive,zookeeper";
        let at_scale: Vec<&'static Strategy> = StrategyChoice::parse(list)
            .expect("a list")
            .entries()
            .iter()
            .copied()
            .filter(|s| s.not_at_scale().is_none())
            .collect();
        let request =
            many_locks_request(&GivenAddresses::default(), &at_scale, dir).expect("a request");
        let options = &request.options;
        let chosen: Vec<&str> = options
            .strategies
            .iter()
            .flat_map(|c| c.entries().iter().map(|s| s.id))
            .collect();
        assert_eq!(chosen, ["redis-watchdog", "zookeeper"]);
        assert_eq!(
            (options.steps.as_str(), options.hold.as_str()),
            ("10000", "1s")
        );
        assert_eq!(options.passes, 3);
        let spec = options.spec().expect("a valid scale run");
        assert_eq!((spec.steps.as_slice(), spec.passes), (&[10_000][..], 3));
        assert!(!spec.yardstick);
        assert_eq!(request.out.as_deref(), Some(dir));
    }
}
