#!/usr/bin/env bash
# One training step on the GPU, side by side: minigraph webgpu (Vulkan) against PyTorch CUDA eager,
# torch.compile and JAX jit (six blocks; MobileNetV2 without JAX), then a GPU-timestamp profile of
# the six-block step by op type.
#
# Run from the project root on the GPU machine (PyTorch with CUDA, JAX, onnx importable):
#   OUT=results bash benchmarks/gpu_step_run.sh
# Writes $OUT/network_gpu.json (each minigraph plan's steps and dispatches, the minigraph_upload peer's upload rate).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
status=0
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import jax; print('jax', jax.__version__, jax.devices())" 2>&1 | tail -1
python3 -m minigraph backends
timeout ${STEP_TIMEOUT:-420} python3 benchmarks/network_step.py --backend webgpu --nets ${NETS:-sixblock,mobilenet_v2} \
    --repeats ${REPEATS:-10} --peers minigraph,minigraph_upload,torch,torch_compile,jax,torch_upload --json "$OUT/network_gpu.json" || status=1
timeout 150 python3 -m minigraph profile --backend webgpu --repeats 3 --top 25 --by-type 2>&1 | tee "$OUT/profile_gpu.txt" | tail -45
exit $status
