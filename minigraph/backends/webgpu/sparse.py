"""The sparse_tensor kernel (semantics: ``ops/sparse.py``): one invocation per dense element over
the values (COO) or its row's / column's values (CSR / CSC); the loop over the values runs in
passes (``loops.long_loop``), in the order of the values, so duplicates add in the NumPy
kernel's order."""
from __future__ import annotations

from ...descriptors import SparseStorageType
from .loops import long_loop
from .registry import webgpu_kernel
from .wgsl import COMPUTE, STORAGE, params_decl, render

_COO = """  for (var k = j0; k < j1; k = k + 1u) {
    if (i64_of(i0[k]) == r && i64_of(i1[k]) == c) { acc = acc + {{C_T}}(vals[k]); }
  }"""
_COMPRESSED = """  let lo = max(j0, start(u32({{OUTER}})));
  let hi = min(j1, max(start(u32({{OUTER}}) + 1u), start(u32({{OUTER}}))));
  for (var k = lo; k < hi; k = k + 1u) {
    if (i64_of(i0[k]) == {{INNER}}) { acc = acc + {{C_T}}(vals[k]); }
  }"""
def _to_i32(idx: str) -> str:
    # a uint32 index past i32's range is out of any shape: map it to -1
    return "v" if idx == "int32" else "select(i32(v), -1, v > 2147483647u)"


@webgpu_kernel("sparse_tensor")
def _sparse(step, kb):
    out = step.out_types[0]
    st = step.attrs["sparse_storage_type"]
    rows, cols = out.shape
    nnz = step.in_types[0].shape[0]
    total = rows * cols
    if not total:
        return
    dt, idx = out.dtype.name, step.in_types[1].dtype.name
    ct = COMPUTE[dt]
    if st == SparseStorageType.COO:
        body = _COO
    else:
        outer, inner = ("r", "c") if st == SparseStorageType.CSR else ("c", "r")
        body = _COMPRESSED.replace("{{OUTER}}", outer).replace("{{INNER}}", inner)
    code = render("sparse_dense", PARAMS=params_decl(2), BODY=body.replace("{{C_T}}", ct), T=STORAGE[dt],
                  I=STORAGE[idx], TO_I32=_to_i32(idx), C_T=ct, NNZ=nnz, TOTAL=total, COLS=cols)

    def record(j0, j1, state):
        kb.dispatch(code, [("u", [j0, j1]), ("ro", kb.input(0)), ("ro", kb.input(1)), ("ro", kb.input(2)),
                           ("rw", kb.output()), ("rw", state)], -(-total // 256))

    long_loop(kb, nnz, total, 1, record)
