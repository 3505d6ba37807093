//! Wall-clock time as pgoforge records and prints it.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, now.
pub fn now_secs() -> u64 {
    unix_secs(SystemTime::now())
}

/// Seconds since the Unix epoch (0 for a time before it).
pub fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// `1 h 02 min`, `14 min 03 s`, `12.3 s`.
pub fn human(s: f64) -> String {
    let t = s.round() as u64;
    if t >= 3600 {
        format!("{} h {:02} min", t / 3600, (t % 3600) / 60)
    } else if t >= 60 {
        format!("{} min {:02} s", t / 60, t % 60)
    } else {
        format!("{s:.1} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(human(12.34), "12.3 s");
        assert_eq!(human(843.0), "14 min 03 s");
        assert_eq!(human(3720.0), "1 h 02 min");
        assert_eq!(unix_secs(UNIX_EPOCH), 0);
        assert!(now_secs() > 1_700_000_000);
    }
}
