//! Checks made before anything is measured that need both the chosen rows and the run's servers: a
//! row that runs on Valkey only (`valkey-ifeq`, not a Redis row's `~valkey` twin) asked for with only
//! a `--redis` server given, and such a row on a server without the commands it needs (one client
//! connected: its `Unsupported` answer, in one line). Both are bad input.

use lockers::{Events, LockError};

use crate::backends::{Backends, GivenAddresses};
use crate::base::error::BenchError;
use crate::kinds;
use crate::strategies::{Endpoints, Strategy, StrategySettings};

/// Whether `strategy` runs on Valkey only: its own server is Valkey and it is no Redis row's twin.
fn valkey_only(strategy: &Strategy) -> bool {
    strategy.server == kinds::valkey::KIND && strategy.valkey_twin_of.is_none()
}

/// A Valkey-only row with a `--redis` server given and no `--valkey`: the user meant their Redis,
/// which cannot run it.
pub(crate) fn valkey_rows_need_valkey(
    chosen: &[&Strategy],
    given: &GivenAddresses,
) -> Result<(), BenchError> {
    let Some(row) = chosen.iter().find(|s| valkey_only(s)) else {
        return Ok(());
    };
    if given.get(kinds::redis::KIND).is_some() && given.get(kinds::valkey::KIND).is_none() {
        return Err(BenchError::usage(format!(
            "{} runs on Valkey only, and --redis names a Redis: give --valkey URL, or leave both \
             out and lockbench starts a Valkey",
            row.id
        )));
    }
    Ok(())
}

/// Connects one client of each Valkey-only row to the run's servers: a server without the commands
/// it needs answers `Unsupported`, bad input in one line. Other errors are left to the cases.
pub(crate) async fn valkey_rows_have_their_commands(
    chosen: &[&Strategy],
    backends: &Backends,
    settings: &StrategySettings,
) -> Result<(), BenchError> {
    let endpoints = Endpoints::new(backends.endpoints());
    for row in chosen.iter().filter(|s| valkey_only(s)) {
        match row.connect(&endpoints, settings, Events::none()).await {
            Err(e @ LockError::Unsupported { .. }) => return Err(BenchError::usage(e.to_string())),
            Ok(client) => drop(client),
            Err(_) => {}
        }
    }
    Ok(())
}
