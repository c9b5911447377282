#!/usr/bin/env python3
"""wrk2's latency method, implemented independently of truegreen, as a reference.

wrk2 itself is not packaged in Debian, so benchmarks/loadgen_vs_wrk.sh checks `truegreen bench`'s
open-loop latency against this script instead:

  server PORT           an HTTP/1.1 keep-alive server answering 200 "ok". GET /arm?after=A&stall=S
                        arms one stall: the first request arriving A seconds later blocks the whole
                        server for S seconds (like a GC pause), then it serves normally again.
  client URL RATE CONNS WARMUP WINDOW
                        wrk2's method: CONNS keep-alive connections, each with a fixed schedule
                        of RATE/CONNS requests/s (connection k starts k/RATE s late); a request is
                        sent at its intended time or, when late, as soon as the connection is
                        free, and its latency is counted from the *intended* time. Requests that
                        complete in [WARMUP, WARMUP+WINDOW) are kept. Prints one JSON object:
                        exact percentiles of the sorted samples (microseconds) and the count.

Only the Python standard library; the server runs until killed.
"""
import asyncio
import json
import sys
import time
import urllib.parse


async def read_message(reader):
    """One HTTP/1.1 message without chunking: its header block, after reading its body."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for h in head.split(b"\r\n")[1:]:
        if h.lower().startswith(b"content-length:"):
            length = int(h.split(b":", 1)[1])
    if length:
        await reader.readexactly(length)
    return head


def serve(port):
    state = {"stall_at": None, "stall_s": 0.0}

    async def handle(reader, writer):
        try:
            while True:
                head = await read_message(reader)
                line = head.split(b"\r\n", 1)[0].decode("latin-1")
                target = line.split(" ")[1] if line.count(" ") >= 2 else "/"
                if target.startswith("/arm"):
                    q = urllib.parse.parse_qs(urllib.parse.urlparse(target).query)
                    state["stall_at"] = time.monotonic() + float(q["after"][0])
                    state["stall_s"] = float(q["stall"][0])
                elif state["stall_at"] is not None and time.monotonic() >= state["stall_at"]:
                    state["stall_at"] = None
                    time.sleep(state["stall_s"])  # blocks every connection, on purpose
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", port)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def client(url, rate, conns, warmup, window):
    u = urllib.parse.urlparse(url)
    host, port, path = u.hostname, u.port or 80, u.path or "/"
    request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
    samples = []

    async def one(k, start, end):
        reader, writer = await asyncio.open_connection(host, port)
        intended = start + k / rate
        interval = conns / rate
        while True:
            now = time.monotonic()
            if intended > now:
                await asyncio.sleep(intended - now)
            if time.monotonic() >= end:
                break
            writer.write(request)
            await read_message(reader)
            done = time.monotonic()
            if start + warmup <= done < start + warmup + window:
                samples.append((done - intended) * 1e6)
            intended += interval
        writer.close()

    async def main():
        start = time.monotonic()
        end = start + warmup + window
        await asyncio.gather(*(one(k, start, end) for k in range(conns)))

    asyncio.run(main())
    samples.sort()

    def pct(p):  # the smallest sample with at least p % of the samples at or below it
        if not samples:
            return 0.0
        i = max(0, min(len(samples) - 1, -(-len(samples) * p // 100) - 1))
        return samples[int(i)]

    out = {f"p{p}": pct(p) for p in (50, 90, 95, 99)}
    out["p99.9"] = pct(99.9)
    out["max"] = samples[-1] if samples else 0.0
    out["mean"] = sum(samples) / len(samples) if samples else 0.0
    out["count"] = len(samples)
    print(json.dumps(out))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "server":
        serve(int(sys.argv[2]))
    elif len(sys.argv) == 7 and sys.argv[1] == "client":
        client(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]),
               float(sys.argv[6]))
    else:
        sys.exit(__doc__)
