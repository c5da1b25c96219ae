// Tiled GEMM: C[b][m, n] = sum_k A[b][m, k] * B[b][k, n], every operand through strides.
// One workgroup of 256 threads computes a 64x64 tile of C; each thread 4x4 outputs (rows
// ty + 16*i, columns tx + 16*j, so the stores of a row of threads are consecutive). K is walked
// in 16-wide steps: each thread stages 4 elements of A's 64x16 tile and 4 of B's 16x64 tile in
// workgroup memory (the thread order follows the operand's unit stride, so loads coalesce),
// then every thread runs the 16-step product from workgroup memory. Edges are bounds-checked
// (zeros outside). M, N, the strides and the batch axes are parameters (a new size reuses the
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
{{EPILOGUE}}var<workgroup> ta: array<{{ACC}}, 1024>;  // [k][m], 16 x 64
var<workgroup> tb: array<{{ACC}}, 1024>;  // [k][n], 16 x 64
const K: u32 = {{K}}u;
const KCH: u32 = {{KCH}}u;
const KCHUNKS: u32 = {{KCHUNKS}}u;

fn k_term(k: u32, s_inner: u32, s_outer: u32) -> u32 {
  if ({{SPLIT}}) { let ki = prm(12u); return (k / ki) * s_outer + (k % ki) * s_inner; }
  return k * s_inner;
}
fn a_index(m: u32, k: u32) -> u32 { return m * prm(3u) + k_term(k, prm(4u), prm(5u)); }
fn b_index(k: u32, n: u32) -> u32 { return n * prm(8u) + k_term(k, prm(6u), prm(7u)); }

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
  let m0 = wid.y * 64u;
  let n0 = wid.x * 64u;
  let tx = lid % 16u;
  let ty = lid / 16u;
{{ACC_DECL}}
  let t0 = piece * KCH;
  let t1 = min(K, t0 + KCH);
  for (var t = t0; t < t1; t = t + 16u) {
    for (var q = 0u; q < 4u; q = q + 1u) {
      let e = lid + 256u * q;
{{LOAD_A}}
      var av: {{ACC}} = {{ZERO}};
      if (m0 + am < M && t + ak < K) { av = {{ACC}}(A[a_off + a_index(m0 + am, t + ak)]); }
      ta[ak * 64u + am] = av;
{{LOAD_B}}
      var bv: {{ACC}} = {{ZERO}};
      if (t + bk < K && n0 + bn < N) { bv = {{ACC}}(B[b_off + b_index(t + bk, n0 + bn)]); }
      tb[bk * 64u + bn] = bv;
    }
    workgroupBarrier();
{{TILE_DECL}}
    for (var kk = 0u; kk < 16u; kk = kk + 1u) {
      let a0 = ta[kk * 64u + ty];
      let a1 = ta[kk * 64u + ty + 16u];
      let a2 = ta[kk * 64u + ty + 32u];
      let a3 = ta[kk * 64u + ty + 48u];
      let b0 = tb[kk * 64u + tx];
      let b1 = tb[kk * 64u + tx + 16u];
      let b2 = tb[kk * 64u + tx + 32u];
      let b3 = tb[kk * 64u + tx + 48u];
{{FMA}}
    }
{{ADD}}
    workgroupBarrier();
  }
{{STORE}}
}
