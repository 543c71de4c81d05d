#!/bin/bash
# Submits a batch count of the n×n board in K shards to Slurm: a job array of K tasks
# (count.sbatch, one shard each) and a job that sums their lines once all of them have
# succeeded (sum.sbatch, --dependency=afterok). Prints the two job ids.
#
#   deploy/slurm/submit.sh N K [DIR] [sbatch options for both jobs...]
#   deploy/slurm/submit.sh 20 64 counts-20 --partition=long --time=2:00:00 --mem=128M
#
# --mem by N (and CPUs): what `queens memory N --parts K --cpus C` prints (README.md, "Memory
# per task").
#
# Past QUEENS_ARRAY_SIZE shards (default 1000, under Slurm's default MaxArraySize of 1001)
# the shards go in several arrays of at most that many tasks, each told K and its first
# shard O as arguments (`count.sbatch N DIR K O`: no --export among the sbatch options can
# drop them, and no variable of the environment moves a shard), and the sum waits for all
# of them.
#
# DIR (default queens-count-N) gets shard-IIIII.json per task, the jobs' logs
# (slurm-*.out) and total.txt. `queens` must be on PATH on the compute nodes, or set QUEENS
# to its path (sbatch passes the environment on).
set -euo pipefail

usage="usage: submit.sh N K [DIR] [sbatch options...]"
n=${1:?$usage}
k=${2:?$usage}
dir=${3:-queens-count-$n}
shift $(($# < 3 ? $# : 3))
[[ $k =~ ^[1-9][0-9]{0,8}$ ]] || { echo "submit.sh: K must be a positive number of at most 9 digits: $k" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
size=${QUEENS_ARRAY_SIZE:-1000}
[[ $size =~ ^[1-9][0-9]*$ ]] || { echo "submit.sh: QUEENS_ARRAY_SIZE must be a positive number: $size" >&2; exit 2; }
arrays=()
if ((k <= size)); then
    id=$(sbatch --parsable --array="0-$((k - 1))" --output="$dir/slurm-%A_%a.out" "$@" \
        "$here/count.sbatch" "$n" "$dir")
    arrays+=("${id%%;*}") # --parsable prints "id;cluster" on multi-cluster setups
else
    for ((offset = 0; offset < k; offset += size)); do
        tasks=$((k - offset < size ? k - offset : size))
        id=$(sbatch --parsable --array="0-$((tasks - 1))" --output="$dir/slurm-%A_%a.out" "$@" \
            "$here/count.sbatch" "$n" "$dir" "$k" "$offset")
        arrays+=("${id%%;*}")
    done
fi
count=$(IFS=,; echo "${arrays[*]}")
sum=$(sbatch --parsable --dependency="afterok:$(IFS=:; echo "${arrays[*]}")" --kill-on-invalid-dep=yes \
    --output="$dir/slurm-%j.out" "$@" "$here/sum.sbatch" "$dir")
sum=${sum%%;*}
echo "count array: $count"
echo "sum: $sum"
