"""The op registry: every op type is declared here once, as data plus small functions.

An ``OpDef`` holds what MPSGraph calls the op, how to infer its output type, and its gradient
rule. Execution lives in the backends, keyed by ``OpDef.type``.

Declaring an op::

    @defop("addition", swift="addition(_:_:name:)",
           objc="additionWithPrimaryTensor:secondaryTensor:name:",
           inputs=("primary", "secondary"), infer=infer_broadcast)
    def addition(g, primary, secondary, name=None):
        '''Elementwise sum with broadcasting (MPSGraph ``addition``).'''
        return g._make("addition", [primary, secondary], {}, name)

The decorated builder becomes the ``Graph`` method of the same name. A gradient rule is added
with ``@gradient("addition")``; ops without one are declared ``differentiable=False``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from ..types import ShapedType


@dataclass
class OpDef:
    type: str
    swift: str
    objc: str
    inputs: tuple
    infer: Callable  # (in_types: list[ShapedType], attrs: dict) -> list[ShapedType]
    category: str = "misc"
    differentiable: bool = True
    grad: Optional[Callable] = None  # (g, op, dy) -> list[Tensor | None], one per input
    builder: Optional[Callable] = None
    attrs: tuple = ()  # attribute names shown in listings / docs
    internal: bool = False  # placeholder/constant/variable/assign: executed by the executor itself
    extra: dict = field(default_factory=dict)


OPS: dict[str, OpDef] = {}


def defop(type: str, *, swift: str, objc: str, inputs: tuple, infer: Callable,
          category: str = "misc", differentiable: bool = True, attrs: tuple = (),
          internal: bool = False):
    """Register an op and attach its builder to ``Graph`` under the builder's name."""

    def deco(builder: Callable) -> Callable:
        if type in OPS:
            raise RuntimeError(f"op type {type!r} declared twice")
        OPS[type] = OpDef(type=type, swift=swift, objc=objc, inputs=tuple(inputs), infer=infer,
                          category=category, differentiable=differentiable, builder=builder,
                          attrs=tuple(attrs), internal=internal)
        from ..graph import Graph

        builder.__doc__ = _with_sections(builder, OPS[type])
        setattr(Graph, builder.__name__, builder)
        return builder

    return deco


# Google-style ``Args:``/``Returns:``/``Raises:`` sections, written once from the declaration, so
# every builder documents its parameters the same way (hand-written sections are kept as they are).
_PARAM_DOCS = {
    "name": "The op's name (MPSGraph's ``name:``). None uses the op type; a taken name gets "
            "``_1``, ``_2``, ...; open name scopes prefix it.",
    "descriptor": "The op's descriptor (the MPSGraph ``...OpDescriptor`` of the same name), copied "
                  "when the op is built: later edits do not change this op.",
    "forward_convolution_descriptor": "The descriptor of the forward op this gradient belongs to "
                                      "(copied when the op is built).",
    "axis": "One axis; a negative value counts from the end.",
    "axes": "Axes (ints; negative values count from the end).",
    "output_shape": "The result's shape (MPSGraph's ``outputShape:``): a list or tuple of ints, "
                    "or a tensor's ``.shape``.",
    "input_shape": "The shape of the forward op's input, which the result has.",
    "dtype": "A data type: an ``mg`` dtype, its name, or a NumPy dtype.",
    "to_type": "The data type to convert to (MPSGraph's ``to:``).",
    "to": "Alias of ``to_type``; give the target dtype once.",
    "shape": "A shape, as a list of ints (``-1`` marks a dimension known only at run time, where "
             "the op allows it).",
    "dimension": "A dimension index (negative counts from the end).",
    "with_dimension": "The dimension to swap with ``dimension``.",
    "value": "A Python number, nested list or NumPy array (copied).",
    "start": "The first index along ``dimension``.",
    "length": "How many elements to take along ``dimension``.",
    "permutation": "A permutation of the axes: output axis i is input axis ``permutation[i]``.",
    "reduction": "How per-row results are combined: ``\"none\"``, ``\"sum\"`` or ``\"mean\"``.",
}


def _with_sections(builder: Callable, opdef: "OpDef") -> str:
    import inspect

    doc = inspect.cleandoc(builder.__doc__ or "")
    if "Args:" in doc:
        return doc
    lines = ["", "", "Args:"]
    for p in list(inspect.signature(builder).parameters)[1:]:
        if p == "tensors":
            text = "A list of tensors of this graph."
        elif p in ("variable",) and opdef.internal:
            text = "A variable tensor (made by ``g.variable``)."
        elif p in opdef.inputs:
            text = f"A tensor of this graph (the op's ``{p}`` input)."
        else:
            text = _PARAM_DOCS.get(p, "See the op reference (docs/reference.md).")
        lines.append(f"    {p}: {text}")
    what = "Operation: runs when listed in ``target_operations``" if opdef.type == "assign" else \
        "Tensor: the result, with its shape and dtype inferred when the op is built"
    lines += ["", "Returns:", f"    {what} (MPSGraph ``{opdef.swift}``).", "", "Raises:",
              "    MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not "
              "fit; the message names the op."]
    return doc + "\n".join(lines)


def gradient(type: str):
    """Register the gradient rule of an already declared op."""

    def deco(rule: Callable) -> Callable:
        OPS[type].grad = rule
        return rule

    return deco


def get_op(type: str) -> OpDef:
    return OPS[type]


def same(in_types, attrs) -> list[ShapedType]:
    """Infer rule for ops whose output has the type of their first input."""
    return [in_types[0]]
