// Row kernels (softmax, softmax cross entropy): LANES threads per row, 256 / LANES rows per
// workgroup. A row is L elements `inner` apart: row r starts at (r / inner) * L * inner + r % inner.
{{PARAMS}}
const LANES: u32 = {{LANES}}u;
var<workgroup> sh: array<f32, 256>;

// the max (or sum) of v over the LANES lanes of each row, seen by all of them
fn lanes_reduce(v: f32, lid: u32, is_max: bool) -> f32 {
  let lane = lid % LANES;
  sh[lid] = v;
  workgroupBarrier();
  for (var s = LANES / 2u; s > 0u; s = s >> 1u) {
    if (lane < s) {
      let a = sh[lid];
      let b = sh[lid + s];
      sh[lid] = select(a + b, mg_max(a, b), is_max);
    }
    workgroupBarrier();
  }
  let r = sh[lid - lane];
  workgroupBarrier();
  return r;
}

fn row_base(row: u32) -> u32 {
  let L = prm(1u);
  let inner = prm(2u);
  return (row / inner) * L * inner + row % inner;
}
