"""Draw the picture of docs/compiler.md with Graphviz (`dot`): python docs/figures/make_compiler_figures.py

compiler_demo_plan.svg: the demo's training step (depthwise-separable block, Adam) as the numpy
backend compiles it, one node per step, fused steps in green.
"""
import os

import numpy as np

import minigraph as mg
from minigraph import demo

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    params = demo.MODELS["small"][1](np.random.default_rng(0))
    g, x, labels, _, logits, loss, updates = demo.training_graph("small", params)
    exe = g.compile({x: mg.ShapedType([4, 3, 12, 12]), labels: mg.ShapedType([4, 4])}, [loss], updates)
    print(exe.render(os.path.join(HERE, "compiler_demo_plan.svg")))


if __name__ == "__main__":
    main()
