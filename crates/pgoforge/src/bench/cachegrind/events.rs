//! How many events a cell measures under cachegrind: enough that a server's start-up and
//! background work are a fraction of a percent, and a replay in whole passes over its file.

use anyhow::Result;
use oltp::settings::{Settings, TestName};

/// [`auto_events`], and for a replay (`s` holding its file) [`replay_events`].
pub(super) fn auto_events_of(w: TestName, s: &Settings) -> Result<u64> {
    if w != TestName::Replay {
        return Ok(auto_events(w));
    }
    let file = oltp::replay::load(s).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(replay_events(file.statements() as u64))
}

/// Statements measured of a replay file of `n`: whole passes over the file (so that every
/// statement weighs as often as it was logged), as many as make at least [`REPLAY_MIN_EVENTS`]
/// statements — the noise of a server's start-up and background work (about a million
/// instructions) would swamp a short file's few statements — and a file longer than that once.
pub fn replay_events(n: u64) -> u64 {
    match n {
        0 => REPLAY_MIN_EVENTS,
        n => n * REPLAY_MIN_EVENTS.div_ceil(n),
    }
}

/// As many statements as the point-select cells measure.
pub const REPLAY_MIN_EVENTS: u64 = 10_000;

/// Measured transactions enough to make the run-to-run noise of a server's start-up and
/// background work (about a million instructions here) a fraction of a percent: ~400 M
/// instructions for a point select (~40 k each), ~2 G for the multi-statement transactions.
pub fn auto_events(w: TestName) -> u64 {
    match w {
        TestName::OltpPointSelect | TestName::SelectRandomPoints => 10_000,
        // About 30 statements a transaction, several times read_write's work each.
        TestName::Tpcc => 300,
        _ => 1_000,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_is_measured_in_whole_passes_of_at_least_ten_thousand_statements() {
        assert_eq!(replay_events(4), 10_000);
        assert_eq!(replay_events(3), 10_002);
        assert_eq!(replay_events(7_000), 14_000);
        assert_eq!(replay_events(10_000), 10_000);
        assert_eq!(replay_events(25_001), 25_001);
        assert_eq!(replay_events(0), REPLAY_MIN_EVENTS);
    }
}
