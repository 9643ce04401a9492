#!/bin/bash
# Issue 15 item 1: the stress mix of tests/soak/stress.sh (cp and .clone
# submitters, .rejected writers, readers of jobs/last's views, listings,
# instance views) for 30 s on the suite's build: no daemon dies, the mount
# never answers ENOTCONN, no sanitizer report. The soak runs it for longer.
exec bash "$(dirname "$0")/../soak/stress.sh" "${STRESS_SECONDS:-30}"
