"""Graph -> networkx DiGraph -> pruned, typed, ordered plan -> passes (docs/compiler.md)."""
from .plan import Plan, Step, build_plan

__all__ = ["Plan", "Step", "build_plan"]
