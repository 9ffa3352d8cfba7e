#!/usr/bin/env python3
"""bench/overload/attack.py - the attackers of bench/overload/run.sh.

    attack.py PORT DURATION_S --idle N --slow N --slow-bodies N --bodies N

Runs for DURATION_S seconds, then prints one JSON line of counts:
  idle         N connections opened and left idle; each one the daemon
               closes (or resets) is opened again after 0.5 s;
  slow         N slow-loris clients: a request line and headers trickled at
               one byte a second, opened again when cut;
  slow-bodies  N clients announcing a 1 MB body, sending 900 kB of it, then
               one byte a second (the most memory a request may pin);
  bodies       N clients sending whole bodies back to back on fresh
               connections, alternately 1 MB (read: at the default
               max_body_bytes of 1 MiB) and 4 MB (refused: 413), reading
               each answer's status.
The unknown-key flood is wrk's (unknown_keys.lua).
"""
import argparse
import asyncio
import json
import resource
import time

HEAD = b"POST /v1/reserve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"

counts = {
    "idle_opened": 0, "idle_closed_by_daemon": 0, "idle_connect_failed": 0,
    "slow_opened": 0, "slow_cut": 0, "slow_connect_failed": 0,
    "slow_body_opened": 0, "slow_body_cut": 0, "slow_body_connect_failed": 0,
    "bodies_sent": 0, "bodies_connect_failed": 0, "body_statuses": {},
}


async def connect(port, what):
    try:
        return await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 5)
    except (OSError, asyncio.TimeoutError):
        counts[what + "_connect_failed"] += 1
        await asyncio.sleep(0.05)
        return None, None


async def closed(reader, seconds):
    """True if the daemon closed the connection (or answered, which ends a
    slow client too) within seconds."""
    try:
        await asyncio.wait_for(reader.read(65536), seconds)
        return True
    except asyncio.TimeoutError:
        return False
    except OSError:
        return True


async def idle_client(port, until):
    while time.monotonic() < until:
        reader, writer = await connect(port, "idle")
        if reader is None:
            continue
        counts["idle_opened"] += 1
        if await closed(reader, max(0.0, until - time.monotonic())):
            counts["idle_closed_by_daemon"] += 1
        writer.close()
        await asyncio.sleep(0.5)


async def slow_client(port, until, body):
    what = "slow_body" if body else "slow"
    while time.monotonic() < until:
        reader, writer = await connect(port, what)
        if reader is None:
            continue
        counts[what + "_opened"] += 1
        try:
            if body:
                writer.write(HEAD + b"Content-Length: 1048000\r\n\r\n" + b"x" * 900000)
            else:
                writer.write(b"POST /v1/reserve HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            await writer.drain()
            cut = False
            while not cut and time.monotonic() < until:
                if await closed(reader, 1.0):
                    cut = True
                    break
                writer.write(b"x")
                await writer.drain()
            if cut:
                counts[what + "_cut"] += 1
        except OSError:
            counts[what + "_cut"] += 1
        writer.close()


async def body_client(port, until, index):
    big = b"x" * 4000000
    n = 0
    while time.monotonic() < until:
        size = 1000000 if (n + index) % 2 == 0 else 4000000
        n += 1
        reader, writer = await connect(port, "bodies")
        if reader is None:
            continue
        status = "cut"
        try:
            writer.write(HEAD + b"Content-Length: %d\r\n\r\n" % size)
            writer.write(big[:size])
            await writer.drain()
            line = await asyncio.wait_for(reader.readline(), 10)
            if line.startswith(b"HTTP/1.1 "):
                status = line[9:12].decode()
        except (OSError, asyncio.TimeoutError, ValueError):
            pass
        counts["bodies_sent"] += 1
        key = "%d:%s" % (size // 1000000, status)  # e.g. "1:400", "4:413"
        counts["body_statuses"][key] = counts["body_statuses"].get(key, 0) + 1
        writer.close()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("duration", type=float)
    parser.add_argument("--idle", type=int, default=0)
    parser.add_argument("--slow", type=int, default=0)
    parser.add_argument("--slow-bodies", type=int, default=0)
    parser.add_argument("--bodies", type=int, default=0)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    until = time.monotonic() + args.duration
    tasks = []
    # Open the idle ones in steps so that the kernel's backlog is not the test.
    for i in range(args.idle):
        tasks.append(asyncio.ensure_future(idle_client(args.port, until)))
        if i % 500 == 499:
            await asyncio.sleep(0.05)
    tasks += [asyncio.ensure_future(slow_client(args.port, until, False)) for _ in range(args.slow)]
    tasks += [asyncio.ensure_future(slow_client(args.port, until, True)) for _ in range(args.slow_bodies)]
    tasks += [asyncio.ensure_future(body_client(args.port, until, i)) for i in range(args.bodies)]
    await asyncio.gather(*tasks, return_exceptions=True)
    print(json.dumps(counts, sort_keys=True))


asyncio.run(main())
