#!/usr/bin/env python3
"""submit_many.py SOCKET N [CLIENTS [SPEC]]: submits N copies of a spec (one
stage, `run = true`, unless SPEC gives the text) through the scheduler's API
on its unix socket (POST /v1/jobs), from CLIENTS threads at once (1), each
with one kept-alive connection and N / CLIENTS submissions: the fast way to a
long jobs/, and (bench/submit) how submissions scale with parallel clients.
Prints `submitted: N` and `submit_s: SECONDS`; exits 1 at the first refusal."""
import http.client
import json
import socket
import sys
import threading
import time


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=60)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(self.path)


def submit(path, body, n, failed):
    conn = UnixConnection(path)
    for i in range(n):
        conn.request("POST", "/v1/jobs", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        answer = resp.read()
        if resp.status != 201:
            print("submit_many: job %d: HTTP %d %s" % (i, resp.status, answer.decode(errors="replace")),
                  file=sys.stderr)
            failed.append(i)
            return


def main():
    path, n = sys.argv[1], int(sys.argv[2])
    clients = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    spec = sys.argv[4] if len(sys.argv) > 4 else "[stage a]\nrun = true\n"
    body = json.dumps({"name": "many.conf", "spec": spec})
    failed = []
    threads = [threading.Thread(target=submit, args=(path, body, n // clients + (c < n % clients), failed))
               for c in range(clients)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        sys.exit(1)
    print("submitted: %d" % n)
    print("submit_s: %.3f" % (time.monotonic() - start))


if __name__ == "__main__":
    main()
