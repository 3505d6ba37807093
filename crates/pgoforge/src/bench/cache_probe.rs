//! A short probe of what the host does to code that misses its caches, recorded beside every
//! benchmark (environment.json) so that two reports from two hosts of one CPU model can be
//! compared: the same optimized server gained +15 % over Debian's on one such host and +116 % on
//! another (docs/results/pool-mariadb-10.11-vs-debian/), and what differs is what the host's
//! caches, TLBs and neighbours do to unoptimized code — which PGO and BOLT mostly remove.
//!
//! Two fixed loops, each timed at a small and a large footprint:
//! - data: a dependent load chain through a random cyclic order of cache lines (16 KiB, 512 KiB,
//!   8 MiB, 64 MiB): ns per load — L1, L2, the last-level cache a neighbour shares, memory;
//! - code: a chain of jumps through 64-byte slots in a random order (16 KiB, 8 MiB of code):
//!   ns per jump — instruction fetch from L1i, and from far with iTLB misses, as a large
//!   server's cold paths do.
//!
//! The best of three repetitions of each (the least disturbed). About half a second in all.

use std::time::Instant;

use serde::{Deserialize, Serialize};

/// The probe's figures: (footprint KiB, ns per step).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheProbe {
    pub load_ns: Vec<(u32, f64)>,
    pub jump_ns: Vec<(u32, f64)>,
}

const LOAD_KIB: [u32; 4] = [16, 512, 8 * 1024, 64 * 1024];
const JUMP_KIB: [u32; 2] = [16, 8 * 1024];
/// Steps per timing: enough for a few milliseconds at the slowest footprint.
const STEPS: usize = 1 << 20;
const LINE: usize = 64;

impl CacheProbe {
    /// Runs the probe (None where the code loop cannot run: not x86-64, or no executable
    /// mapping allowed).
    pub fn run() -> Option<CacheProbe> {
        let load_ns = LOAD_KIB
            .iter()
            .map(|&k| {
                let chain = LoadChain::new(k as usize * 1024);
                (k, best_of_3(|| chain.time()))
            })
            .collect();
        let mut jump_ns = Vec::new();
        for &k in &JUMP_KIB {
            let chain = JumpChain::new(k as usize * 1024)?;
            jump_ns.push((k, best_of_3(|| chain.time())));
        }
        Some(CacheProbe { load_ns, jump_ns })
    }

    /// `loads 1.1 / 3.9 / 14 / 96 ns at 16 KiB / 512 KiB / 8 MiB / 64 MiB; jumps 0.4 / 6.2 ns
    /// through 16 KiB / 8 MiB of code`.
    pub fn sentence(&self) -> String {
        let part = |v: &[(u32, f64)]| {
            let ns: Vec<String> = v.iter().map(|(_, n)| format!("{n:.1}")).collect();
            let at: Vec<String> = v.iter().map(|(k, _)| size(*k)).collect();
            (ns.join(" / "), at.join(" / "))
        };
        let (l, la) = part(&self.load_ns);
        let (j, ja) = part(&self.jump_ns);
        format!("loads {l} ns at {la}; jumps {j} ns through {ja} of code")
    }
}

fn size(kib: u32) -> String {
    if kib >= 1024 {
        format!("{} MiB", kib / 1024)
    } else {
        format!("{kib} KiB")
    }
}

fn best_of_3(f: impl Fn() -> f64) -> f64 {
    (0..3).map(|_| f()).fold(f64::INFINITY, f64::min)
}

/// A fixed pseudo-random order of `n` slots forming one cycle (Sattolo's algorithm), the same
/// on every host.
fn cycle(n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = (x % i as u64) as usize;
        order.swap(i, j);
    }
    let mut next = vec![0; n];
    for w in 0..n {
        next[order[w]] = order[(w + 1) % n];
    }
    next
}

/// `bytes` of cache lines linked in a random cyclic order, one index at each line's start: made
/// once per footprint, timed three times.
struct LoadChain {
    mem: Vec<usize>,
    lines: usize,
}

