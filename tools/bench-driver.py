#!/usr/bin/env python3
"""Side-by-side benchmark of real sysbench and `pgoforge oltp` against one MariaDB server.

Starts Debian's mariadbd on a private datadir (pinned to the last CPU), prepares the tables once,
then runs sysbench and pgoforge alternately (A/B, then B/A) for each workload and thread count, both
pinned to the other CPUs. For each run it records TPS and the client's CPU time (user + system,
from wait4's rusage), and prints a Markdown report with the ratios.

With `--tests tpcc` the sysbench side is the reference sysbench-tpcc script (tpcc.lua, run from
--tpcc-scripts) and the tables are prepared once by pgoforge at --tpcc-scale warehouses.

Usage: tools/bench-driver.py [--time 10] [--rounds 2] [--pgoforge target/release/pgoforge]
       tools/bench-driver.py --serve     # start the server, print how to connect, wait
"""
import argparse
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import json

MARIADBD = "/usr/sbin/mariadbd"
INSTALL_DB = "/usr/bin/mariadb-install-db"


def cpu_sets():
    n = os.cpu_count() or 1
    if n < 2:
        return None, None
    return str(n - 1), ",".join(str(i) for i in range(n - 1))


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, cpus):
        self.dir = tempfile.mkdtemp(prefix="pgf-bench-", dir="/tmp")
        self.datadir = os.path.join(self.dir, "data")
        self.socket = os.path.join(self.dir, "mysqld.sock")
        self.password = secrets.token_hex(12)
        self.cpus = cpus
        self.proc = None

    def start(self):
        user = "root" if os.geteuid() == 0 else os.environ.get("USER", "root")
        subprocess.run([INSTALL_DB, "--no-defaults", f"--datadir={self.datadir}", f"--user={user}",
                        "--auth-root-authentication-method=socket", "--skip-test-db"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cmd = [MARIADBD, "--no-defaults", f"--datadir={self.datadir}", f"--socket={self.socket}",
               f"--port={free_port()}", "--bind-address=127.0.0.1", f"--user={user}",
               f"--log-error={self.dir}/error.log", "--innodb-buffer-pool-size=1G",
               "--innodb-log-file-size=256M", "--innodb-flush-log-at-trx-commit=2",
               "--max-connections=500", "--skip-log-bin", "--skip-name-resolve",
               "--max-prepared-stmt-count=100000"]
        if self.cpus:
            cmd = ["taskset", "-c", self.cpus] + cmd
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(600):
            if os.path.exists(self.socket):
                r = subprocess.run(["mariadb", "-S", self.socket, "-u", user, "-e", "SELECT 1"],
                                   capture_output=True)
                if r.returncode == 0:
                    break
            if self.proc.poll() is not None:
                with open(os.path.join(self.dir, "error.log")) as f:
                    tail = f.read()[-3000:]
                sys.exit("mariadbd exited at start:\n" + tail)
            time.sleep(0.1)
        sql = (f"CREATE DATABASE sbtest; CREATE USER 'sbtest'@'localhost' IDENTIFIED BY '{self.password}';"
               "GRANT ALL ON sbtest.* TO 'sbtest'@'localhost';")
        subprocess.run(["mariadb", "-S", self.socket, "-u", user, "-e", sql], check=True)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def args(self):
        return [f"--mysql-socket={self.socket}", "--mysql-user=sbtest",
                f"--mysql-password={self.password}", "--mysql-db=sbtest"]


def measure(cmd, cpus, cwd=None):
    """Runs cmd, returns (stdout, user CPU seconds, system CPU seconds)."""
    if cpus:
        cmd = ["taskset", "-c", cpus] + cmd
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=cwd)
    out = p.stdout.read().decode(errors="replace")
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"command failed: {' '.join(cmd)}\n{out}")
    return out, ru.ru_utime, ru.ru_stime


