#!/usr/bin/env bash
# One training step on the CPU cores, side by side: minigraph's cpu backend (Numba kernels, no GIL)
# and numpy backend against PyTorch eager and torch.compile, at several thread counts: the six-block
# step (N=32, 56x56) and MobileNetV2 (N=8, 112x112). The first process compiles the Numba kernels
# and caches them on disk; its compile time is printed first.
#
# Run from the project root (numba, PyTorch importable):  OUT=results bash benchmarks/cpu_step_run.sh
# THREADS overrides the thread counts (default: 1 2 4 8 16, those the machine has).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
status=0
cores=$(python3 -c "import os; print(len(os.sched_getaffinity(0)))")
threads=""
for t in ${THREADS:-1 2 4 8 16}; do [ "$t" -le "$cores" ] && threads="$threads,$t"; done
threads=${threads#,}
echo "== machine: $cores cores, load $(cut -d' ' -f1-3 /proc/loadavg); threads $threads"
python3 -m minigraph backends
echo "== first compile of the cpu backend's kernels (Numba, cached on disk afterwards)"
t0=$(date +%s.%N)
timeout 300 python3 -m minigraph profile --backend cpu --repeats 1 --top 5 >/dev/null || status=1
t1=$(date +%s.%N)
echo "first process on cpu (imports, Numba compiles, one profiled step): $(python3 -c "print(round($t1 - $t0, 1))") s"
t0=$(date +%s.%N)
timeout 300 python3 -m minigraph profile --backend cpu --repeats 1 --top 5 >/dev/null || status=1
t1=$(date +%s.%N)
echo "second process (kernels from Numba's disk cache): $(python3 -c "print(round($t1 - $t0, 1))") s"
step() {  # step NAME BACKEND NET THREADS PEERS REPEATS
    echo "== $2: $3 at threads $4 ($5)"
    timeout 300 python3 benchmarks/network_step.py --backend "$2" --nets "$3" --threads "$4" --repeats "$6" \
        --peers "$5" --json "$OUT/network_cpu_$1.json" || status=1
}
step sixblock_cpu cpu sixblock "$threads" minigraph,torch 5
step sixblock_compile cpu sixblock "1,$cores" minigraph,torch_compile 5
step mobilenet_v2_cpu cpu mobilenet_v2 "1,8,$cores" minigraph,torch,torch_compile 3
step sixblock_numpy numpy sixblock "1,8,$cores" minigraph 3
exit $status
