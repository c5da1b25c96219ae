// C[b] = A[b] @ B[b] with 16x16 tiles in workgroup memory; batch axes broadcast.
// params: M, N, K, batch offset, then per batch axis (size, A stride, B stride), last first.
{{PARAMS}}
@group(0) @binding(1) var<storage, read> A: array<{{T}}>;
@group(0) @binding(2) var<storage, read> B: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> C: array<{{T}}>;
var<workgroup> ta: array<array<{{ACC}}, 16>, 16>;
var<workgroup> tb: array<array<{{ACC}}, 16>, 16>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let M = prm(0u);
  let N = prm(1u);
  let K = prm(2u);
  let batch = wid.z + prm(3u);
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
  for (var t = 0u; t < K; t = t + 16u) {
    var av: {{ACC}} = {{ZERO}};
    if (row < M && t + lid.x < K) { av = {{ACC}}(A[a_off + row * K + t + lid.x]); }
    var bv: {{ACC}} = {{ZERO}};
    if (t + lid.y < K && col < N) { bv = {{ACC}}(B[b_off + (t + lid.y) * N + col]); }
    ta[lid.y][lid.x] = av;
    tb[lid.y][lid.x] = bv;
    workgroupBarrier();
    for (var k = 0u; k < 16u; k = k + 1u) { acc = acc + ta[lid.y][k] * tb[k][lid.x]; }
    workgroupBarrier();
  }
  if (row < M && col < N) { C[batch * M * N + row * N + col] = {{T}}(acc); }
}
