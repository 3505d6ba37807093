#!/usr/bin/env python3
"""Records the MySQL protocol between pgoforge's driver and a real server, packet by packet.

For each --connection NAME[=PLUGIN], in order: a TCP relay on a free loopback port, the driver's
scripted session (--client, the oltp crate's mysql_session example) connected to it, the relay
connected to --server, bytes copied both ways and cut into protocol packets (3-byte length, 1-byte
sequence, payload). With =PLUGIN the relay replaces the authentication plugin the server's greeting
announces, so the real server answers the client's reply with a real auth-switch request. Writes
--out as JSON:

    {"server": LABEL, "user": U, "password": P, "private_key": PEM or null,
     "connections": [{"name": ..., "lines": [what the session printed],
                      "packets": [{"from": "server"|"client", "seq": N, "hex": ...}, ...]}]}

crates/oltp/tests/fast/mysql_captures.rs replays the server's side to the same session. The account and
the server's key pair belong to a throwaway datadir made for the capture.
"""
import argparse, json, socket, subprocess, threading


def packets(buf):
    """Splits complete packets off the front of buf; returns (packets, rest)."""
    out = []
    while len(buf) >= 4:
        n = buf[0] | buf[1] << 8 | buf[2] << 16
        if len(buf) < 4 + n:
            break
        out.append((buf[3], bytes(buf[4 : 4 + n])))
        buf = buf[4 + n :]
    return out, buf


def rewrite_greeting(payload, plugin):
    # The plugin name is the greeting's last NUL-terminated string.
    body = payload.rstrip(b"\0")
    cut = body.rfind(b"\0")
    return body[: cut + 1] + plugin.encode() + b"\0"


def relay(client, server, log, lock, rewrite):
    def pump(src, dst, who):
        buf = b""
        first = True
        while True:
            data = src.recv(65536)
            if not data:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            buf += data
            pkts, buf = packets(buf)
            for seq, payload in pkts:
                if who == "server" and first and rewrite:
                    payload = rewrite_greeting(payload, rewrite)
                first = first and who != "server"
                with lock:
                    log.append({"from": who, "seq": seq, "hex": payload.hex()})
                n = len(payload)
                dst.sendall(bytes([n & 255, n >> 8 & 255, n >> 16 & 255, seq]) + payload)

    t = threading.Thread(target=pump, args=(server, client, "server"))
    t.start()
    pump(client, server, "client")
    t.join()


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--server", required=True, help="HOST:PORT of the real server")
    a.add_argument("--user", required=True)
    a.add_argument("--password", required=True)
    a.add_argument("--label", required=True, help="what the server is, for the file")
    a.add_argument("--client", required=True, help="the mysql_session example binary")
    a.add_argument("--connection", action="append", required=True, help="NAME or NAME=PLUGIN")
    a.add_argument("--private-key", help="the server's private_key.pem, recorded in the file")
    a.add_argument("--out", required=True)
    o = a.parse_args()
    conns = []
    for spec in o.connection:
        name, _, rewrite = spec.partition("=")
        ls = socket.socket()
        ls.bind(("127.0.0.1", 0))
        ls.listen(1)
        port = ls.getsockname()[1]
        client = subprocess.Popen(
            [o.client, "127.0.0.1", str(port), o.user, o.password],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        c, _ = ls.accept()
        sh, sp = o.server.rsplit(":", 1)
        s = socket.create_connection((sh, int(sp)))
        log, lock = [], threading.Lock()
        relay(c, s, log, lock, rewrite or None)
        out, err = client.communicate(timeout=60)
        c.close()
        s.close()
        ls.close()
        if client.returncode != 0:
            raise SystemExit(f"{name}: the session failed: {err.strip()}")
        conns.append({"name": name, "lines": out.splitlines(), "packets": log})
    key = open(o.private_key).read() if o.private_key else None
    with open(o.out, "w") as f:
        json.dump({"server": o.label, "user": o.user, "password": o.password,
                   "private_key": key, "connections": conns}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
