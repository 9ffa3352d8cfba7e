#!/usr/bin/env python3
"""bench/redis/lease_memory.py — what one remembered lease costs in Redis.

    bench/redis/lease_memory.py              (LEASES=20000 BUILD=build by default)

Starts a private redis-server (no persistence) and ratelimiterd --backend redis
on free loopback ports, then for each kind of lease sends LEASES reserves with
fresh lease ids (in batches of 100, as a busy fleet's submitter would) and
reads Redis's used_memory before and after: the difference over LEASES is the
bytes one remembered lease costs, its bucket entries included. Kinds:
  admitted, 1 requirement   a rolling limit with room for everything
  admitted, 4 requirements  four such limits, as a typical LLM call names
                            (rpm, tpm, concurrency, tenant budget)
  denied                    a full limit: the lease is remembered denied
Each lease is held for its lifetime plus redis.lease_memory_ms; a denied one
for lease_memory_ms. Needs redis-server and a built ratelimiterd.
"""
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD", "build")
LEASES = int(os.environ.get("LEASES", "20000"))
BATCH = 100
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_command(port, *args):
    """One RESP command; returns the reply's first line plus a bulk body."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        out = "*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a.encode()), a) for a in args)
        s.sendall(out.encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            if data.startswith(b"$"):
                length = int(data[1:data.index(b"\r\n")])
                if length < 0 or len(data) >= data.index(b"\r\n") + 2 + length + 2:
                    break
            elif data.endswith(b"\r\n"):
                break
        return data.decode()


def used_memory(port):
    redis_command(port, "MEMORY", "PURGE")
    info = redis_command(port, "INFO", "memory")
    return int(re.search(r"used_memory:(\d+)", info).group(1))


def ulid():
    value = (int(time.time() * 1000) << 80) | random.getrandbits(80)
    return "".join(CROCKFORD[(value >> (5 * i)) & 31] for i in reversed(range(26)))


def http(port, method, path, body):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=json.dumps(body).encode(),
                                 method=method)
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def reserve_many(port, keys, amount, want_allowed):
    for start in range(0, LEASES, BATCH):
        n = min(BATCH, LEASES - start)
        requests = [{"lease_id": ulid(), "requirements": [{"key": k, "amount": amount} for k in keys]}
                    for _ in range(n)]
        results = http(port, "POST", "/v1/reserve/batch", {"requests": requests})["results"]
        for r in results:
            if r["allowed"] != want_allowed:
                sys.exit("lease_memory.py: unexpected answer %s" % r)


def main():
    daemon = os.path.join(ROOT, BUILD, "ratelimiterd")
    if not shutil.which("redis-server") or not os.path.exists(daemon):
        sys.exit("lease_memory.py: needs redis-server and %s (make build)" % daemon)
    tmp = tempfile.mkdtemp(prefix="rl_lease_memory_")
    redis_port, daemon_port = free_port(), free_port()
    redis = subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(redis_port), "--save", "",
                              "--appendonly", "no", "--dir", tmp], stdout=subprocess.DEVNULL)
    proc = None
    try:
        for _ in range(100):
            try:
                if "PONG" in redis_command(redis_port, "PING"):
                    break
            except OSError:
                time.sleep(0.05)
        with open(os.path.join(tmp, "config.yaml"), "w") as f:
            f.write("server:\n  max_batch: %d\n" % BATCH)
        proc = subprocess.Popen([daemon, "-c", os.path.join(tmp, "config.yaml"), "--backend", "redis", "--redis",
                                 "127.0.0.1:%d" % redis_port, "--listen", "127.0.0.1:%d" % daemon_port,
                                 "--registry", os.path.join(tmp, "limits.json")], stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/healthz" % daemon_port)
                break
            except OSError:
                time.sleep(0.05)
        big = 1 << 53
        for key in ("a", "b", "c", "d"):
            http(daemon_port, "PUT", "/v1/admin/limits",
                 {"key": key, "kind": "rolling", "capacity": big, "window_seconds": 60})
        http(daemon_port, "PUT", "/v1/admin/limits", {"key": "full", "kind": "rolling", "capacity": 1,
                                                       "window_seconds": 3600})
        http(daemon_port, "POST", "/v1/reserve", {"lease_id": ulid(), "requirements": [{"key": "full",
                                                                                          "amount": 1}]})
        print("bytes of Redis memory per remembered lease (%d leases each, batches of %d):" % (LEASES, BATCH))
        for name, keys, allowed in (("admitted, 1 requirement", ["a"], True),
                                    ("admitted, 4 requirements", ["a", "b", "c", "d"], True),
                                    ("denied", ["full"], False)):
            before = used_memory(redis_port)
            reserve_many(daemon_port, keys, 1, allowed)
            after = used_memory(redis_port)
            print("  %-26s %6.0f B" % (name, (after - before) / LEASES))
    finally:
        if proc:
            proc.terminate()
            proc.wait()
        redis.terminate()
        redis.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