impl LoadChain {
    fn new(bytes: usize) -> LoadChain {
        let lines = (bytes / LINE).max(2);
        let next = cycle(lines);
        let stride = LINE / std::mem::size_of::<usize>();
        let mut mem = vec![0usize; lines * stride];
        for (i, &j) in next.iter().enumerate() {
            mem[i * stride] = j * stride;
        }
        LoadChain { mem, lines }
    }

    /// ns per dependent load, over [`STEPS`] loads after one warming pass (page faults, the
    /// first touch).
    fn time(&self) -> f64 {
        let mem = &self.mem;
        let mut at = 0;
        for _ in 0..self.lines.min(STEPS) {
            at = mem[at];
        }
        let t = Instant::now();
        for _ in 0..STEPS {
            at = mem[at];
        }
        let ns = t.elapsed().as_nanos() as f64 / STEPS as f64;
        std::hint::black_box(at);
        ns
    }
}

/// Executable memory holding one cycle of `jmp` instructions through 64-byte slots, ending in a
/// `ret` at the slot before the entry.
struct JumpChain {
    base: *mut libc::c_void,
    len: usize,
    slots: usize,
}

impl JumpChain {
    #[cfg(target_arch = "x86_64")]
    fn new(bytes: usize) -> Option<JumpChain> {
        let slots = (bytes / LINE).max(2);
        let len = slots * LINE;
        // SAFETY: an anonymous private mapping of `len` bytes, checked below; written only
        // within it, then made read+execute before any call into it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let chain = JumpChain { base, len, slots };
        // SAFETY: `base` points at `len` writable bytes this struct owns.
        let code = unsafe { std::slice::from_raw_parts_mut(base as *mut u8, len) };
        code.fill(0xcc); // int3 wherever the chain does not go
        let next = cycle(slots);
        for (i, &j) in next.iter().enumerate() {
            let at = i * LINE;
            if j == 0 {
                code[at] = 0xc3; // ret: the cycle is back at its entry
                continue;
            }
            let rel = (j * LINE) as i64 - (at as i64 + 5);
            code[at] = 0xe9; // jmp rel32
            code[at + 1..at + 5].copy_from_slice(&(rel as i32).to_le_bytes());
        }
        // SAFETY: the mapping made above, whole.
        if unsafe { libc::mprotect(base, len, libc::PROT_READ | libc::PROT_EXEC) } != 0 {
            return None;
        }
        Some(chain)
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn new(_bytes: usize) -> Option<JumpChain> {
        None
    }

    /// ns per jump, over about [`STEPS`] jumps.
    fn time(&self) -> f64 {
        // SAFETY: `base` holds, from its first byte, x86-64 code that follows the cycle of
        // jumps once and returns (built in `new`, never written after mprotect); it uses no
        // stack and no registers beyond the return address `call` pushes.
        let f: extern "C" fn() = unsafe { std::mem::transmute(self.base) };
        let calls = (STEPS / self.slots).max(1);
        f();
        let t = Instant::now();
        for _ in 0..calls {
            f();
        }
        t.elapsed().as_nanos() as f64 / (calls * self.slots) as f64
    }
}

impl Drop for JumpChain {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made, unmapped once.
        unsafe { libc::munmap(self.base, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_is_one_cycle_through_every_slot() {
        let next = cycle(1000);
        let (mut at, mut seen) = (0, 0);
        loop {
            at = next[at];
            seen += 1;
            if at == 0 {
                break;
            }
        }
        assert_eq!(seen, 1000);
    }

    #[test]
    fn far_code_and_far_data_cost_more_than_near() {
        let p = CacheProbe::run().expect("x86-64 with executable mappings");
        let (near, far) = (p.load_ns[0].1, p.load_ns[3].1);
        assert!(near > 0.0 && far > 2.0 * near, "{p:?}");
        let (near, far) = (p.jump_ns[0].1, p.jump_ns[1].1);
        assert!(near > 0.0 && far > near, "{p:?}");
        println!("{}", p.sentence());
        assert!(p.sentence().starts_with("loads "), "{}", p.sentence());
    }
}
