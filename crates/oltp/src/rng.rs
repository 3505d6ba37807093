//! sysbench's random numbers: its xoroshiro128+ generator and the `--rand-type` distributions.
//!
//! The formulas follow sysbench 1.0.20 (`uniform`, `gaussian`, `special`, `pareto`) and 1.1
//! (`zipfian`), including their truncations, so that access patterns (hot sets, skew) match.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU32, Ordering};

/// xoroshiro128+ with the 2016 constants (55, 14, 36) that sysbench uses.
#[derive(Clone, Debug)]
pub struct SbRng {
    s0: u64,
    s1: u64,
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl SbRng {
    /// A generator for stream `stream` of a run seeded with `seed`; streams never overlap in practice.
    pub fn new(seed: u64, stream: u64) -> SbRng {
        let mut x = seed ^ stream.wrapping_mul(0xD605_BBB5_8C8A_BBC1);
        let s0 = splitmix64(&mut x);
        let s1 = splitmix64(&mut x);
        SbRng {
            s0,
            s1: if s0 == 0 && s1 == 0 { 1 } else { s1 },
        }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s0 = self.s0;
        let mut s1 = self.s1;
        let result = s0.wrapping_add(s1);
        s1 ^= s0;
        self.s0 = s0.rotate_left(55) ^ s1 ^ (s1 << 14);
        self.s1 = s1.rotate_left(36);
        result
    }

    /// A double in [0, 1) from the top 52 bits, as sysbench's `sb_rand_uniform_double`.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        f64::from_bits(0x3FF << 52 | self.next_u64() >> 12) - 1.0
    }

    /// sysbench.rand.uniform(a, b).
    #[inline]
    pub fn uniform(&mut self, a: u32, b: u32) -> u32 {
        (a as f64 + (self.unit() * (b as f64 - a as f64 + 1.0)).floor()) as u32
    }

    /// Fills `template` in place: each `#` a random digit, each `@` a random lowercase letter.
    pub fn fill_template(&mut self, template: &[u8], out: &mut Vec<u8>) {
        out.clear();
        for &c in template {
            out.push(match c {
                b'#' => b'0' + (self.unit() * 10.0) as u8,
                b'@' => b'a' + (self.unit() * 26.0) as u8,
                other => other,
            });
        }
    }
}

/// The `--rand-type` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RandType {
    Uniform,
    Gaussian,
    Special,
    Pareto,
    Zipfian,
}

impl RandType {
    pub const ALL: [RandType; 5] = [
        RandType::Uniform,
        RandType::Gaussian,
        RandType::Special,
        RandType::Pareto,
        RandType::Zipfian,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RandType::Uniform => "uniform",
            RandType::Gaussian => "gaussian",
            RandType::Special => "special",
            RandType::Pareto => "pareto",
            RandType::Zipfian => "zipfian",
        }
    }
}

/// Settings of the default distribution (sysbench's `--rand-*` options).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RandSettings {
    pub rand_type: RandType,
    /// 0 means "from the clock", as in sysbench.
    pub seed: u64,
    pub spec_iter: u32,
    pub spec_pct: f64,
    pub spec_res: f64,
    pub pareto_h: f64,
    pub zipfian_exp: f64,
}

impl Default for RandSettings {
    /// sysbench 1.0.20's defaults.
    fn default() -> Self {
        RandSettings {
            rand_type: RandType::Special,
            seed: 0,
            spec_iter: 12,
            spec_pct: 1.0,
            spec_res: 75.0,
            pareto_h: 0.2,
            zipfian_exp: 0.8,
        }
    }
}

/// `sysbench.rand.default(a, b)`: the distribution chosen by `--rand-type`.
#[derive(Clone, Debug)]
pub struct Distribution {
    kind: RandType,
    iter: u32,
    pct: f64,
    res: f64,
    pareto_p: f64,
    zipf_exp: f64,
}

impl Distribution {
    pub fn new(s: &RandSettings) -> Distribution {
        let h = s.pareto_h;
        Distribution {
            kind: s.rand_type,
            iter: s.spec_iter.max(1),
            pct: s.spec_pct,
            res: s.spec_res,
            pareto_p: (h.ln()) / ((1.0 - h).ln()),
            zipf_exp: s.zipfian_exp,
        }
    }

    #[inline]
    pub fn sample(&self, rng: &mut SbRng, a: u32, b: u32) -> u32 {
        match self.kind {
            RandType::Uniform => rng.uniform(a, b),
            RandType::Gaussian => self.gaussian(rng, a, b),
            RandType::Special => self.special(rng, a, b),
            RandType::Pareto => {
                let t = b as f64 - a as f64 + 1.0;
                (a as f64 + (t * rng.unit().powf(self.pareto_p)).floor()) as u32
            }
            RandType::Zipfian => zipfian(rng, a, b, self.zipf_exp),
        }
    }

    fn gaussian(&self, rng: &mut SbRng, a: u32, b: u32) -> u32 {
        let t = b as f64 - a as f64 + 1.0;
        let mut sum = 0.0;
        for _ in 0..self.iter {
            sum += rng.unit() * t;
        }
        (a as f64 + (sum / self.iter as f64).floor()) as u32
    }

