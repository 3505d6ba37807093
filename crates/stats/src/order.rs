//! The order contenders run in within each round: seeded (a resume repeats it) and balanced, so
//! drift over a benchmark hits every contender alike.

use oltp::rng::SbRng;
use serde::{Deserialize, Serialize};

/// How a benchmark orders its contenders within each round; stored in plan.json as the number
/// it always was (0, 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "u32", try_from = "u32")]
pub enum OrderScheme {
    /// An independent shuffle per round (plans made before balancing).
    #[default]
    Shuffle,
    /// Blocks of rotations of one random permutation, a cyclic Latin square
    /// ([`round_order`]): positions balanced, which of two runs first not (for an
    /// odd number of contenders). Plans made from 2026-11-30 to 2026-12-01.
    Balanced,
    /// Blocks of a Williams design: positions, immediate successions and which of two contenders
    /// runs first all balanced within every complete block. What new plans use.
    Williams,
}

impl OrderScheme {
    pub fn is_shuffle(&self) -> bool {
        *self == OrderScheme::Shuffle
    }

    /// Rounds in one complete block for `n` contenders: the rounds over which the scheme's
    /// balance holds (1 for a shuffle, which balances nothing).
    pub fn block(self, n: usize) -> usize {
        match self {
            OrderScheme::Shuffle => 1,
            OrderScheme::Balanced => n.max(1),
            OrderScheme::Williams if n % 2 == 1 && n > 1 => 2 * n,
            OrderScheme::Williams => n.max(1),
        }
    }
}

impl From<OrderScheme> for u32 {
    fn from(s: OrderScheme) -> u32 {
        match s {
            OrderScheme::Shuffle => 0,
            OrderScheme::Balanced => 1,
            OrderScheme::Williams => 2,
        }
    }
}

impl TryFrom<u32> for OrderScheme {
    type Error = String;
    fn try_from(n: u32) -> Result<OrderScheme, String> {
        match n {
            0 => Ok(OrderScheme::Shuffle),
            1 => Ok(OrderScheme::Balanced),
            2 => Ok(OrderScheme::Williams),
            _ => Err(format!(
                "order_scheme {n} is unknown to this pgoforge (0: shuffle, 1: balanced, 2: williams)"
            )),
        }
    }
}

fn shuffle(v: &mut [usize], rng: &mut SbRng) {
    for i in (1..v.len()).rev() {
        let j = rng.uniform(0, i as u32) as usize;
        v.swap(i, j);
    }
}

/// Round `round`'s contender order under `scheme` (seeded, so a resume repeats it).
///
/// Williams: rounds come in blocks of `n` (`2n` for an odd `n`); each block is a Williams design
/// — rows `w + i (mod n)` of the sequence `w = 0, 1, n-1, 2, n-2, ...`, and for an odd `n` the
/// same rows reversed — over a random relabelling of the contenders, in a random row order. Within
/// every complete block each contender runs equally often in each position, each contender
/// directly follows each other one equally often, and of any two each runs first equally often.
///
/// Balanced: rounds come in blocks of `n`; each block uses the `n` rotations of one
/// random permutation (a cyclic Latin square) in a random row order, so within every complete block
/// each contender runs once in each position — no contender is always first or last — and which
/// contender follows which still varies. Shuffle: an independent shuffle per round, as plans made
/// before balancing were run.
pub fn round_order(n: usize, round: u32, seed: u64, scheme: OrderScheme) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    if scheme == OrderScheme::Shuffle {
        let mut rng = SbRng::new(seed, round as u64 + 1);
        shuffle(&mut idx, &mut rng);
        return idx;
    }
    if n == 0 {
        return idx;
    }
    if scheme == OrderScheme::Williams {
        return williams_row(n, round, seed);
    }
    let r = (round.max(1) - 1) as usize;
    let (block, row) = (r / n, r % n);
    let mut rng = SbRng::new(seed, 1_000_003 + block as u64);
    shuffle(&mut idx, &mut rng);
    let mut rows: Vec<usize> = (0..n).collect();
    shuffle(&mut rows, &mut rng);
    let k = rows[row];
    (0..n).map(|i| idx[(i + k) % n]).collect()
}

