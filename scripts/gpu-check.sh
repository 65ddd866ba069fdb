#!/bin/sh
# What a machine with an NVIDIA GPU shows that the emulated runtime cannot:
# the CUDA suite on the real runtime, the GPU benchmark (cases A-E, then 1
# to 32 mutated inputs on the legacy default stream and on a stream of
# their own), the CPU benchmark on the same machine, the whole unit suite
# and the bench's own tests.  Runs from a tree built with CUDA (`make
# build/bin/wrapbake-tests all`); each log goes into DIR, with the
# machine's description in DIR/env.txt.  Prints a line per step with its
# exit status and seconds; exits 1 if any step failed.
#
#   sh scripts/gpu-check.sh DIR
set -u
[ $# -eq 1 ] || { echo "usage: sh scripts/gpu-check.sh DIR" >&2; exit 2; }
mkdir -p "$1" && out=$(cd "$1" && pwd) || exit 2
cd "$(dirname "$0")/.." || exit 2
home=$(mktemp -d "${TMPDIR:-/tmp}/wrapbake-gpu.XXXXXX") || exit 2
trap 'rm -rf "$home"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export HOME="$home/home" XDG_CACHE_HOME= WRAPBAKE_CACHE_DIR="$home/cache"
mkdir -p -m 700 "$HOME"
bench="build/bin/wrapbake-bench --calls 5000 --reps 15 --wide"
{
    date -u
    nvidia-smi
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
    echo "WRAPBAKE_CUDART=${WRAPBAKE_CUDART:-}"
    command -v cc python3
    grep -m1 'model name' /proc/cpuinfo
    nproc
    uname -a
} >"$out/env.txt" 2>&1

failed=0
step() {
    name=$1 limit=$2
    shift 2
    t0=$(date +%s)
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || failed=1
    echo "$name: exit $rc, $(($(date +%s) - t0)) s"
}
step cuda 150 build/bin/wrapbake-tests --filter 'cuda/*' --verbose=1
step bench-mut 90 $bench --device cuda --spec bench/cuda-mutations.txt
step bench-mut-stream 90 $bench --device cuda --spec bench/cuda-mutations.txt --stream
step bench-AE 90 $bench --device cuda
step bench-cpu 60 $bench
step unit 150 build/bin/wrapbake-tests --jobs "$(nproc)"
step benchtest 100 sh tests/bench/run.sh build/bin/wrapbake-bench
exit $failed
