"""What the `/track` helper scripts beside this file share: a release server started on a fresh
data folder (under a wrapper such as valgrind, if given), and form bodies sent to its `/track` over
keep-alive connections, every answer `1`."""
import http.client, json, os, subprocess, tempfile, threading


class Server:
    """`server` started with `--data-dir` a fresh folder and `--listen 127.0.0.1:0`, after `wrapper`
    (a command prefix); `host`, `port` and the demo project's `token` once it listens."""

    def __init__(self, server, prefix, wrapper=(), env=None):
        folder = tempfile.mkdtemp(prefix=prefix)
        cmd = [*wrapper, server, "--data-dir", folder, "--listen", "127.0.0.1:0", "--web-dir", os.path.join(folder, "none")]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        for line in self.proc.stdout:
            if line.startswith("datadict is listening on "):
                self.host, port = line.split()[-1].rstrip("/").removeprefix("http://").split(":")
                self.port = int(port)
                break
        else:
            raise SystemExit(f"{server} stopped before it listened")
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()
        self.token = json.load(open(os.path.join(folder, "demo-credentials.json")))["project_token"]

    def send(self, bodies, threads):
        """Sends each of `bodies` once to `/track` from `threads` keep-alive connections."""
        next_index, lock = iter(range(len(bodies))), threading.Lock()

        def client():
            conn = http.client.HTTPConnection(self.host, self.port)
            while True:
                with lock:
                    i = next(next_index, None)
                if i is None:
                    return
                conn.request("POST", "/track", bodies[i], {"Content-Type": "application/x-www-form-urlencoded"})
                answer = conn.getresponse().read()
                assert answer == b"1", answer

        clients = [threading.Thread(target=client) for _ in range(threads)]
        [t.start() for t in clients]
        [t.join() for t in clients]
