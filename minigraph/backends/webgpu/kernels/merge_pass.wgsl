// Merge sort, one pass: each row holds sorted runs of `width` pairs; every pair of neighbouring
// runs A, B is merged. An element's new place is its offset in its own run plus how many
// elements of the other run come before it, found by a binary search (at most 32 steps). A's
// original indices are all below B's, so on a tie A's element goes first: the sort is stable.
// params: n (elements), L, width, descending
{{PARAMS}}
@group(0) @binding(1) var<storage, read> vin: array<{{C}}>;
@group(0) @binding(2) var<storage, read> iin: array<u32>;
@group(0) @binding(3) var<storage, read_write> vout: array<{{C}}>;
@group(0) @binding(4) var<storage, read_write> iout: array<u32>;
{{ORDER}}

fn pre(a: {{C}}, b: {{C}}) -> bool {
  if (prm(3u) != 0u) { return lt(b, a); }
  return lt(a, b);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let p = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (p >= prm(0u)) { return; }
  let L = prm(1u);
  let w = prm(2u);
  let row0 = p - p % L;
  let i = p % L;
  let s = (i / (2u * w)) * (2u * w);
  let in_a = i < s + w;
  let x = vin[p];
  // the other run: [o0, o1) within the row
  var o0 = s + w;
  var o1 = min(s + 2u * w, L);
  if (!in_a) {
    o0 = s;
    o1 = s + w;
  }
  var lo = 0u;
  var hi = select(0u, o1 - o0, o1 > o0);
  for (var it = 0u; it < 32u; it = it + 1u) {
    if (lo >= hi) { break; }
    let mid = (lo + hi) / 2u;
    let y = vin[row0 + o0 + mid];
    // A's element counts B's elements strictly before it; B's counts A's not after it
    var before = false;
    if (in_a) { before = pre(y, x); } else { before = !pre(x, y); }
    if (before) { lo = mid + 1u; } else { hi = mid; }
  }
  var own = i - s;
  if (!in_a) { own = i - (s + w); }
  let dst = row0 + s + own + lo;
  vout[dst] = x;
  iout[dst] = iin[p];
}
