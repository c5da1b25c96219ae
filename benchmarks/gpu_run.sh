#!/usr/bin/env bash
# The webgpu backend on an NVIDIA GPU (Vulkan): adapter, conformance suite, benchmark.
#
# Run from the project root on a machine with the GPU's Vulkan driver, wgpu, numpy and networkx
# importable (and PyTorch with CUDA for the comparison):
#   OUT=results bash benchmarks/gpu_run.sh
# BENCH_ARGS overrides the benchmark flags (default --sweep; --tiny to try it on lavapipe).
# Writes $OUT/adapter.txt, $OUT/conformance.txt, $OUT/gpu_depthwise.txt and $OUT/gpu_depthwise.json.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
export OUT
mkdir -p "$OUT"
status=0
python3 -c "import numpy, networkx" || { echo "minigraph needs numpy and networkx: pip install numpy networkx"; exit 3; }

echo "== adapter"
python3 - <<'PY' 2>&1 | tee "$OUT/adapter.txt"
import wgpu
a = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
print("adapter:", dict(a.info))
print("features:", sorted(a.features))
lim = a.limits
print("limits:", {k: lim[k] for k in ("max-storage-buffer-binding-size", "max-buffer-size",
                                      "max-compute-workgroup-storage-size", "max-compute-workgroups-per-dimension")})
for b in wgpu.gpu.enumerate_adapters_sync():
    print("  available:", dict(b.info).get("device"), dict(b.info).get("backend_type"), dict(b.info).get("adapter_type"))
PY
python3 -m minigraph backends 2>&1 | tee -a "$OUT/adapter.txt"

echo "== conformance (numpy and webgpu required)"
MINIGRAPH_REQUIRE_BACKENDS=numpy,webgpu timeout 240 python3 -m pytest tests/test_conformance.py \
    tests/test_webgpu_backend.py -q -x -o addopts="" -p no:cacheprovider 2>&1 | tee "$OUT/conformance.txt" | tail -40
[ "${PIPESTATUS[0]}" = 0 ] || status=1

echo "== benchmark: depthwise weights gradient, MobileNetV2 layers, N=32, fp32"
timeout 240 python3 benchmarks/gpu_depthwise.py ${BENCH_ARGS:---sweep} 2>&1 | tee "$OUT/gpu_depthwise.txt"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
exit $status
