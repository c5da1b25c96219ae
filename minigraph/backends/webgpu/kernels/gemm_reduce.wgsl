// The sum of a split-K product's partial products: C[i] = sum_p PART[p * n + i], the pieces
// added in order 0, 1, ..., PIECES - 1 (the same bits on every run), then stored through an
// epilogue (epilogue.py) when the step has one. params: n (the elements of C).
{{PARAMS}}@group(0) @binding(1) var<storage, read> part: array<{{ACC}}>;
@group(0) @binding(2) var<storage, read_write> C: array<{{TC}}>;
{{EPILOGUE}}
const PIECES: u32 = {{PIECES}}u;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = (wid.y * nwg.x + wid.x) * 256u + lid;
  let n = prm(0u);
  if (i >= n) { return; }
  var s: {{ACC}} = part[i];
  for (var p = 1u; p < PIECES; p = p + 1u) { s = s + part[p * n + i]; }
  C[i] = {{STORE}};
}
