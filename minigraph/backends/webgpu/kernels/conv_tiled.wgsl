// Grouped 2D convolution, tiled: the forward y = F(x, w) and the data gradient dx = D(dy, w).
// One workgroup computes a TOH x TOW tile of output pixels for OB output channels of each of GB
// groups (depthwise: channels) of one image; thread tg = lid / (TX * TY) takes group
// gblk * GB + tg (GB > 1 for small images and channel-innermost layouts). Per chunk of RB reduction channels (forward: input channels; data gradient:
// incoming-gradient channels) it stages the source tile with its halo (SRH x SRW pixels, zeros
// outside the tensor) and the chunk's weights in workgroup memory; each thread then computes
// VH pixels of one column (rows ty*VH + v) for all OB channels from workgroup memory.
// {{MODE}}. Sizes and strides are baked in (one pipeline per geometry); every loop has a
// fixed bound. The forward's taps of small kernels are unrolled, each staged input read once
// for all the rows and taps that use it. With prefetching (tiled_conv.TILING["prefetch"]) each
// thread loads its fixed share of a chunk's elements into registers, all loads issued before
// any is stored (so they are in flight together), and the next chunk's loads are issued before
// the current chunk's products (stored into workgroup memory after them), so the device
// memory's latency overlaps the arithmetic; otherwise STAGE loads and stores element by element.
@group(0) @binding(0) var<storage, read> src: array<{{T}}>;
@group(0) @binding(1) var<storage, read> wt: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{TD}}>;
{{EPILOGUE}}var<workgroup> xs: array<f32, {{XSN}}>;
var<workgroup> ws: array<f32, {{WSN}}>;

fn floor_div(a: i32, b: i32) -> i32 {
  let q = a / b;
  if (a % b != 0 && a < 0) { return q - 1; }
  return q;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  var q = wid.y * nwg.x + wid.x;
  if (q >= {{NWG}}u) { return; }
  let tile_w = q % {{TILES_W}}u;
  q = q / {{TILES_W}}u;
  let tile_h = q % {{TILES_H}}u;
  q = q / {{TILES_H}}u;
  let ob = q % {{OBLOCKS}}u;
  q = q / {{OBLOCKS}}u;
  let gblk = q % {{GBLOCKS}}u;
  let n = q / {{GBLOCKS}}u;
  let tx = lid % {{TX}}u;
  let ty = (lid / {{TX}}u) % {{TY}}u;
  let tg = lid / ({{TX}}u * {{TY}}u);
  let g = gblk * {{GB}}u + tg;
  let oh0 = tile_h * {{TOH}}u;
  let ow0 = tile_w * {{TOW}}u;
{{ORIGIN}}
{{ACC_DECL}}
{{REG_DECL}}
{{LOAD_FIRST}}
  for (var r0 = 0u; r0 < {{RC}}u; r0 = r0 + {{RB}}u) {
    workgroupBarrier();
{{STAGE}}
    workgroupBarrier();
{{LOAD_NEXT}}
    for (var rc = 0u; rc < {{RB}}u; rc = rc + 1u) {
{{TAPS}}
    }
  }
{{STORE}}
}
