// C[b] = A[b] @ B[b] with 16x16 tiles in workgroup memory; batch axes broadcast.
// params: M, N, z offset, batch count, then per batch axis (size, A stride, B stride), last first.
// K is baked into the source: with K read from the uniform, lavapipe leaked memory on every
// dispatch of this kernel (a loop bound from a uniform around barriers). The K axis is cut into
// KCHUNKS pieces of at most 16 * TILES, so the tile loop has a fixed bound: wid.z = batch *
// KCHUNKS + piece, and with more than one piece each writes its partial product to C[piece][batch]
// for gemm_reduce.wgsl to add up
// (else STORE may apply an epilogue, epilogue.py). Each tile's 16 products are summed before they join the running sum
// (two levels: shorter rounding chains than one).
{{PARAMS}}
@group(0) @binding(1) var<storage, read> A: array<{{T}}>;
@group(0) @binding(2) var<storage, read> B: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> C: array<{{TC}}>;
{{EPILOGUE}}var<workgroup> ta: array<array<{{ACC}}, 16>, 16>;
var<workgroup> tb: array<array<{{ACC}}, 16>, 16>;
const K: u32 = {{K}}u;
const TILES: u32 = {{TILES}}u;
const KCHUNKS: u32 = {{KCHUNKS}}u;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let M = prm(0u);
  let N = prm(1u);
  let z = wid.z + prm(2u);
  let batch = z / KCHUNKS;
  let piece = z % KCHUNKS;
  var r = batch;
  var a_off = 0u;
  var b_off = 0u;
  for (var k = 0u; k < {{BR}}u; k = k + 1u) {
    let size = prm(4u + 3u * k);
    let q = r % size;
    r = r / size;
    a_off = a_off + q * prm(5u + 3u * k);
    b_off = b_off + q * prm(6u + 3u * k);
  }
  let row = wid.y * 16u + lid.y;
  let col = wid.x * 16u + lid.x;
  var acc: {{ACC}} = {{ZERO}};
  let t0 = piece * TILES * 16u;
  let t1 = min(K, t0 + TILES * 16u);
  for (var t = t0; t < t1; t = t + 16u) {
    var av: {{ACC}} = {{ZERO}};
    if (row < M && t + lid.x < K) { av = {{ACC}}(A[a_off + row * K + t + lid.x]); }
    var bv: {{ACC}} = {{ZERO}};
    if (t + lid.y < K && col < N) { bv = {{ACC}}(B[b_off + (t + lid.y) * N + col]); }
    ta[lid.y][lid.x] = av;
    tb[lid.y][lid.x] = bv;
    workgroupBarrier();
    var tile: {{ACC}} = {{ZERO}};
    for (var k = 0u; k < 16u; k = k + 1u) { tile = tile + ta[lid.y][k] * tb[k][lid.x]; }
    acc = acc + tile;
    workgroupBarrier();
  }
  if (row < M && col < N) { let o = (piece * prm(3u) + batch) * M * N + row * N + col; C[o] = {{STORE}}; }
}
