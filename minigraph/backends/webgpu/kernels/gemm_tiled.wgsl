// Tiled GEMM: C[b][m, n] = sum_k A[b][m, k] * B[b][k, n], every operand through strides.
// One workgroup of 256 threads (16 x 16) computes a TM x TN tile of C; each thread RM x RN
// outputs (rows ty + 16*i, columns tx + 16*j, so the stores of a row of threads are consecutive).
// K is walked in 16-wide steps: the threads stage A's TM x 16 tile and B's 16 x TN tile in
// workgroup memory (the thread order follows the operand's unit stride, so loads coalesce; where
// that is K, a thread's k is the same for all its loads of a step, its offset computed once; the
// rows are padded by PAD elements, so staging along K hits 16 different banks), then every
// thread runs the 16-step product from workgroup memory. The next step's elements are loaded
// into registers before that product (and stored into workgroup memory after it), so the
// device memory's latency overlaps the arithmetic. Edges are bounds-checked (zeros
// outside). M, N, the strides and the batch axes are parameters (a new size reuses the
// pipeline); K is baked in (lavapipe leaked memory with a loop bound from a uniform around
// barriers, see matmul.wgsl). params: z offset, M, N, A's (m, k, k outer), B's (k, k outer, n),
// C's (m, n) strides, the piece stride, K's inner size, then (size, A, B, C stride) per batch
// axis, last first. K is cut into KCHUNKS pieces of at most KCH (llvmpipe bounds a shader's loops):
// wid.z = batch * KCHUNKS + piece, and with several pieces each writes its partial product to
// its own copy of C (offset piece * CTOTAL) for gemm_reduce.wgsl to add up; otherwise an epilogue
// (epilogue.py) may be applied to each result where it is stored. Each K step's 16
// products are summed before they join the running sum (two levels: shorter rounding chains).
{{PARAMS}}@group(0) @binding(1) var<storage, read> A: array<{{T}}>;
@group(0) @binding(2) var<storage, read> B: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> C: array<{{TC}}>;
{{EPILOGUE}}const TM: u32 = {{TM}}u;
const TN: u32 = {{TN}}u;
const SA: u32 = TM + {{PAD}}u;  // a staged row of A (one k), padded
const SB: u32 = TN + {{PAD}}u;
var<workgroup> ta: array<{{ACC}}, {{TA_SIZE}}>;  // [k][m], 16 x SA
var<workgroup> tb: array<{{ACC}}, {{TB_SIZE}}>;  // [k][n], 16 x SB
const K: u32 = {{K}}u;
const KCH: u32 = {{KCH}}u;
const KCHUNKS: u32 = {{KCHUNKS}}u;

fn k_term(k: u32, s_inner: u32, s_outer: u32) -> u32 {
  if ({{SPLIT}}) { let ki = prm(12u); return (k / ki) * s_outer + (k % ki) * s_inner; }
  return k * s_inner;
}
fn a_k(k: u32) -> u32 { return k_term(k, prm(4u), prm(5u)); }
fn b_k(k: u32) -> u32 { return k_term(k, prm(6u), prm(7u)); }

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let z = wid.z + prm(0u);
  let M = prm(1u);
  let N = prm(2u);
  let csm = prm(9u);
  let csn = prm(10u);
  let batch = z / KCHUNKS;
  let piece = z % KCHUNKS;
  var r = batch;
  var a_off = 0u;
  var b_off = 0u;
  var c_off = piece * prm(11u);
  for (var x = 0u; x < {{BR}}u; x = x + 1u) {
    let size = prm(13u + 4u * x);
    let q = r % size;
    r = r / size;
    a_off = a_off + q * prm(14u + 4u * x);
    b_off = b_off + q * prm(15u + 4u * x);
    c_off = c_off + q * prm(16u + 4u * x);
  }
  let m0 = wid.y * TM;
  let n0 = wid.x * TN;
  let tx = lid % 16u;
  let ty = lid / 16u;
{{ACC_DECL}}
  let t0 = piece * KCH;
  let t1 = min(K, t0 + KCH);
{{REG_DECL}}
{{LOAD_FIRST}}
  for (var t = t0; t < t1; t = t + 16u) {
{{STORE_STAGED}}
    workgroupBarrier();
    let tn = t + 16u;
    if (tn < t1) {
{{LOAD_NEXT}}
    }
{{TILE_DECL}}
    for (var kk = 0u; kk < 16u; kk = kk + 1u) {
{{LOAD_AB}}
{{FMA}}
    }
{{ADD}}
    workgroupBarrier();
  }
{{STORE}}
}
