"""Draw the pictures of docs/visualize.md with Graphviz (`dot`): python docs/figures/make_visualize_figures.py

visualize_graph.svg: the page's small graph, every op drawn. visualize_training_collapsed.svg: the
demo's training graph (forward, gradients, Adam), its gradient and optimizer scopes collapsed as
`show --png` and a notebook draw it.
"""
import os

import numpy as np

import minigraph as mg
from minigraph import demo

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def render(g, name, **kw):
    """Render, with the tooltips' build locations relative to the repository (no local paths)."""
    path = g.render(os.path.join(HERE, name), **kw)
    with open(path, encoding="utf-8") as f:
        text = f.read().replace(ROOT + os.sep, "")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def small_graph():
    g = mg.Graph()
    x = g.placeholder([2, 3, 8, 8], name="x")
    w = g.variable(np.full((1, 3, 3, 3), 0.1, np.float32), name="w")
    desc = mg.DepthwiseConvolution2DOpDescriptor(stride_in_x=2, stride_in_y=2, padding_style=mg.PaddingStyle.TF_SAME)
    with g.name_scope("block"):
        r = g.relu(g.depthwise_convolution_2d(x, w, descriptor=desc, name="dw"))
    g.square(x, name="unused")
    g.mean(r, name="loss")
    return g


def training_graph():
    g, x, labels, v, logits, loss, _ = demo.build(mg.float32, demo.init_params(np.random.default_rng(0)))
    grads = g.gradients(loss, g.trainable_variables, name="grad")
    for k, t in v.items():
        g.apply_adam(t, grads[t], learning_rate=0.05, name=f"adam/{k}")
    return g


if __name__ == "__main__":
    render(small_graph(), "visualize_graph.svg")
    g = training_graph()
    render(g, "visualize_training_collapsed.svg", collapse=True)
    print(f"wrote 2 figures; the training graph has {len(g.operations)} ops")
