"""Declaring ops: ``@defop`` records an op type's ``OpDef``; ``@gradient`` adds its rule.

Declaring an op::

    @defop("addition", swift="addition(_:_:name:)",
           objc="additionWithPrimaryTensor:secondaryTensor:name:",
           inputs=("primary", "secondary"), infer=infer_broadcast, family="arithmetic")
    def addition(g, primary, secondary, name=None):
        '''Elementwise sum with broadcasting (MPSGraph ``addition``).'''
        return g.add_op("addition", [primary, secondary], {}, name).output

The builder becomes the ``Graph`` method of the same name through the generated mixin
``minigraph/op_builders.py`` (``python scripts/gen_builders.py`` writes it). A gradient rule
``rule(g, op, dy, wanted)`` is added with ``@gradient("addition")``; ``wanted[i]`` says whether
the gradient toward input ``i`` is needed (a rule may return None for the others). For an op with
several outputs ``dy`` is a list, one entry per output, None where no gradient reaches it. Ops without
a rule are declared ``differentiable=False``.
"""
from __future__ import annotations

import inspect
import warnings
from typing import Any, Callable, Optional

from ..callsite import user_frame
from ..errors import DescriptorError, MiniGraphError, RegistrationError
from ..ir import OPS, InferRule, Kind, OpDef, Role, opdef_of, register_op  # noqa: F401  (OPS: imported from here)
from ..types import ShapedType


def defop(type: str, *, swift: str, objc: str, inputs: tuple, infer: InferRule, family: str,
          kind: Kind = "compute", role: Role = "forward", forward: Optional[str] = None,
          differentiable: bool = True, attrs: tuple = (), hidden_attrs: tuple = (),
          internal: bool = False, since: tuple = ("11.0", "14.0"), elementwise: bool = False,
          control_flow: bool = False, plan_rule: Optional[Callable] = None,
          data_dependent_shape: bool = False, four_bit: bool = False) -> Callable:
    """Declare an op type; the decorated function is its builder. ``attrs`` and ``hidden_attrs``
    name every attribute its ops may have (``hidden_attrs`` are left out of listings); ``since``
    is the first (macOS, iOS) with the MPSGraph op, from Apple's documentation;
    ``data_dependent_shape`` marks an op whose output size only its data decides, ``four_bit`` one
    that takes int4 / uint4 (``OpDef``)."""

    def deco(builder: Callable) -> Callable:
        opdef = register_op(OpDef(type=type, swift=swift, objc=objc, inputs=tuple(inputs), infer=infer,
                                  family=family, kind=kind, role=role, forward=forward,
                                  differentiable=differentiable, internal=internal, builder=builder,
                                  elementwise=elementwise,
                                  attrs=tuple(attrs), hidden_attrs=tuple(hidden_attrs),
                                  since=tuple(since), control_flow=control_flow, plan_rule=plan_rule,
                                  data_dependent_shape=data_dependent_shape, four_bit=four_bit))
        builder.__doc__ = _with_sections(builder, opdef)
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


def _param_doc(p: str, opdef: OpDef) -> str:
    if p == "tensors":
        return "A list of tensors of this graph."
    if p == "variable" and opdef.kind == "memory":
        return "A variable tensor (made by ``g.variable``)."
    if p in opdef.inputs:
        return f"A tensor of this graph (the op's ``{p}`` input)."
    return _PARAM_DOCS.get(p, "See the op reference (docs/reference.md).")


def _with_sections(builder: Callable, opdef: OpDef) -> str:
    doc = inspect.cleandoc(builder.__doc__ or "")
    if "Args:" in doc:
        return doc
    lines = ["", "", "Args:"]
    for p in list(inspect.signature(builder).parameters)[1:]:
        lines.append(f"    {p}: {_param_doc(p, opdef)}")
    what = "Operation: runs when listed in ``target_operations``" if returns_operation(builder) else \
        "Tensor: the result, with its shape and dtype inferred when the op is built"
    lines += ["", "Returns:", f"    {what} (MPSGraph ``{opdef.swift}``).", "", "Raises:",
              "    MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs do not "
              "fit; the message names the op."]
    return doc + "\n".join(lines)


def returns_operation(builder: Callable) -> bool:
    """Whether a builder returns the Operation (an op with no outputs, such as assign)."""
    return inspect.signature(builder).return_annotation in ("Operation", "'Operation'")


def gradient(type: str) -> Callable[[Callable], Callable]:
    """Register the gradient rule of an already declared op; an op type that is not declared, and a
    second rule for the same op, are refused (RegistrationError), as a second kernel is."""
    opdef = opdef_of(type, "gradient rule")

    def deco(rule: Callable) -> Callable:
        if opdef.grad is not None:
            raise RegistrationError(f"gradient rule for {type!r} registered twice "
                                    f"({opdef.grad.__qualname__} and {rule.__qualname__})")
        opdef.grad = rule
        return rule

    return deco


def renamed(label: str, old: str, new: str, old_value: Any, new_value: Any,
            error: type[MiniGraphError] = DescriptorError) -> Any:
    """The value of a parameter given under its deprecated spelling ``old`` (warns), or ``new_value``.

    Old spellings are kept for one release with a DeprecationWarning naming the new one.
    """
    if old_value is None:
        return new_value
    warnings.warn(f"{label}: the keyword {old}= is deprecated; use {new}=", DeprecationWarning,
                  stacklevel=user_frame()[0])
    if new_value is not None:
        raise error(f"{label}: give {new} once (not both {new}= and {old}=)")
    return old_value


def same(in_types: list, attrs: dict) -> list[ShapedType]:
    """Infer rule for ops whose output has the type of their first input."""
    return [in_types[0]]
