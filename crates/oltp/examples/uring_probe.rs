//! Probe behind docs/bench/driver.md: does batching syscalls with io_uring cut the client's CPU per
//! round trip? Point selects over one connection, either blocking `send` + `recv` (what the runner
//! does for a lone connection) or one `io_uring_enter` per round trip (a linked send + recv).
//!
//! Usage: uring_probe SOCKET PASSWORD block|uring   (user sbtest, database sbtest, table sbtest1)
use io_uring::{opcode, squeue, types, IoUring};
use oltp::proto::*;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let socket = &args[1];
    let pw = &args[2];
    let mode = &args[3];
    let secs: u64 = 5;
    let opts = ConnectOptions {
        endpoint: Endpoint::Socket(socket.into()),
        user: "sbtest".into(),
        password: pw.clone(),
        database: Some("sbtest".into()),
        connect_timeout: Duration::from_secs(3),
        read_timeout: oltp::proto::conn::DEFAULT_READ_TIMEOUT,
    };
    let mut c = Conn::connect(&opts).unwrap();
    let p = c.prepare("SELECT c FROM sbtest1 WHERE id=?").unwrap();
    let t0 = Instant::now();
    let mut n = 0u64;
    let mut id = 1i64;
    if mode == "block" {
        while t0.elapsed() < Duration::from_secs(secs) {
            id = id % 100000 + 7;
            c.execute(&p, &[Param::Int(id)]).unwrap();
            n += 1;
        }
    } else {
        let mut ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(8)
            .unwrap();
        let fd = c.fd();
        let mut out = Vec::new();
        let mut rbuf = vec![0u8; 65536];
        while t0.elapsed() < Duration::from_secs(secs) {
            id = id % 100000 + 7;
            out.clear();
            encode_execute(&mut out, p.id, &[Param::Int(id)], n == 0).unwrap();
            let send = opcode::Send::new(types::Fd(fd), out.as_ptr(), out.len() as u32)
                .build()
                .flags(squeue::Flags::IO_LINK | squeue::Flags::SKIP_SUCCESS)
                .user_data(1);
            let recv = opcode::Recv::new(types::Fd(fd), rbuf.as_mut_ptr(), rbuf.len() as u32)
                .build()
                .user_data(2);
            unsafe {
                ring.submission().push(&send).unwrap();
                ring.submission().push(&recv).unwrap();
            }
            ring.submit_and_wait(1).unwrap();
            let cqe: io_uring::cqueue::Entry = ring.completion().next().unwrap();
            assert!(cqe.result() > 0, "{}", cqe.result());
            // the point-select reply (150 bytes) arrives in one piece
            n += 1;
        }
    }
    let e = t0.elapsed().as_secs_f64();
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let cpu = ru.ru_utime.tv_sec as f64
        + ru.ru_utime.tv_usec as f64 / 1e6
        + ru.ru_stime.tv_sec as f64
        + ru.ru_stime.tv_usec as f64 / 1e6;
    println!(
        "{mode}: {:.0} tps, {:.2} us cpu/txn (user {:.2}s sys {:.2}s)",
        n as f64 / e,
        cpu / n as f64 * 1e6,
        ru.ru_utime.tv_sec as f64 + ru.ru_utime.tv_usec as f64 / 1e6,
        ru.ru_stime.tv_sec as f64 + ru.ru_stime.tv_usec as f64 / 1e6
    );
}