    fn special(&self, rng: &mut SbRng, a: u32, b: u32) -> u32 {
        let t = b as f64 - a as f64;
        let rnd = rng.unit();
        let r = rnd * t * 100.0 / (100.0 - self.res);
        if r < t {
            let mut sum = 0.0;
            for _ in 0..self.iter {
                sum += rng.unit() * t;
            }
            return (a as f64 + (sum / self.iter as f64).floor()) as u32;
        }
        let d = t * self.pct / 100.0;
        (a as f64 + (rnd * (d + 1.0) + t / 2.0 - t * self.pct / 200.0).floor()) as u32
    }
}

/// Rejection-inversion Zipf sampler (Hörmann and Derflinger), as sysbench 1.1 ports it from Apache
/// Commons RNG; rank 1 maps to `a`.
fn zipfian(rng: &mut SbRng, a: u32, b: u32, e: f64) -> u32 {
    let n = (b as f64 - a as f64 + 1.0).max(1.0);
    let helper1 = |x: f64| {
        if x.abs() > 1e-8 {
            x.ln_1p() / x
        } else {
            1.0 - x * (0.5 - x * (1.0 / 3.0 - x * 0.25))
        }
    };
    let helper2 = |x: f64| {
        if x.abs() > 1e-8 {
            x.exp_m1() / x
        } else {
            1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + x * 0.25))
        }
    };
    let h = |x: f64| (-e * x.ln()).exp();
    let h_integral = |x: f64| {
        let lx = x.ln();
        helper2((1.0 - e) * lx) * lx
    };
    let h_integral_inv = |x: f64| {
        let mut t = x * (1.0 - e);
        if t < -1.0 {
            t = -1.0;
        }
        (helper1(t) * x).exp()
    };
    let hx1 = h_integral(1.5) - 1.0;
    let hn = h_integral(n + 0.5);
    let s = 2.0 - h_integral_inv(h_integral(2.5) - h(2.0));
    loop {
        let u = hn + rng.unit() * (hx1 - hn);
        let x = h_integral_inv(u);
        let k = (x + 0.5).floor().clamp(1.0, n);
        if k - x <= s || u >= h_integral(k + 0.5) - h(k) {
            return a.wrapping_add(k as u32 - 1);
        }
    }
}

/// `sysbench.rand.unique()`: a full-period permutation of u32, shared by all threads of a run.
pub struct Unique {
    index: AtomicU32,
    offset: u32,
}

impl Unique {
    pub fn new(seed: u64) -> Unique {
        let mut x = seed ^ 0x756E_6971;
        let v = splitmix64(&mut x);
        Unique {
            index: AtomicU32::new(v as u32),
            offset: (v >> 32) as u32,
        }
    }

    pub fn next(&self) -> u32 {
        fn permute(x: u32) -> u32 {
            const P: u32 = 4_294_967_291;
            if x >= P {
                return x;
            }
            let r = ((x as u64 * x as u64) % P as u64) as u32;
            if x <= P / 2 {
                r
            } else {
                P - r
            }
        }
        let i = self.index.fetch_add(1, Ordering::Relaxed);
        permute(permute(i).wrapping_add(self.offset) ^ 0x5bf0_3635)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dist(kind: RandType) -> Distribution {
        Distribution::new(&RandSettings {
            rand_type: kind,
            ..RandSettings::default()
        })
    }

    #[test]
    fn every_distribution_stays_in_range() {
        let mut rng = SbRng::new(42, 0);
        for kind in RandType::ALL {
            let d = dist(kind);
            for _ in 0..20_000 {
                let v = d.sample(&mut rng, 1, 10_000);
                assert!((1..=10_000).contains(&v), "{kind:?} gave {v}");
            }
        }
    }

    #[test]
    fn special_has_the_documented_hot_set() {
        // sysbench 1.0.20 default for (1, 10000): about 76 % of draws fall in 4975..=5051.
        let mut rng = SbRng::new(7, 0);
        let d = dist(RandType::Special);
        let n = 200_000;
        let hot = (0..n)
            .filter(|_| (4975..=5051).contains(&d.sample(&mut rng, 1, 10_000)))
            .count();
        let frac = hot as f64 / n as f64;
        assert!((0.74..0.79).contains(&frac), "hot fraction {frac}");
    }

    #[test]
    fn uniform_is_flat_and_pareto_and_zipfian_favour_the_low_end() {
        let mut rng = SbRng::new(9, 1);
        let n = 100_000;
        let low_share = |d: &Distribution, rng: &mut SbRng| {
            (0..n).filter(|_| d.sample(rng, 1, 1000) <= 100).count() as f64 / n as f64
        };
        let u = low_share(&dist(RandType::Uniform), &mut rng);
        assert!((0.09..0.11).contains(&u), "uniform low share {u}");
        assert!(low_share(&dist(RandType::Pareto), &mut rng) > 0.6);
        assert!(low_share(&dist(RandType::Zipfian), &mut rng) > 0.4);
    }

    #[test]
    fn unique_never_repeats_in_a_long_prefix() {
        let u = Unique::new(1);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200_000 {
            assert!(seen.insert(u.next()));
        }
    }

    #[test]
    fn templates_fill_digits_and_keep_dashes() {
        let mut rng = SbRng::new(1, 1);
        let mut out = Vec::new();
        rng.fill_template(b"###-@@", &mut out);
        assert_eq!(out.len(), 6);
        assert!(out[..3].iter().all(u8::is_ascii_digit));
        assert_eq!(out[3], b'-');
        assert!(out[4..].iter().all(u8::is_ascii_lowercase));
    }
}
