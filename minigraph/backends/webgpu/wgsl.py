"""WGSL source helpers: dtype mapping, the kernel template loader, index and grid snippets.

Kernels live in ``kernels/*.wgsl`` as templates with ``{{NAME}}`` holes that the Python side
fills (element types, unrolled index arithmetic, baked constants). The filled source is the
key of the pipeline cache, so equal specialisations compile once per device.
"""
from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

import numpy as np

# how each minigraph dtype is stored on the device; bool is a u32 holding 0 or 1, int8 and uint8
# (and int4 / uint4)
# (which only the quantization kernels take: kernel_builder.NARROW_INT_OPS) an i32 / u32 each
STORAGE = {"float32": "f32", "float16": "f16", "int32": "i32", "uint32": "u32", "bool": "u32",
           "int8": "i32", "uint8": "u32", "int4": "i32", "uint4": "u32",
           "complex64": "vec2<f32>"}  # complex64: (real, imaginary) pairs
# the type arithmetic happens in: float16 is widened to f32 (then rounded once when stored)
COMPUTE = {"float32": "f32", "float16": "f32", "int32": "i32", "uint32": "u32", "bool": "u32",
           "int8": "i32", "uint8": "u32", "int4": "i32", "uint4": "u32", "complex64": "vec2<f32>"}
HOST = {"float32": np.float32, "float16": np.float16, "int32": np.int32, "uint32": np.uint32, "bool": np.uint32,
        "int8": np.int32, "uint8": np.uint32, "int4": np.int32, "uint4": np.uint32, "complex64": np.complex64}

WG = 256  # default workgroup size of 1D kernels


@lru_cache(maxsize=None)
def template(name: str) -> str:
    return resources.files(__package__).joinpath("kernels").joinpath(f"{name}.wgsl").read_text()


def render(name: str, **subs) -> str:
    """Fill ``kernels/NAME.wgsl``; the math prelude and ``enable f16`` come in when used."""
    src = template(name)
    for k, v in subs.items():
        src = src.replace("{{" + k + "}}", str(v))
    left = re.findall(r"\{\{(\w+)\}\}", src)
    if left:
        raise KeyError(f"kernel template {name}.wgsl: unfilled holes {left}")
    return finish(src)


def finish(src: str) -> str:
    """Prepend what the source needs: ``enable f16;`` and the math prelude."""
    head = ""
    if re.search(r"\bf16\b", src):
        head += "enable f16;\n"
    if "mg_" in src and "fn mg_isnan" not in src:
        src = template("math") + "\n" + src
    return head + src


def load(dtype: str, expr: str) -> str:
    """``expr`` (a storage-typed element) converted to its compute type."""
    return f"f32({expr})" if dtype == "float16" else expr


def store(dtype: str, expr: str) -> str:
    """A compute-typed ``expr`` converted to the storage type of ``dtype``."""
    return f"f16({expr})" if dtype == "float16" else expr


def f32_literal(x: float) -> str:
    """A WGSL f32 expression holding exactly ``np.float32(x)`` (its bits: a decimal literal
    could round differently, and NaN and the infinities have none)."""
    bits = int(np.array(x, np.float32).view(np.uint32))
    return f"bitcast<f32>({bits:#010x}u)"


def pow2_at_least(n: int) -> int:
    """The smallest power of two at least ``n`` (1 for n <= 1)."""
    p = 1
    while p < n:
        p *= 2
    return p


def params_array(values) -> np.ndarray:
    """u32 parameters padded to whole vec4s (uniform arrays need 16-byte elements)."""
    a = np.asarray(list(values), dtype=np.int64)
    if a.size and (a.min() < 0 or a.max() >= 1 << 32):
        raise OverflowError(f"kernel parameter out of u32 range: {a.min()}..{a.max()}")
    a = a.astype(np.uint32)
    pad = (-a.size) % 4 or (4 if a.size == 0 else 0)
    return np.concatenate([a, np.zeros(pad, np.uint32)])


def params_decl(n_u32: int, binding: int = 0) -> str:
    """The uniform declaration and accessor ``prm(i)`` for ``n_u32`` parameters."""
    n4 = max(1, -(-n_u32 // 4))
    return (f"struct Params {{ v: array<vec4<u32>, {n4}> }}\n"
            f"@group(0) @binding({binding}) var<uniform> P: Params;\n"
            "fn prm(i: u32) -> u32 { return P.v[i / 4u][i % 4u]; }\n")


def contiguous_strides(shape) -> tuple:
    st, acc = [], 1
    for d in reversed(shape):
        st.append(acc)
        acc *= d
    return tuple(reversed(st))


def collapse(shape, *strides_list):
    """Merge adjacent axes that every stride list walks contiguously; drop size-1 axes.

    Returns (shape, [strides...]) with at least one axis.
    """
    dims = [(d, [s[i] for s in strides_list]) for i, d in enumerate(shape) if d != 1]
    out: list = []
    for d, ss in dims:
        if out:
            pd, pss = out[-1]
            if all(p == s * d for p, s in zip(pss, ss)):
                out[-1] = (pd * d, ss)
                continue
        out.append((d, ss))
    if not out:
        out = [(1, [0 for _ in strides_list])]
    return tuple(d for d, _ in out), [tuple(ss[k] for _, ss in out) for k in range(len(strides_list))]
