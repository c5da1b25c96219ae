"""Depthwise-conv layer shapes at 224x224 input, derived from the torchvision model definitions.

Each entry: (C, H, W, K, stride) -- C channels (groups == C, multiplier 1), input H x W,
K x K kernel, padding (K-1)//2, dilation 1."""

MOBILENET_V2_DW = [
    (32, 112, 112, 3, 1),
    (96, 112, 112, 3, 2),
    (144, 56, 56, 3, 1),
    (144, 56, 56, 3, 2),
    (192, 28, 28, 3, 1),
    (192, 28, 28, 3, 1),
    (192, 28, 28, 3, 2),
    (384, 14, 14, 3, 1),
    (384, 14, 14, 3, 1),
    (384, 14, 14, 3, 1),
    (384, 14, 14, 3, 1),
    (576, 14, 14, 3, 1),
    (576, 14, 14, 3, 1),
    (576, 14, 14, 3, 2),
    (960, 7, 7, 3, 1),
    (960, 7, 7, 3, 1),
    (960, 7, 7, 3, 1),
]

MOBILENET_V3_LARGE_DW = [
    (16, 112, 112, 3, 1),
    (64, 112, 112, 3, 2),
    (72, 56, 56, 3, 1),
    (72, 56, 56, 5, 2),
    (120, 28, 28, 5, 1),
    (120, 28, 28, 5, 1),
    (240, 28, 28, 3, 2),
    (200, 14, 14, 3, 1),
    (184, 14, 14, 3, 1),
    (184, 14, 14, 3, 1),
    (480, 14, 14, 3, 1),
    (672, 14, 14, 3, 1),
    (672, 14, 14, 5, 2),
    (960, 7, 7, 5, 1),
    (960, 7, 7, 5, 1),
]

EFFICIENTNET_B0_DW = [
    (32, 112, 112, 3, 1),
    (96, 112, 112, 3, 2),
    (144, 56, 56, 3, 1),
    (144, 56, 56, 5, 2),
    (240, 28, 28, 5, 1),
    (240, 28, 28, 3, 2),
    (480, 14, 14, 3, 1),
    (480, 14, 14, 3, 1),
    (480, 14, 14, 5, 1),
    (672, 14, 14, 5, 1),
    (672, 14, 14, 5, 1),
    (672, 14, 14, 5, 2),
    (1152, 7, 7, 5, 1),
    (1152, 7, 7, 5, 1),
    (1152, 7, 7, 5, 1),
    (1152, 7, 7, 3, 1),
]


def out_size(h, k, s, pad=None, d=1):
    pad = (k - 1) // 2 * d if pad is None else pad
    return (h + 2 * pad - d * (k - 1) - 1) // s + 1


def cost(n, c, h, w, k, s, itemsize=4):
    """(bytes_min, flops): read X and dY once, write dW once; 2 flops per MAC."""
    ho, wo = out_size(h, k, s), out_size(w, k, s)
    bytes_min = itemsize * (n * c * h * w + n * c * ho * wo + c * k * k)
    flops = 2 * n * c * ho * wo * k * k
    return bytes_min, flops


NETS = {"mobilenet_v2": MOBILENET_V2_DW, "mobilenet_v3_large": MOBILENET_V3_LARGE_DW,
        "efficientnet_b0": EFFICIENTNET_B0_DW}

# Tiny stand-ins with the same structure (3x3 and 5x5, stride 1 and 2), so `--tiny` runs the
# whole pipeline in well under a second; never used for reported numbers.
TINY_DW = [(4, 8, 8, 3, 1), (6, 8, 8, 3, 2), (5, 7, 7, 5, 1)]


if __name__ == "__main__":
    for name, layers in NETS.items():
        print(f"## {name}: {len(layers)} depthwise layers")
        for n in (1, 8, 32):
            tb = tf = 0
            for (c, h, w, k, s) in layers:
                b, f = cost(n, c, h, w, k, s)
                tb += b
                tf += f
            print(f"N={n:2d}: bytes={tb/1e6:9.2f} MB  flops={tf/1e9:8.3f} GFLOP  AI={tf/tb:5.2f} flop/B"
                  f"  t_mem@15GB/s={tb/15e9*1e3:8.3f} ms  t_mem@4.8TB/s={tb/4.8e12*1e6:8.2f} us")
