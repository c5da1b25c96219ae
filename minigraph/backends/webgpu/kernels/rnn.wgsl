// One kernel of the recurrent layers (rnn.py writes the body): one invocation per element e of
// the pass. Activations follow MPSGraphRNNActivation's raw values (4: clamp(0.2 x + 0.5, 0, 1));
// rnn_slope is an activation's derivative written with its output y.
{{PARAMS}}
{{BINDINGS}}

fn rnn_act(x: f32, kind: u32) -> f32 {
  switch kind {
    case 0u: { return x; }
    case 1u: { return max(x, 0.0); }
    case 2u: { return mg_tanh(x); }
    case 3u: { return mg_sigmoid(x); }
    default: { return clamp(0.2 * x + 0.5, 0.0, 1.0); }
  }
}

fn rnn_slope(y: f32, kind: u32) -> f32 {
  switch kind {
    case 0u: { return 1.0; }
    case 1u: { return select(0.0, 1.0, y > 0.0); }
    case 2u: { return 1.0 - y * y; }
    case 3u: { return y * (1.0 - y); }
    default: { return select(0.0, 0.2, y > 0.0 && y < 1.0); }
  }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let e = (wid.y * nwg.x + wid.x) * 256u + lid;
  if (e >= prm(0u)) { return; }
{{BODY}}
}
