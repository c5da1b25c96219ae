"""Graph -> networkx DiGraph -> pruned, typed, ordered plan with buffer lifetimes."""
from .plan import Plan, Step, build_plan

__all__ = ["Plan", "Step", "build_plan"]
