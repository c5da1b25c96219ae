"""Write minigraph/op_builders.py: one typed Graph method per declared op, from the registry.

    python scripts/gen_builders.py           # regenerate
    python scripts/gen_builders.py --check   # exit 1 if the checked-in file is stale

Type checkers and IDEs read the generated methods; each calls the op's builder function.
"""
from __future__ import annotations

import argparse
import inspect
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from minigraph.ir import OPS, OpDef  # noqa: E402
from minigraph.ops.registry import returns_operation  # noqa: E402
from minigraph.descriptors import ResizeNearestRoundingMode  # noqa: E402
from minigraph.types import DataType  # noqa: E402

TARGET = ROOT / "minigraph" / "op_builders.py"

HEADER = '''"""Graph's op builders: one typed method per declared op (generated; do not edit).

Written by ``python scripts/gen_builders.py`` from the op declarations in ``minigraph/ops/``;
a test fails when it is stale. Each method calls the builder declared with the op.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from .descriptors import (Convolution2DOpDescriptor, Convolution3DOpDescriptor, DepthwiseConvolution2DOpDescriptor,
                          DepthwiseConvolution3DOpDescriptor, FFTDescriptor, ImToColOpDescriptor, Pooling2DOpDescriptor,
                          Pooling4DOpDescriptor, ResizeNearestRoundingMode, SDPADescriptor, StencilOpDescriptor)
from .ir import OPS, Operation, Tensor
from .types import DataType, float32  # noqa: F401  (used by some signatures)

TensorLike = Union[Tensor, float, int, bool, np.ndarray, np.generic, Sequence[Any]]
"""A tensor of the graph, or a number/array/list that becomes a constant."""

__all__ = ["OpBuilders", "TensorLike"]


def _builder(type: str) -> Callable[..., Any]:
    builder = OPS[type].builder
    assert builder is not None
    return builder


class OpBuilders:
    """Graph methods that build ops, one per declared op type (MPSGraph's op methods)."""
'''


def _default(value: object) -> str:
    if isinstance(value, DataType):
        return value.name
    if isinstance(value, ResizeNearestRoundingMode):  # an enum default: imported in the header above
        return f"{type(value).__name__}.{value.name}"
    if value is None or isinstance(value, (bool, int, float, str, tuple)):
        return repr(value)
    raise SystemExit(f"gen_builders: cannot write the default {value!r}; use None or a literal")


def _annotation(p: inspect.Parameter, opdef: OpDef) -> str:
    if p.name == "tensors":
        return "Sequence[TensorLike]"
    if p.name in opdef.inputs:  # an operand MPSGraph takes as nil (default None) is Optional
        nil = p.default is None or str(p.annotation).startswith("Optional")
        return "Optional[TensorLike]" if nil else "TensorLike"
    if p.annotation is not inspect.Parameter.empty:
        return str(p.annotation)
    return "Any"


def _method(opdef: OpDef) -> str:
    builder = opdef.builder
    assert builder is not None
    params = list(inspect.signature(builder).parameters.values())[1:]
    sig, call = ["self"], ["self"]
    star = False
    for p in params:
        if p.kind is inspect.Parameter.KEYWORD_ONLY and not star:
            sig.append("*")
            star = True
        text = f"{p.name}: {_annotation(p, opdef)}"
        if p.default is not inspect.Parameter.empty:
            text += f" = {_default(p.default)}"
        sig.append(text)
        call.append(f"{p.name}={p.name}" if p.kind is inspect.Parameter.KEYWORD_ONLY else p.name)
    ann = inspect.signature(builder).return_annotation
    several = {list: "list[Tensor]", tuple: "tuple[Tensor, ...]", "list": "list[Tensor]", "tuple": "tuple[Tensor, ...]"}
    ret = "Operation" if returns_operation(builder) else several.get(ann, "Tensor")
    doc = inspect.getdoc(builder) or ""
    doc_lines = doc.replace("\\", "\\\\").replace('"""', '\\"\\"\\"').splitlines()
    body = "\n".join(("        " + line).rstrip() for line in doc_lines)
    name = builder.__name__
    return (f"    def {name}({', '.join(sig)}) -> {ret}:\n"
            f'        """{body.lstrip()}\n        """\n'
            f"        return _builder({opdef.type!r})({', '.join(call)})  # type: ignore[no-any-return]\n")


def generate() -> str:
    methods = [_method(d) for d in sorted(OPS.values(), key=lambda d: d.builder.__name__ if d.builder else "")
               if d.builder is not None]
    return HEADER + "\n" + "\n".join(methods)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if minigraph/op_builders.py is stale")
    args = ap.parse_args()
    text = generate()
    if args.check:
        if TARGET.read_text() != text:
            print("minigraph/op_builders.py is stale: run python scripts/gen_builders.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET.relative_to(ROOT)} ({len(OPS)} ops)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
