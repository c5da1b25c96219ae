"""sparse_tensor and its gradient kernels (semantics: ``ops/sparse.py``): one invocation per dense
element over the values (COO) or its row's / column's values (CSR / CSC), and one per value for
the gradient; the loops over the values (or the rows) run in passes (``loops.long_loop``), in the
order of the values, so duplicates add in the NumPy kernel's order."""
from __future__ import annotations

from math import prod

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
_GRAD_COO = """  let r = i64_of(i0[k]);
  let c = i64_of(i1[k]);
  if (inside(r, c)) { acc = {{C_T}}(dy[u32(r) * {{COLS}}u + u32(c)]); }"""
_GRAD_COMPRESSED = """  for (var o = j0; o < j1; o = o + 1u) {
    let lo = start(o);
    if (i32(k) >= lo && i32(k) < max(start(o + 1u), lo)) {
      let r = {{R}};
      let c = {{C}};
      if (inside(r, c)) { acc = acc + {{C_T}}(dy[u32(r) * {{COLS}}u + u32(c)]); }
    }
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


@webgpu_kernel("sparse_tensor_gradient")
def _sparse_grad(step, kb):
    out = step.out_types[0]
    st = step.attrs["sparse_storage_type"]
    rows, cols = step.in_types[0].shape
    nnz = out.shape[0]
    if not nnz:
        return
    dt, idx = out.dtype.name, step.in_types[1].dtype.name
    ct = COMPUTE[dt]
    if st == SparseStorageType.COO:
        body, n = _GRAD_COO, 1
    else:
        n = prod(step.in_types[2].shape) - 1
        rc = ("i32(o)", "i64_of(i0[k])") if st == SparseStorageType.CSR else ("i64_of(i0[k])", "i32(o)")
        body = _GRAD_COMPRESSED.replace("{{R}}", rc[0]).replace("{{C}}", rc[1])
    code = render("sparse_grad", PARAMS=params_decl(2), BODY=body.replace("{{C_T}}", ct).replace("{{COLS}}", str(cols)),
                  T=STORAGE[dt], I=STORAGE[idx], TO_I32=_to_i32(idx), C_T=ct, NNZ=nnz, N=max(n, 0),
                  ROWS=rows, COLS=cols)

    def record(j0, j1, state):
        kb.dispatch(code, [("u", [j0, j1]), ("ro", kb.input(0)), ("ro", kb.input(1)), ("ro", kb.input(2)),
                           ("rw", kb.output()), ("rw", state)], -(-nnz // 256))

    if st == SparseStorageType.COO:
        record(0, 1, kb.scratch(4))
    else:
        long_loop(kb, max(n, 0), nnz, 1, record)
