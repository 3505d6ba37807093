//! The order contenders run in within each round: seeded (a resume repeats it) and balanced, so
//! drift over a benchmark hits every contender alike.

use oltp::rng::SbRng;

use super::plan::OrderScheme;

fn shuffle(v: &mut [usize], rng: &mut SbRng) {
    for i in (1..v.len()).rev() {
        let j = rng.uniform(0, i as u32) as usize;
        v.swap(i, j);
    }
}

/// Round `round`'s contender order under `scheme` (seeded, so a resume repeats it).
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
    let r = (round.max(1) - 1) as usize;
    let (block, row) = (r / n, r % n);
    let mut rng = SbRng::new(seed, 1_000_003 + block as u64);
    shuffle(&mut idx, &mut rng);
    let mut rows: Vec<usize> = (0..n).collect();
    shuffle(&mut rows, &mut rng);
    let k = rows[row];
    (0..n).map(|i| idx[(i + k) % n]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(crate::bench::plan::fresh_seed() != crate::bench::plan::fresh_seed());
    }
}
