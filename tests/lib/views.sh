# What a scheduler shows of every job, to compare two schedulers on one
# database (tests/fixtures, t0061-upgrade).
#
# dump_views SOCKET OUT: the job list, and each job's JSON, events and spec,
# as one JSON document (times are absolute: run with TZ=UTC).
dump_views() {
	python3 - "$1" "$2" <<'PY'
import json, socket, sys

def get(sock, path):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(sock)
    s.sendall(f"GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n".encode())
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    if b" 200 " not in head.split(b"\r\n")[0]:
        sys.exit(f"GET {path}: {head.splitlines()[0].decode()}")
    return body.decode()

sock, out = sys.argv[1], sys.argv[2]
jobs = json.loads(get(sock, "/v1/jobs"))
views = {"list": jobs, "jobs": {}}
for j in jobs["jobs"]:
    i = j["id"]
    views["jobs"][str(i)] = {
        "json": json.loads(get(sock, f"/v1/jobs/{i}")),
        "events": get(sock, f"/v1/jobs/{i}/events").splitlines(),
        "spec": get(sock, f"/v1/jobs/{i}/spec"),
    }
with open(out, "w") as f:
    json.dump(views, f, sort_keys=True, indent=1)
    f.write("\n")
PY
}

# same_views OLD NEW: every job of OLD reads the same in NEW. A later release
# may add keys to a job's JSON and events to its history (kept in order); any
# value OLD has must be there unchanged. Prints each difference.
same_views() {
	python3 - "$1" "$2" <<'PY'
import json, sys

old, new = (json.load(open(p)) for p in sys.argv[1:3])
diffs = []

def within(a, b, where):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k not in b:
                diffs.append(f"{where}.{k}: gone")
            else:
                within(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for n, (x, y) in enumerate(zip(a, b)):
            within(x, y, f"{where}[{n}]")
    elif a != b:
        diffs.append(f"{where}: {json.dumps(a)} -> {json.dumps(b)}")

within(old["list"], new["list"], "jobs")
for i, o in old["jobs"].items():
    n = new["jobs"].get(i)
    if n is None:
        diffs.append(f"job {i}: gone")
        continue
    within(o["json"], n["json"], f"job {i}")
    if o["spec"] != n["spec"]:
        diffs.append(f"job {i}: the spec differs")
    rest = iter(n["events"])
    for line in o["events"]:
        if not any(line == later for later in rest):
            diffs.append(f"job {i}: event gone: {line}")
            break
for d in diffs[:40]:
    print(f"# {d}")
sys.exit(1 if diffs else 0)
PY
}