fn williams_row(n: usize, round: u32, seed: u64) -> Vec<usize> {
    let size = OrderScheme::Williams.block(n);
    let r = (round.max(1) - 1) as usize;
    let (block, row) = (r / size, r % size);
    // Its own stream, apart from the cyclic scheme's, so the two never share draws.
    let mut rng = SbRng::new(seed, 2_000_003 + block as u64);
    let mut label: Vec<usize> = (0..n).collect();
    shuffle(&mut label, &mut rng);
    let mut rows: Vec<usize> = (0..size).collect();
    shuffle(&mut rows, &mut rng);
    let k = rows[row];
    let w: Vec<usize> = (0..n)
        .map(|j| match j {
            0 => 0,
            j if j % 2 == 1 => j.div_ceil(2),
            j => n - j / 2,
        })
        .collect();
    let mut line: Vec<usize> = w.iter().map(|x| (x + k % n) % n).collect();
    if k >= n {
        line.reverse();
    }
    line.into_iter().map(|x| label[x]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_schemes_are_stored_as_the_numbers_they_were() {
        assert_eq!(serde_json::to_string(&OrderScheme::Shuffle).unwrap(), "0");
        assert_eq!(serde_json::to_string(&OrderScheme::Balanced).unwrap(), "1");
        assert_eq!(
            serde_json::from_str::<OrderScheme>("1").unwrap(),
            OrderScheme::Balanced
        );
        assert_eq!(serde_json::to_string(&OrderScheme::Williams).unwrap(), "2");
        assert!(serde_json::from_str::<OrderScheme>("7").is_err());
    }
    #[test]
    fn every_round_has_every_contender_once_in_a_new_order() {
        let orders: Vec<Vec<usize>> = (1..=6)
            .map(|r| round_order(3, r, 9, OrderScheme::Shuffle))
            .collect();
        for o in &orders {
            let mut s = o.clone();
            s.sort();
            assert_eq!(s, vec![0, 1, 2]);
        }
        assert!(
            orders.windows(2).any(|w| w[0] != w[1]),
            "orders vary between rounds"
        );
        assert_eq!(
            round_order(3, 2, 9, OrderScheme::Shuffle),
            orders[1],
            "seeded: a resume repeats the order"
        );
    }

    #[test]
    fn balanced_orders_put_every_contender_in_every_position_equally_often() {
        for n in [2usize, 3, 4, 5] {
            for seed in [1u64, 2, 2026, 987_654_321] {
                let rounds = 2 * n as u32;
                let mut count = vec![vec![0u32; n]; n];
                let mut distinct = std::collections::HashSet::new();
                for r in 1..=rounds {
                    let o = round_order(n, r, seed, OrderScheme::Balanced);
                    let mut s = o.clone();
                    s.sort();
                    assert_eq!(s, (0..n).collect::<Vec<_>>(), "a permutation");
                    for (pos, &c) in o.iter().enumerate() {
                        count[c][pos] += 1;
                    }
                    distinct.insert(o);
                }
                assert!(
                    count.iter().flatten().all(|&k| k == 2),
                    "n={n} seed={seed}: {count:?}"
                );
                assert!(distinct.len() >= n, "every row of the square is used");
                assert_eq!(
                    round_order(n, 3, seed, OrderScheme::Balanced),
                    round_order(n, 3, seed, OrderScheme::Balanced),
                    "a resume repeats the order"
                );
            }
        }
        // Different seeds give different designs.
        let a: Vec<_> = (1..=4)
            .map(|r| round_order(4, r, 1, OrderScheme::Balanced))
            .collect();
        let b: Vec<_> = (1..=4)
            .map(|r| round_order(4, r, 2, OrderScheme::Balanced))
            .collect();
        assert_ne!(a, b);
    }

    /// Every complete Williams block, for 2 to 7 contenders and several seeds, balances positions,
    /// immediate successions and who of two runs first.
    #[test]
    fn williams_blocks_balance_positions_successions_and_precedence() {
        for n in 2..=7usize {
            let size = OrderScheme::Williams.block(n);
            assert_eq!(size, if n % 2 == 1 { 2 * n } else { n });
            for seed in [1u64, 7, 2026] {
                for block in 0..2u32 {
                    let rows: Vec<Vec<usize>> = (1..=size as u32)
                        .map(|r| {
                            round_order(n, block * size as u32 + r, seed, OrderScheme::Williams)
                        })
                        .collect();
                    let mut pos = vec![vec![0; n]; n];
                    let mut next = vec![vec![0; n]; n];
                    let mut first = vec![vec![0; n]; n];
                    for row in &rows {
                        let mut sorted = row.clone();
                        sorted.sort();
                        assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "{row:?}");
                        for (p, &c) in row.iter().enumerate() {
                            pos[c][p] += 1;
                            for &later in &row[p + 1..] {
                                first[c][later] += 1;
                            }
                        }
                        for w in row.windows(2) {
                            next[w[0]][w[1]] += 1;
                        }
                    }
                    let per_pos = size / n;
                    assert!(
                        pos.iter().flatten().all(|&k| k == per_pos),
                        "n {n}: {pos:?}"
                    );
                    let succ = size / n;
                    for a in 0..n {
                        for b in 0..n {
                            if a != b {
                                assert_eq!(next[a][b], succ, "n {n}: {a} then {b}");
                                assert_eq!(first[a][b], size / 2, "n {n}: {a} before {b}");
                            }
                        }
                    }
                }
            }
        }
    }
}
