// Shared by reduce_rows and reduce_wg. params: n_out, count, chunks, divisor (mean), then KR kept
// axes and RR reduced axes as (size, stride) pairs, last axis first.
{{PARAMS}}
@group(0) @binding(1) var<storage, read> src: array<{{TIN}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{TOUT}}>;

fn base_of(o: u32) -> u32 {
  var r = o;
  var b = 0u;
  for (var k = 0u; k < {{KR}}u; k = k + 1u) {
    let size = prm(4u + 2u * k);
    b = b + (r % size) * prm(5u + 2u * k);
    r = r / size;
  }
  return b;
}

fn off_of(j: u32) -> u32 {
  var r = j;
  var b = 0u;
  for (var k = 0u; k < {{RR}}u; k = k + 1u) {
    let size = prm(4u + 2u * {{KR}}u + 2u * k);
    b = b + (r % size) * prm(5u + 2u * {{KR}}u + 2u * k);
    r = r / size;
  }
  return b;
}

fn combine(a: {{ACC}}, b: {{ACC}}) -> {{ACC}} { return {{COMBINE}}; }
fn finish(a: {{ACC}}, div: u32) -> {{TOUT}} { return {{FINISH}}; }
