#!/usr/bin/env python3
"""submit_many.py SOCKET N: submits N copies of a one-stage `run = true` spec
through the scheduler's API on its unix socket (POST /v1/jobs, one kept-alive
connection), the fast way to a long jobs/. Prints `submitted: N` and
`submit_s: SECONDS`; exits 1 at the first refusal."""
import http.client
import json
import socket
import sys
import time


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=60)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(self.path)


def main():
    path, n = sys.argv[1], int(sys.argv[2])
    body = json.dumps({"name": "many.conf", "spec": "[stage a]\nrun = true\n"})
    conn = UnixConnection(path)
    start = time.monotonic()
    for i in range(n):
        conn.request("POST", "/v1/jobs", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        answer = resp.read()
        if resp.status != 201:
            print("submit_many: job %d: HTTP %d %s" % (i, resp.status, answer.decode(errors="replace")),
                  file=sys.stderr)
            sys.exit(1)
    print("submitted: %d" % n)
    print("submit_s: %.1f" % (time.monotonic() - start))


if __name__ == "__main__":
    main()
