# What the runners stamped on a stage's instances, read from the mount's
# stages/<s>/instances/<i>/status.json (times in ms on the host's clock).
# Source after common.sh.

# instance_times JOB STAGE: one line per instance,
# "INDEX STARTED_MS ENDED_MS CPU_MS STATE" (-1 for what is unknown).
instance_times() {
	python3 - "$MNT/jobs/$1/stages/$2/instances" <<'PY'
import json, os, sys
root = sys.argv[1]
for name in sorted(os.listdir(root), key=int):
    with open(os.path.join(root, name, "status.json")) as f:
        j = json.load(f)
    def num(k):
        v = j.get(k)
        return -1 if v is None else v
    print(j["index"], num("started_ms"), num("ended_ms"), num("cpu_ms"), j["state"])
PY
}

# concurrency: reads instance_times lines on stdin and prints
# "MAKESPAN_MS MEAN_CONCURRENCY MAX_CONCURRENCY" over those with both stamps.
concurrency() {
	python3 -c '
import sys
spans = []
for line in sys.stdin:
    f = line.split()
    s, e = int(f[1]), int(f[2])
    if s > 0 and e >= s:
        spans.append((s, e))
if not spans:
    print("0 0 0"); sys.exit()
first = min(s for s, _ in spans); last = max(e for _, e in spans)
busy = sum(e - s for s, e in spans)
points = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans], key=lambda p: (p[0], p[1]))
cur = peak = 0
for _, d in points:
    cur += d; peak = max(peak, cur)
span = max(last - first, 1)
print(span, "%.2f" % (busy / span), peak)
'
}

# now_ms: the wall clock in ms, as the runners stamp it.
now_ms() { echo $(($(date +%s%N) / 1000000)); }
