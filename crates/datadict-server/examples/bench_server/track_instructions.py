#!/usr/bin/env python3
"""Instructions per /track request, counted by callgrind (exact, unlike this host's rates).

Usage: track_instructions.py SERVER_BINARY [REQUESTS]   (REQUESTS defaults to 3000)

Starts the release server under `valgrind --tool=callgrind` on a fresh data folder twice: once
with no requests (start-up and stop) and once with REQUESTS one-event form requests (`data=` the
base64 of compact JSON, the token in `properties.token`, as tracking libraries and the bench send)
from 16 keep-alive `http.client` threads, then SIGINT. Prints the instructions a request: the
second run minus the first, over REQUESTS, and the same without the data-quality journal's folds
(`Journal::fold`, or `fold_when_due` where the compiler inlined it there; it runs every 250 ms
whatever the load, so under valgrind's slowdown it would count several times what it costs at
full speed). Needs valgrind and callgrind_annotate.
"""
import base64, json, os, random, re, signal, subprocess, sys, tempfile, urllib.parse
from track_http import Server

NAMES = ["Page View", "Sign Up", "Purchase", "Add To Cart", "Search", "Share"]


def body(rng, i, token):
    event = {"event": rng.choice(NAMES), "properties": {
        "time": 1700000000000 + i, "distinct_id": f"user-{rng.randrange(50000):06}", "$insert_id": f"{rng.getrandbits(64):016x}-{i:010}",
        "$browser": "Chrome", "$os": "Linux", "$screen_width": 1920, "$screen_height": 1080, "page": "/pricing",
        "referrer": "https://www.example.com/some/landing/page?utm=1", "utm_campaign": "organic", "price": 12.5, "quantity": 3,
        "logged_in": True, "coupon": None, "cart": {"items": 2, "currency": "EUR"}, "tags": ["a", "b"], "$source": "bench", "token": token}}
    data = base64.b64encode(json.dumps(event, separators=(",", ":")).encode()).decode()
    return "data=" + urllib.parse.quote(data, safe="")


def run(server, requests, out):
    wrapper = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
    started = Server(server, "track-instructions.", wrapper, env=dict(os.environ, RUST_LOG="datadict_server=warn"))
    rng = random.Random(1)
    started.send([body(rng, i, started.token) for i in range(requests)], threads=16)
    proc = started.proc
    proc.send_signal(signal.SIGINT)
    proc.wait()
    total = int(re.search(r"^summary: (\d+)", open(out).read(), re.M).group(1))
    annotated = subprocess.run(["callgrind_annotate", "--inclusive=yes", out], capture_output=True, text=True).stdout
    # `fold` may be inlined into `fold_when_due`, the writer's call of it: the larger of the two.
    folds = [int(m.group(1).replace(",", "")) for m in re.finditer(r"^\s*([\d,]+) .*quality_journal::Journal::fold(?:_when_due)? ", annotated, re.M)]
    return total, max(folds, default=0)


def main():
    server = sys.argv[1]
    requests = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    out = tempfile.mkdtemp(prefix="callgrind.")
    idle, _ = run(server, 0, os.path.join(out, "idle"))
    busy, folds = run(server, requests, os.path.join(out, "busy"))
    print(json.dumps({"server": server, "requests": requests, "instructions_per_request": round((busy - idle) / requests),
                      "without_folds": round((busy - idle - folds) / requests), "callgrind_files": out}))


if __name__ == "__main__":
    main()
