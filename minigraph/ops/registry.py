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

        setattr(Graph, builder.__name__, builder)
        return builder

    return deco


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
