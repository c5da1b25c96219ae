"""A convolution or pooling geometry as WGSL substitutions: the sizes, strides, dilations and
padding of the logical axes n, c, d, h, w (a 2-D op has a depth of one), the index decoding of a
contiguous tensor, and how many taps reach one input position (the gradients' gathers)."""
from __future__ import annotations

from ...ops.geometry import ConvGeometry

_X = ("n", "c", "d", "h", "w")
_W = ("g", "og", "ci", "kd", "kh", "kw")


def _volume(values, fill: int) -> tuple:
    """Three spatial values (depth, height, width); a 2D op gets a depth of ``fill``."""
    return (fill,) * (3 - len(values)) + tuple(values)


def axis_sizes(geo: ConvGeometry, channels: int, spatial) -> dict:
    """Sizes of the logical axes n, c, d, h, w of a data tensor."""
    return dict(zip(_X, (geo.batch, channels) + _volume(spatial, 1)))


def axis_strides(geo: ConvGeometry, shape) -> dict:
    """Strides of the logical axes n, c, d, h, w of a contiguous data tensor of ``shape``."""
    batch, channels, *spatial = geo.data_strides(shape)
    return dict(zip(_X, (batch, channels) + _volume(spatial, 0)))


def decode(axes: dict, strides: dict) -> str:
    """WGSL that splits the flat index ``r`` of a contiguous tensor into a_n, a_c, a_d, a_h, a_w."""
    lines = []
    order = sorted((strides[a], a) for a in _X if axes[a] > 1)
    done = set()
    for k, (_, a) in enumerate(order):
        if k == len(order) - 1:
            lines.append(f"  let a_{a} = r;")
        else:
            lines.append(f"  let a_{a} = r % {axes[a]}u;")
            lines.append(f"  r = r / {axes[a]}u;")
        done.add(a)
    lines += [f"  let a_{a} = 0u;" for a in _X if a not in done]
    return "\n".join(lines)


def constants(geo: ConvGeometry) -> dict:
    """The WGSL substitutions of a geometry: sizes, strides, dilations, leading padding, and the
    strides of x (XS*), y (YS*) and the weights (WS*) per logical axis."""
    c: dict = {}
    for names, values in (("D H W", _volume(geo.input_size, 1)), ("OD OH OW", _volume(geo.output_size, 1)),
                          ("KD KH KW", _volume(geo.kernel_size, 1)), ("SD SH SW", _volume(geo.strides, 1)),
                          ("DD DH DW", _volume(geo.dilations, 1)), ("PD PH PW", _volume(geo.padding_before, 0))):
        c.update(zip(names.split(), values))
    for prefix, strides in (("XS", axis_strides(geo, geo.source_shape)), ("YS", axis_strides(geo, geo.result_shape))):
        c.update({prefix + a.upper(): v for a, v in strides.items()})
    if geo.weights_axes:  # pooling has no weights
        group, out, inner, *kernel = geo.weights_strides()
        c.update({"WS" + a.upper(): v for a, v in zip(_W, (group, out, inner) + _volume(kernel, 0))})
    c.update(CI=geo.in_per_group, OG=geo.out_per_group)
    return c


def reach(geo: ConvGeometry) -> dict:
    """NKD, NKH, NKW: per axis, how many consecutive taps can land one input position in some
    window (a gradient's gather visits only those: one for a global pooling)."""
    sizes = zip("DHW", _volume(geo.output_size, 1), _volume(geo.strides, 1), _volume(geo.dilations, 1),
                _volume(geo.kernel_size, 1))
    return {"NK" + a: min(k, (out - 1) * s // d + 1) for a, out, s, d, k in sizes}
