#!/bin/bash
# Issue 36: a Slurm node that really fails. n1's slurmd runs here, n2's in a
# network namespace of tests/lib/cluster.sh with its own address on the
# bridge; slurmctld listens on the bridge's. Cutting n2's link while a
# --no-requeue job runs there: after SlurmdTimeout (5 s here) Slurm sets n2
# DOWN and the job NODE_FAIL, as on a cluster whose node lost power. With
# the link back, ReturnToService=2 takes n2 back and it runs jobs again.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cluster.sh"
. "$(dirname "$0")/../lib/slurm.sh"
ip link add "$CL_BR" type bridge || fail "cannot create bridge $CL_BR"
on_cleanup "ip link del '$CL_BR'"
ip addr add "$CL_HEAD/24" dev "$CL_BR"
ip link set "$CL_BR" up
add_host n2
SLURM_CTLD_ADDR=$CL_HEAD
SLURM_NODE_ADDR[n2]=${CL_HOST_IP[n2]}
SLURM_NODE_NETNS[n2]=/run/netns/$(cl_ns n2)
SLURM_SLURMD_TIMEOUT=5
start_slurm n1 n2
pass "n1 here, n2 in a namespace at ${CL_HOST_IP[n2]}, both idle"
ensure_user parsa-slurm1 parsa-slurmers

job=$(slurm_as parsa-slurm1 sbatch --parsable --no-requeue -w n2 -o /dev/null --wrap 'sleep 300') ||
	fail "sbatch failed"
wait_for "job $job running on n2" 30 slurm_job_is "$job" RUNNING
t0=$(date +%s)
cut_host n2
wait_for "job $job in NODE_FAIL" 60 slurm_job_is "$job" NODE_FAIL
log "NODE_FAIL $(($(date +%s) - t0)) s after the cut; n2 is $(sinfo --noheader -n n2 -o %T)"
check "the reason is NodeDown" bash -c "scontrol show job -o $job | grep -q 'JobState=NODE_FAIL Reason=NodeDown'"
check "n2 is down" bash -c "sinfo --noheader -n n2 -o %T | grep -q '^down'"

heal_host n2
wait_for "n2 idle again" 60 slurm_nodes_idle
again=$(slurm_as parsa-slurm1 sbatch --parsable -w n2 -o /dev/null --wrap true) || fail "sbatch failed"
wait_for "job $again completed on n2" 30 slurm_job_is "$again" COMPLETED
pass "n2 runs jobs again after the link came back"
