//! sysbench-tpcc (Percona-Lab, commit 585e2b8), natively: the TPC-C-like workload MySQL and
//! MariaDB people run with sysbench.
//!
//! Written from the behaviour of the reference scripts (`../shared/reference/sysbench-tpcc/`),
//! not from their code: the same DDL and load ([`ddl`], [`load`]), the same transactions and mix
//! with the scripts' quirks ([`txn`] draws one, [`exec`] runs it as statements whose values come
//! from earlier replies), and the same consistency checks ([`check`]). Statements go over the
//! text protocol with the values rendered in place, as the scripts' `con:query()` sends them.

pub mod check;
pub mod ddl;
pub mod exec;
pub mod load;
pub mod options;
pub mod txn;

use crate::rng::SbRng;

pub const MAXITEMS: u32 = 100_000;
pub const DIST_PER_WARE: u32 = 10;
pub const CUST_PER_DIST: u32 = 3_000;
/// Orders per district at load time; the first 2 100 are delivered, the last 900 new.
pub const ORDERS_PER_DIST: u32 = 3_000;
pub const DELIVERED_ORDERS: u32 = 2_100;

/// The nine tables of one table copy, in the order the scripts create them.
pub const TABLES: [&str; 9] = [
    "warehouse",
    "district",
    "customer",
    "history",
    "orders",
    "new_orders",
    "order_line",
    "stock",
    "item",
];

/// Every table of `copies` table copies (`warehouse1`, `district1`, …).
pub fn table_names(copies: u32) -> Vec<String> {
    (1..=copies)
        .flat_map(|n| TABLES.iter().map(move |t| format!("{t}{n}")))
        .collect()
}

const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// TPC-C's customer last name for `num` in 0..=999 (three syllables by digit).
pub fn last_name(num: u32) -> String {
    let num = num % 1000;
    let mut s = String::with_capacity(15);
    s.push_str(SYLLABLES[(num / 100) as usize]);
    s.push_str(SYLLABLES[(num / 10 % 10) as usize]);
    s.push_str(SYLLABLES[(num % 10) as usize]);
    s
}

/// TPC-C's non-uniform random number NURand(A, x, y).
///
/// The script means to draw its constants C once per connection, but its "first call" flag is
/// set to 0, which Lua treats as true: every call draws all three constants afresh before its own
/// two draws. Reproduced, draws included, because it flattens the skew the standard intends.
pub fn nurand(rng: &mut SbRng, a: u32, x: u32, y: u32) -> u32 {
    let c255 = rng.uniform(0, 255);
    let c1023 = rng.uniform(0, 1023);
    let c8191 = rng.uniform(0, 8191);
    let c = match a {
        255 => c255,
        1023 => c1023,
        _ => c8191,
    };
    let i = rng.uniform(0, a);
    let j = rng.uniform(x, y);
    ((i | j) + c) % (y - x + 1) + x
}

/// `sysbench.rand.string()` with its `@` (letter) and `#` (digit) marks, appended to `out`.
pub fn push_rand_string(rng: &mut SbRng, template: &str, out: &mut String) {
    for c in template.bytes() {
        out.push(match c {
            b'#' => (b'0' + (rng.unit() * 10.0) as u8) as char,
            b'@' => (b'a' + (rng.unit() * 26.0) as u8) as char,
            other => other as char,
        });
    }
}

/// `string.rep(sysbench.rand.string("@"), n)`: one random letter repeated `n` times (the
/// scripts' filler columns, which compress far better than random text would).
pub fn push_repeated_letter(rng: &mut SbRng, n: u32, out: &mut String) {
    let c = (b'a' + (rng.unit() * 26.0) as u8) as char;
    out.extend(std::iter::repeat_n(c, n as usize));
}

/// Lua's `%f`: six decimals.
pub fn push_f6(v: f64, out: &mut String) {
    use std::fmt::Write;
    let _ = write!(out, "{v:.6}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_names_follow_the_syllable_table() {
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(999), "EINGEINGEING");
    }

    #[test]
    fn nurand_stays_in_range_and_uses_the_whole_range() {
        let mut rng = SbRng::new(7, 1);
        let mut seen_lo = false;
        let mut seen_hi = false;
        for _ in 0..200_000 {
            let v = nurand(&mut rng, 1023, 1, 3000);
            assert!((1..=3000).contains(&v));
            seen_lo |= v == 1;
            seen_hi |= v == 3000;
            let w = nurand(&mut rng, 255, 0, 999);
            assert!(w <= 999);
        }
        assert!(seen_lo && seen_hi);
    }

    #[test]
    fn filler_is_one_letter_repeated() {
        let mut rng = SbRng::new(1, 1);
        let mut s = String::new();
        push_repeated_letter(&mut rng, 24, &mut s);
        assert_eq!(s.len(), 24);
        assert!(s
            .bytes()
            .all(|b| b == s.as_bytes()[0] && b.is_ascii_lowercase()));
        let mut z = String::new();
        push_rand_string(&mut rng, "zip-#####", &mut z);
        assert!(z.starts_with("zip-") && z[4..].bytes().all(|b| b.is_ascii_digit()));
        assert_eq!(table_names(2).len(), 18);
        assert_eq!(table_names(2)[9], "warehouse2");
    }
}
