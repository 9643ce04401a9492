# dump_views SOCKET OUT: what a scheduler shows of every job, for comparing two
# schedulers on one database (tests/fixtures): the job list, each job's JSON
# (keys sorted), its events and its spec. Times are absolute (TZ=UTC).
dump_views() {
	local sock=$1 out=$2 id
	: >"$out"
	curl -sf --unix-socket "$sock" http://localhost/v1/jobs |
		python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin), sort_keys=True, indent=1))' >>"$out" ||
		return 1
	for id in $(curl -sf --unix-socket "$sock" http://localhost/v1/jobs |
		python3 -c 'import json,sys; print(" ".join(str(j["id"]) for j in json.load(sys.stdin)["jobs"]))'); do
		echo "=== job $id" >>"$out"
		curl -sf --unix-socket "$sock" "http://localhost/v1/jobs/$id" |
			python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin), sort_keys=True, indent=1))' >>"$out" ||
			return 1
		echo "--- events" >>"$out"
		curl -sf --unix-socket "$sock" "http://localhost/v1/jobs/$id/events" >>"$out" || return 1
		echo "--- spec" >>"$out"
		curl -sf --unix-socket "$sock" "http://localhost/v1/jobs/$id/spec" >>"$out" || return 1
	done
}
