#!/bin/bash
# A record run rehearsed on one machine: a one-node Slurm cluster of its own (munged,
# slurmctld and slurmd, configured and kept under DIR), `queens estimate N --parts K`, then the
# Slurm recipe as a user runs it (deploy/slurm/submit.sh N K, one task at a time on every CPU),
# two tasks requeued part way through their count, and the sum. Prints the estimate, the
# requeues, the total and the wall time from submit to sum; everything it started is stopped
# when it ends.
#
#   benches/slurm/rehearse.sh N K [DIR]      # as root; e.g. benches/slurm/rehearse.sh 22 1024
#
# Needs Debian's slurm-wlm and munge (`apt-get install slurm-wlm munge`) and a release build
# (`cargo build --release`; or set QUEENS to a `queens` binary). DIR defaults to
# /tmp/queens-rehearsal-N and is emptied first. Not a test: it takes as long as the count.
set -euo pipefail

usage="usage: rehearse.sh N K [DIR]"
n=${1:?$usage}
k=${2:?$usage}
dir=${3:-/tmp/queens-rehearsal-$n}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
queens=${QUEENS:-$repo/target/release/queens}
cpus=$(nproc)
# Nine tenths of the machine's memory, in MiB, as the configuration's template says.
memory=$(awk '/^MemTotal:/ { print int($2 / 1024 * 0.9) }' /proc/meminfo)
[[ $(id -u) == 0 ]] || { echo "rehearse.sh: run as root (slurmd starts the tasks)" >&2; exit 2; }
[[ -x $queens ]] || { echo "rehearse.sh: no queens at $queens: cargo build --release" >&2; exit 2; }
for tool in munged slurmctld slurmd sbatch; do
    command -v "$tool" > /dev/null || [[ -x /usr/sbin/$tool ]] ||
        { echo "rehearse.sh: $tool missing: apt-get install slurm-wlm munge" >&2; exit 2; }
done

log() { echo "[$(date -u +%H:%M:%S)] $*"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

rm -rf "$dir"
mkdir -p "$dir"/{munge,state,spool,log}
dir=$(cd "$dir" && pwd)
chmod 755 "$dir/munge"
head -c 1024 /dev/urandom > "$dir/munge/munge.key"
chmod 600 "$dir/munge/munge.key"
export SLURM_CONF=$dir/slurm.conf
# The configuration the Slurm system test uses too, filled in.
sed -e "s|@CLUSTER@|queens-rehearsal|" -e "s|@CTLD_PORT@|$(free_port)|" \
    -e "s|@SLURMD_PORT@|$(free_port)|" -e "s|@SOCKET@|$dir/munge/munge.socket|" \
    -e "s|@DIR@|$dir|g" -e "s|@CPUS@|$cpus|" -e "s|@MEMORY@|$memory|" \
    "$repo/tests/system/deploy_slurm/one-node.conf" > "$SLURM_CONF"

daemons=()
stop() {
    scancel --user=root > /dev/null 2>&1 || true
    sleep 1
    for pid in "${daemons[@]}"; do kill "$pid" 2> /dev/null || true; done
    wait 2> /dev/null || true
}
trap stop EXIT
/usr/sbin/munged --foreground --force --socket="$dir/munge/munge.socket" \
    --key-file="$dir/munge/munge.key" --log-file="$dir/munge/munged.log" \
    --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed" \
    > "$dir/log/munged.out" 2>&1 &
daemons+=($!)
until [[ -S $dir/munge/munge.socket ]]; do sleep 0.1; done
/usr/sbin/slurmctld -D > "$dir/log/slurmctld.out" 2>&1 &
daemons+=($!)
until scontrol ping 2> /dev/null | grep -q 'is UP'; do sleep 0.2; done
/usr/sbin/slurmd -D -N localhost > "$dir/log/slurmd.out" 2>&1 &
daemons+=($!)
until [[ $(sinfo -h -o %T 2> /dev/null) == idle ]]; do sleep 0.2; done
log "cluster up: $(sinfo -h -o '%N %c CPUs %T')"

log "queens estimate $n --parts $k --samples 16 --seed 1"
"$queens" estimate "$n" --parts "$k" --samples 16 --seed 1 --cpus-per-task "$cpus" | tee "$dir/estimate.txt"
mem=$("$queens" memory "$n" --parts "$k" --cpus "$cpus" | awk -v n="$n" '$1 == n { print $NF }')

log "submit.sh $n $k $dir/counts -c $cpus --mem=${mem}M"
started=$(date +%s.%N)
QUEENS=$queens "$repo/deploy/slurm/submit.sh" "$n" "$k" "$dir/counts" -c "$cpus" "--mem=${mem}M" \
    | tee "$dir/submit.txt"
arrays=$(awk '/^count array:/ { print $3 }' "$dir/submit.txt" | tr , ' ')
sum=$(awk '/^sum:/ { print $2 }' "$dir/submit.txt")

# Once `after` shard files are in, requeues the task then running, `wait` seconds into its
# count, then has it started again as soon as its old run is gone (a requeued job waits two
# minutes first, and slurmd refuses a new run in the second its old one was killed in).
read -r -a ids <<< "$arrays"
requeue() {
    local after=$1 wait=$2 task="" array shard
    while (($(ls "$dir/counts" | grep -c '^shard-') < after)); do sleep 0.5; done
    # A task that has just started (Slurm shows its time in whole seconds).
    until [[ -n $task ]]; do
        task=$(squeue -h -t RUNNING -o '%i %M' -n queens-count 2> /dev/null | awk '$2 == "0:00" { print $1; exit }')
        [[ -n $task ]] || sleep 0.1
    done
    sleep "$wait"
    array=${task%_*}
    for i in "${!ids[@]}"; do [[ ${ids[$i]} == "$array" ]] && shard=$((i * ${QUEENS_ARRAY_SIZE:-1000} + ${task#*_})); done
    shard=$(printf %05d "$shard")
    log "requeue $task (shard $shard) ${wait} s into its run; temporary files: $(ls -a "$dir/counts" | grep -c "^\.shard-$shard" || true), shard file: $(ls "$dir/counts" | grep -c "^shard-$shard" || true)"
    scontrol requeue "$task" || { log "requeue of $task refused (ended first?): another task"; requeue "$after" "$wait"; return; }
    until [[ $(squeue -h -j "$task" -o %T 2> /dev/null) == PENDING ]]; do sleep 0.2; done
    while ls -a "$dir/counts" | grep -q "^\.shard-$shard"; do sleep 0.2; done
    sleep 2
    scontrol update "JobId=$task" StartTime=now
}
part_s=$(awk '/^CPU seconds per part:/ { print $5 / '"$cpus"' }' "$dir/estimate.txt")
half=$(awk -v s="$part_s" 'BEGIN { printf "%.1f", s / 2 }')
requeue $((k / 8)) "$half"
requeue $((k / 2)) "$half"

log "waiting for the sum (job $sum)"
while squeue -h -j "$sum" 2> /dev/null | grep -q .; do sleep 2; done
ended=$(date +%s.%N)
log "done in $(awk -v a="$started" -v b="$ended" 'BEGIN { printf "%.0f", b - a }') s from submit to sum"
echo "--- total.txt"
cat "$dir/counts/total.txt"
echo "--- restarts"
for id in "${ids[@]}"; do
    scontrol -o show job "$id" 2> /dev/null | grep -o 'JobId=[0-9]* ArrayJobId=[0-9]* ArrayTaskId=[0-9]*\|Restarts=[1-9][0-9]*' | paste - - | grep Restarts || true
done
grep -l ', restart 1, ' "$dir"/counts/slurm-*.out || true
