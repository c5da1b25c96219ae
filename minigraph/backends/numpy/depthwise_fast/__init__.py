"""Fast NumPy algorithms for the depthwise 2D convolution ops, on canonical arrays.

x is ``[N, C, H, W]``, dy and y ``[N, C, M, OH, OW]``, weights and their gradient
``[C, M, kH, kW]`` (any strides); sizes and padding come from the op's ``ConvGeometry``. Each
plan is built once per compiled step and returns None when its result is not finite: the
kernel then runs its exact loop (backends/numpy/depthwise.py). How they work and when each is
chosen: docs/performance.md.
"""
from .forward import DataGradientPlan, ForwardPlan, is_same_like
from .weights_gradient import ALGORITHMS, WeightsGradientPlan, choose_algorithm
from .workers import cpu_count

__all__ = ["ALGORITHMS", "DataGradientPlan", "ForwardPlan", "WeightsGradientPlan", "choose_algorithm",
           "cpu_count", "is_same_like"]
