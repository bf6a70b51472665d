#!/usr/bin/env python3
"""Batched /track requests (a batching tracking library's flush), compared between server builds.

Usage: track_batches.py SERVER_BINARY [SERVER_BINARY ...] [--rounds N] [--requests N]

Each round starts every given server in turn on a fresh data folder and sends it REQUESTS
(default 1,500) form-encoded requests of 60 events each (`data=` the base64 of a JSON array, about
30 KB, past the 16 KiB that `/track` reads on the request's own task) from 4 keep-alive
`http.client` threads, every answer `1`. Prints each run's events/s and the server's CPU an event
(`/proc/<pid>/stat`), alternating the servers so that this host's drift falls on all of them alike
(default 3 rounds). Not a timed test, and not part of `cargo xtask bench`: a helper for comparing
two builds on the path of larger bodies.
"""
import argparse, base64, json, os, random, time, urllib.parse
from track_http import Server

EVENTS_PER_REQUEST = 60


def bodies(token, requests):
    rng, now = random.Random(1), int(time.time() * 1000)
    out = []
    for r in range(requests):
        events = [{"event": rng.choice(["Page View", "Sign Up", "Purchase"]), "properties": {
            "token": token, "time": now - 1000, "distinct_id": f"u{rng.randrange(1000)}", "$insert_id": f"{r}-{i}",
            "$browser": "Chrome", "$os": "Linux", "page": "/pricing", "referrer": "https://www.example.com/landing?utm=1",
            "price": 12.5, "cart": {"items": 2}, "tags": ["a", "b"]}} for i in range(EVENTS_PER_REQUEST)]
        text = json.dumps(events, separators=(",", ":")).encode()
        assert len(text) > 16 * 1024, "a body must be larger than 16 KiB once decoded"
        out.append("data=" + urllib.parse.quote(base64.b64encode(text).decode(), safe=""))
    return out


def run(server, requests):
    started = Server(server, "track-batches.")
    sent = bodies(started.token, requests)

    def cpu_secs():
        fields = open(f"/proc/{started.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    cpu_before, began = cpu_secs(), time.time()
    started.send(sent, threads=4)
    secs, cpu = time.time() - began, cpu_secs() - cpu_before
    started.proc.kill()
    started.proc.wait()
    events = requests * EVENTS_PER_REQUEST
    return {"server": server, "events": events, "events_per_sec": round(events / secs), "server_cpu_us_per_event": round(cpu * 1e6 / events, 1)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("servers", nargs="+")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=1500)
    args = parser.parse_args()
    for _ in range(args.rounds):
        for server in args.servers:
            print(json.dumps(run(server, args.requests)), flush=True)


if __name__ == "__main__":
    main()
