#!/usr/bin/env bash
# Whole-network speed on one machine: a training step on the CPU at several thread counts and,
# where a GPU is, on the GPU (webgpu vs PyTorch CUDA), plus a profile of one step.
#
# Run from the project root (PyTorch, JAX and onnx importable for the peers and the MobileNetV2
# import):  OUT=results bash benchmarks/network_run.sh
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
python3 -m minigraph backends 2>&1 | tee "$OUT/backends.txt"

echo "== CPU: six depthwise-separable blocks, N=32, 56x56"
timeout 400 python3 benchmarks/network_step.py --nets sixblock --threads "$threads" --repeats 5 \
    --json "$OUT/network_cpu_sixblock.json" || status=1
echo "== CPU: MobileNetV2, N=8, 112x112"
timeout 400 python3 benchmarks/network_step.py --nets mobilenet_v2 --threads "1,$cores" --repeats 3 \
    --peers minigraph,torch --json "$OUT/network_cpu_mobilenet_v2.json" || status=1

if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    echo "== GPU: six blocks N=32 56x56, MobileNetV2 N=32 224x224 (webgpu vs PyTorch CUDA)"
    timeout 400 python3 benchmarks/network_step.py --backend webgpu --nets sixblock,mobilenet_v2 --repeats 10 \
        --peers minigraph,torch --json "$OUT/network_gpu.json" || status=1
fi
if python3 -m minigraph profile --help >/dev/null 2>&1; then
    echo "== profile of one six-block step"
    timeout 200 python3 -m minigraph profile --repeats 3 --top 12 --by-type 2>&1 | tee "$OUT/profile_cpu.txt"
    timeout 200 python3 -m minigraph profile --backend webgpu --repeats 5 --top 12 --by-type 2>&1 \
        | tee "$OUT/profile_gpu.txt"
fi
exit $status
