//! CPU placement: server and client on disjoint CPU sets, so that neither steals the other's cycles.

use std::collections::BTreeSet;

use anyhow::{bail, Result};

/// Parses "0-3,6" into CPU numbers.
pub fn parse_list(s: &str) -> Result<Vec<usize>> {
    let mut set = BTreeSet::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<usize>(), b.trim().parse::<usize>()),
            None => (part.parse::<usize>(), part.parse::<usize>()),
        };
        let (Ok(lo), Ok(hi)) = (lo, hi) else {
            bail!("'{part}' is not a CPU number or range (use e.g. 0-3,6)");
        };
        if lo > hi {
            bail!("CPU range '{part}' runs backwards");
        }
        // Checked before expanding: `0-4000000000` must not allocate four billion entries.
        let n = online();
        if hi >= n {
            bail!(
                "CPU {hi} does not exist (this machine has CPUs 0-{})",
                n - 1
            );
        }
        set.extend(lo..=hi);
    }
    Ok(set.into_iter().collect())
}

/// The value of the first `key : value` line of a /proc/cpuinfo text (`model name`, `flags`):
/// every CPU of a machine lists the same instruction sets and model.
pub fn cpuinfo_field<'a>(cpuinfo: &'a str, key: &str) -> Option<&'a str> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

pub fn online() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Splits the CPUs into a server set (the upper half, at least one) and a client set (the rest);
/// `None` on a single-CPU machine.
pub fn split() -> Option<(Vec<usize>, Vec<usize>)> {
    let n = online();
    if n < 2 {
        return None;
    }
    let client = n / 2;
    Some(((client..n).collect(), (0..client).collect()))
}

pub use oltp::affinity::pin_current;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_fields_are_read_by_their_whole_key() {
        let info = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2\n\nprocessor\t: 1\nflags\t\t: fpu\n";
        assert_eq!(cpuinfo_field(info, "model name"), Some("AMD EPYC"));
        assert_eq!(cpuinfo_field(info, "flags"), Some("fpu sse2"));
        assert_eq!(cpuinfo_field(info, "model"), None);
    }

    #[test]
    fn parses_lists_and_ranges() {
        assert_eq!(parse_list("0").unwrap(), vec![0]);
        assert!(parse_list("0-x").is_err());
        assert!(parse_list("5000")
            .unwrap_err()
            .to_string()
            .contains("does not exist"));
        // Refused at once, without building a four-billion-entry set first.
        let t0 = std::time::Instant::now();
        assert!(parse_list("0-4000000000")
            .unwrap_err()
            .to_string()
            .contains("CPU 4000000000 does not exist"));
        assert!(t0.elapsed() < std::time::Duration::from_secs(1));
        if online() >= 2 {
            assert_eq!(parse_list("1,0-1").unwrap(), vec![0, 1]);
            let (s, c) = split().unwrap();
            assert!(!s.is_empty() && !c.is_empty() && s.iter().all(|x| !c.contains(x)));
        }
    }
}