def parse(out):
    tx = re.search(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec", out)
    return int(tx.group(1)), float(tx.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--time", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--table-size", type=int, default=100000)
    ap.add_argument("--pgoforge", default="target/release/pgoforge")
    ap.add_argument("--tests", default="oltp_point_select,oltp_read_only")
    ap.add_argument("--threads", default="1,4")
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("--tpcc-scripts", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "../../shared/reference/sysbench-tpcc"))
    ap.add_argument("--tpcc-scale", type=int, default=1)
    ap.add_argument("--pgoforge-args", default="",
                    help="extra arguments for pgoforge's runs, e.g. --client-threads=4")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=ARGS",
                    help="a pgoforge client to measure beside sysbench (repeatable), e.g. "
                    "'uring=--client-io=uring'; default: one, 'pgoforge', with --pgoforge-args")
    a = ap.parse_args()

    server_cpus, client_cpus = cpu_sets()
    srv = Server(server_cpus)
    try:
        srv.start()
        if a.serve:
            print("server up:", " ".join(srv.args()), flush=True)
            signal.sigwait([signal.SIGINT, signal.SIGTERM])
            return
        tests = a.tests.split(",")
        oltp_common = [f"--table-size={a.table_size}", "--tables=1"] + srv.args()
        tpcc_common = [f"--scale={a.tpcc_scale}", "--tables=1"] + srv.args()
        if any(t != "tpcc" for t in tests):
            subprocess.run([a.pgoforge, "oltp", "prepare", "oltp_read_only"] + oltp_common,
                           check=True, stdout=subprocess.DEVNULL)
        if "tpcc" in tests:
            subprocess.run([a.pgoforge, "oltp", "prepare", "tpcc", "--threads=2"] + tpcc_common,
                           check=True, stdout=subprocess.DEVNULL)
        rows = []
        for test in tests:
            tpcc = test == "tpcc"
            common = tpcc_common if tpcc else oltp_common
            for threads in [int(t) for t in a.threads.split(",")]:
                run_args = common + [f"--threads={threads}", f"--time={a.time}"]
                if not tpcc:
                    run_args.append("--rand-type=uniform")
                clients = {"sysbench": ["sysbench", "tpcc.lua" if tpcc else test] + run_args + ["run"]}
                for name, extra in variants(a):
                    clients[name] = [a.pgoforge, "oltp", "run", test] + run_args + extra.split()
                cwd = {name: None for name in clients}
                cwd["sysbench"] = a.tpcc_scripts if tpcc else None
                # Warm the buffer pool once so the first measured run is not penalised.
                warm = [a.pgoforge, "oltp", "run", test] + common + [f"--threads={threads}", "--time=3"]
                measure(warm, client_cpus)
                for rnd in range(a.rounds):
                    # Each client goes first in turn (A/B, then B/A for two): a drift within a
                    # round (tpcc's tables grow) favours none.
                    names = list(clients)
                    k = rnd % len(names)
                    order = names[k:] + names[:k]
                    for name in order:
                        out, user, sys_ = measure(clients[name], client_cpus, cwd[name])
                        tx, tps = parse(out)
                        cpu = user + sys_
                        rows.append(dict(test=test, threads=threads, round=rnd + 1, client=name,
                                         tps=tps, tx=tx, cpu_s=cpu, us_per_tx=cpu / tx * 1e6,
                                         user_us=user / tx * 1e6, sys_us=sys_ / tx * 1e6))
                        print(json.dumps(rows[-1]), flush=True)
        report(rows, a, server_cpus, client_cpus)
    finally:
        srv.stop()


def variants(a):
    """The pgoforge clients measured: (name, extra arguments)."""
    if not a.variant:
        return [("pgoforge", a.pgoforge_args)]
    out = []
    for v in a.variant:
        name, _, extra = v.partition("=")
        out.append((name, (a.pgoforge_args + " " + extra).strip()))
    return out


def report(rows, a, server_cpus, client_cpus):
    names = [n for n, _ in variants(a)]
    print()
    print(f"Server CPUs: {server_cpus}; client CPUs: {client_cpus}; {a.time} s per run; "
          f"{a.rounds} rounds, each client first in turn (sysbench, "
          + ", ".join(f"{n} `{x}`" for n, x in variants(a)) + f"); OLTP table size {a.table_size}, "
          f"uniform ids; tpcc scale {a.tpcc_scale}, 1 table copy; unix socket.")
    print()
    head = "| test | threads | round | sysbench TPS | sysbench CPU µs/txn (user+sys) |"
    rule = "|---|---|---|---|---|"
    for n in names:
        head += f" {n} TPS ratio | {n} CPU µs/txn (user+sys) | {n} CPU ratio |"
        rule += "---|---|---|"
    print(head)
    print(rule)
    key = lambda r: (r["test"], r["threads"], r["round"])
    pairs = {}
    for r in rows:
        pairs.setdefault(key(r), {})[r["client"]] = r
    for k, p in pairs.items():
        s = p["sysbench"]
        line = (f"| {k[0]} | {k[1]} | {k[2]} | {s['tps']:.0f} | "
                f"{s['us_per_tx']:.2f} ({s['user_us']:.2f}+{s['sys_us']:.2f}) |")
        for n in names:
            g = p[n]
            line += (f" {g['tps']/s['tps']:.2f} | {g['us_per_tx']:.2f} ({g['user_us']:.2f}+"
                     f"{g['sys_us']:.2f}) | {g['us_per_tx']/s['us_per_tx']:.2f} |")
        print(line)
    gm = lambda xs: __import__("math").exp(sum(__import__("math").log(x) for x in xs) / len(xs))
    print()
    for n in names:
        ratios = [p[n]["us_per_tx"] / p["sysbench"]["us_per_tx"] for p in pairs.values()]
        tps = [p[n]["tps"] / p["sysbench"]["tps"] for p in pairs.values()]
        print(f"Geometric means over all pairs, {n} against sysbench: TPS ratio {gm(tps):.2f}, "
              f"client CPU per transaction ratio {gm(ratios):.2f}.")
    by = {}
    for k, p in pairs.items():
        for n in names:
            by.setdefault((k[0], k[1], n), []).append(p[n]["us_per_tx"] / p["sysbench"]["us_per_tx"])
    print()
    print("| test | threads | " + " | ".join(f"{n} CPU ratio (geomean)" for n in names) + " |")
    print("|---|---|" + "---|" * len(names))
    for (test, threads) in dict.fromkeys((k[0], k[1]) for k in pairs):
        print(f"| {test} | {threads} | " + " | ".join(f"{gm(by[(test, threads, n)]):.2f}" for n in names) + " |")


if __name__ == "__main__":
    main()
