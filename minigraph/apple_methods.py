"""Every method on Apple's MPSGraph class, and what minigraph has for it.

``docs/apple-mpsgraph-methods.txt`` is Apple's list (Swift selectors only, copied from the class
page). ``table(selectors)`` maps each selector to a ``Row``: minigraph's op type or ``Graph``
method (or None), the reason where it is not the op itself, and a kind. Most rows are derived
from the op registry, so ops declared later are picked up without edits here:

* ``op``: an op's ``swift=`` names the method;
* ``form``: another form of such an op: a shorter form whose missing arguments are builder
  parameters with defaults, the single-axis form of an ``axes`` op, or an explicit entry below;
* ``tensor``: a form taking an axis, shape, k, ... as a tensor, which minigraph takes as a
  constant (the ``...Tensor`` label of a covered method);
* ``graph``: graph-level API (compile, run, gradients, ...), a ``Graph`` method, not an op;
* ``metal``: only meaningful with Metal objects (command buffers and queues);
* ``none``: no op yet.

A selector that none of these accounts for is missing from the table, and
``tests/test_docs.py`` names it.
"""
from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Mapping, NamedTuple, Optional

from .ir import OPS, OpDef

APPLE_PAGE = "https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/"

KINDS = ("op", "form", "tensor", "graph", "metal", "none")

TENSOR_REASON = "the tensor-argument form: minigraph takes the value as a constant"
NO_OP = "no op yet"

# Ops whose Swift name is what they export to, not a method they stand for
EXPORT_ONLY = frozenset({"stop_gradient"})

# label of a tensor-argument form -> the label of the constant form
TENSOR_LABELS = {
    "axisTensor": "axis", "axesTensor": "axes", "kTensor": "k", "shapeTensor": "shape",
    "withShapeTensor": "withShape", "alongAxisTensor": "alongAxis", "numLowerTensor": "numLower",
    "numUpperTensor": "numUpper", "outputShapeTensor": "outputShape", "spatialAxesTensor": "spatialAxes",
    "batchAxisTensor": "batchAxis", "blockDimensionsTensor": "blockDimensions",
    "widthAxisTensor": "widthAxis", "heightAxisTensor": "heightAxis", "depthAxisTensor": "depthAxis",
    "splitSizesTensor": "splitSizes", "startsTensor": "starts", "endsTensor": "ends",
    "stridesTensor": "strides", "alphaTensor": "alpha", "sizeTensor": "size",
}

# Swift label -> builder parameter, where it is not the label in snake case
PARAM_OF_LABEL = {"dataType": "dtype"}


class Row(NamedTuple):
    """One Apple method: minigraph's op type or ``g.<method>`` (None where there is none), why
    (empty for the op itself), and one of ``KINDS``."""

    name: Optional[str]
    reason: str
    kind: str


def _op(name: str, reason: str = "") -> Row:
    return Row(name, reason, "op")


def _form(name: str, reason: str) -> Row:
    return Row(name, reason, "form")


def _tensor(name: str, detail: str = "") -> Row:
    return Row(name, TENSOR_REASON + (f" ({detail})" if detail else ""), "tensor")


def _graph(name: str, reason: str = "") -> Row:
    return Row(name, reason, "graph")


def _metal(reason: str) -> Row:
    return Row(None, "Metal-only: " + reason, "metal")


def _none(detail: str = "") -> Row:
    return Row(None, NO_OP + (f": {detail}" if detail else ""), "none")


_QUEUE = "runs on the caller's MTLCommandQueue; `g.run` runs on the backend's own device"
_RESULTS = "; results go into caller-allocated MPSGraphTensorData"
_ENCODE = "encodes into the caller's MPSCommandBuffer, which the caller commits"

def _resize_forms() -> dict[str, Row]:
    """resize's ``resizeNearest``/``resizeBilinear`` and scale-offset forms (docs/resize.md)."""
    near, bil = "`mode=ResizeMode.NEAREST`, `nearest_rounding_mode=`", "`mode=ResizeMode.BILINEAR`"
    every = "; `layout=None`: every axis"
    so2, so_n = "`scale=[sy, sx]`, `offset=[oy, ox]`", "`scale=`, `offset=` one per axis; `layout=None`"
    rows = {
        "resizeBilinear(_:sizeTensor:centerResult:alignCorners:name:)": ("resize", "the size; " + bil + every),
        "resizeNearest(_:sizeTensor:nearestRoundingMode:centerResult:alignCorners:layout:name:)":
            ("resize", "the size; " + near),
        "resizeNearest(_:sizeTensor:nearestRoundingMode:centerResult:alignCorners:name:)":
            ("resize", "the size; " + near + every),
        "resize(_:sizeTensor:scaleOffsetTensor:mode:layout:name:)": ("resize", "size, scale and offset: " + so2),
        "resize(_:sizeTensor:scaleTensor:offsetTenor:mode:name:)": ("resize", "size, scale and offset: " + so_n),
        "resizeBilinear(_:sizeTensor:scaleOffsetTensor:layout:name:)": ("resize", f"{so2}; {bil}"),
        "resizeBilinear(_:sizeTensor:scaleTensor:offsetTensor:name:)": ("resize", f"{so_n}; {bil}"),
        "resizeNearest(_:sizeTensor:scaleOffsetTensor:nearestRoundingMode:layout:name:)": ("resize", f"{so2}; {near}"),
        "resizeNearest(_:sizeTensor:scaleTensor:offsetTensor:nearestRoundingMode:name:)": ("resize", f"{so_n}; {near}"),
        "resize(withGradientTensor:input:scale:offsetTensor:mode:name:)": ("resize_gradient", "scale and offset: " + so_n),
        "resize(withGradientTensor:input:scaleOffsetTensor:mode:layout:name:)": ("resize_gradient", so2),
        "resizeBilinear(withGradientTensor:input:scale:offsetTensor:name:)": ("resize_gradient", f"{so_n}; {bil}"),
        "resizeBilinear(withGradientTensor:input:scaleOffsetTensor:layout:name:)": ("resize_gradient", f"{so2}; {bil}"),
        "resizeNearest(withGradientTensor:input:scale:offsetTensor:nearestRoundingMode:name:)":
            ("resize_gradient", f"{so_n}; {near}"),
        "resizeNearest(withGradientTensor:input:scaleOffsetTensor:nearestRoundingMode:layout:name:)":
            ("resize_gradient", f"{so2}; {near}"),
    }
    out = {s: _tensor(op, detail) for s, (op, detail) in rows.items()}
    out["resizeNearest(withGradientTensor:input:nearestRoundingMode:centerResult:alignCorners:layout:name:)"] = \
        _form("resize_gradient", near)
    return out


# The methods the rules do not derive. A ``none`` entry gives way to an op that names the method
# (or a rule that reaches one), so a newly declared op needs no edit here.
EXPLICIT: dict[str, Row] = {
    # same selector, two argument types: Apple's page names carry a suffix
    "constant(_:shape:dataType:)-3wa0e": _op("constant"),
    "constant(_:shape:dataType:)-ylr4": _form("constant", "data bytes: `g.constant(array)` (shape and dtype from the array)"),
    "dropout(_:rate:name:)-6hvf3": _op("dropout"),
    "dropout(_:rate:name:)-16cq4": _tensor("dropout", "the rate"),
    # other forms of an op
    "sparseTensor(sparseTensorWithDescriptor:tensors:shape:name:)":
        _form("sparse_tensor", "a `CreateSparseOpDescriptor` as `sparse_storage_type` (it gives the dtype)"),
    "constant(_:dataType:)": _form("constant", "a scalar: `g.constant(value, dtype)`"),
    "complexConstant(realPart:imaginaryPart:)": _form("constant", "`g.complex_constant(real_part, imaginary_part)`, complex64"),
    "complexConstant(realPart:imaginaryPart:dataType:)": _form("constant", "`g.complex_constant(real_part, imaginary_part, dtype)`"),
    "complexConstant(realPart:imaginaryPart:shape:dataType:)":
        _form("constant", "`g.complex_constant(real_part, imaginary_part, dtype, shape)`, the value filled to the shape"),
    "concatTensor(_:with:dimension:name:)": _form("concat", "two tensors: `g.concat([a, b], dimension)`"),
    "reciprocalSquareRoot(_:name:)": _form("reverse_square_root", "the same function, 1 / sqrt(x), as reverseSquareRoot(with:name:)"),
    "reverse(_:name:)": _form("reverse", "every axis: `axes=None`"),
    "split(_:splitSizes:axis:name:)": _form("split", "a list of sizes as `num_splits`"),
    "resizeBilinear(withGradientTensor:input:centerResult:alignCorners:layout:name:)":
        _form("resize_gradient", "`mode=ResizeMode.BILINEAR`"),
    "resizeBilinear(_:sizeTensor:centerResult:alignCorners:layout:name:)": _tensor("resize", "the size; `mode=ResizeMode.BILINEAR`"),
    **_resize_forms(),
    "sampleGrid(withSourceTensor:coordinateTensor:layout:normalizeCoordinates:relativeCoordinates:alignCorners:"
    "paddingMode:nearestRoundingMode:constantValue:name:)":
        _form("sample_grid", "`sampling_mode=ResizeMode.NEAREST`, `nearest_rounding_mode=`"),
    "gatherAlongAxisTensor(_:updates:indices:name:)": _tensor("gather_along_axis", "the axis"),
    "scatterAlongAxisTensor(_:data:updates:indices:mode:name:)": _tensor("scatter_along_axis", "the axis"),
    "scatterAlongAxis(_:updates:indices:shape:mode:name:)":
        _form("scatter_along_axis", "`data=None, shape=`: onto a tensor of the mode's identity"),
    "scatterAlongAxisTensor(_:updates:indices:shape:mode:name:)":
        _tensor("scatter_along_axis", "the axis; `data=None, shape=`"),
    "sliceTensor(_:start:end:strideTensor:startMask:endMask:squeezeMask:name:)": _tensor("slice_tensor", "starts, ends and strides"),
    "sliceTensor(_:start:sizeTensor:squeezeMask:name:)": _tensor("slice_tensor", "starts and sizes: `ends = starts + sizes`, strides 1"),
    "sliceGradientTensor(_:fwdInShapeTensor:start:end:strideTensor:startMask:endMask:squeezeMask:name:)":
        _tensor("slice_gradient_tensor", "the forward shape, starts, ends and strides"),
    "sliceGradientTensor(_:fwdInShapeTensor:start:sizeTensor:squeezeMask:name:)":
        _tensor("slice_gradient_tensor", "the forward shape, starts and sizes: `ends = starts + sizes`, strides 1"),
    "for(lowerBound:upperBound:step:initialBodyArguments:body:name:)":
        _form("for_loop", "`lower_bound=`, `upper_bound=`, `step=` (with `number_of_iterations=None`)"),
    "variance(of:mean:axes:name:)": _form("variance", "`mean=`: `mean((tensor - mean)^2)` over the axes"),
    "adam(currentLearningRate:beta1:beta2:epsilon:values:momentum:velocity:maximumVelocity:gradient:name:)":
        _form("adam", "`beta1_power=None, beta2_power=None`: the rate already bias-corrected"),
    "randomPhiloxStateTensor(withSeed:name:)":
        _form("random_philox_state_tensor", "`seed=`: the key, with counter 0"),
    "variableFromTensor(_:name:)":
        _form("variable", "`g.variable(tensor)`: a tensor computable from constants when built gives the initial value"),
    "scaledDotProductAttention(query:key:value:descriptor:name:)":
        _form("scaled_dot_product_attention", "`descriptor=mg.SDPADescriptor(scale, is_causal, mask_tensor, "
                                              "sinks_tensor)`, built on the mask form"),
    # graph-level API
    "compile(with:feeds:targetTensors:targetOperations:compilationDescriptor:)": _graph("g.compile", "`backend=` names the device"),
    "run(feeds:targetTensors:targetOperations:)": _graph("g.run"),
    "runAsync(feeds:targetTensors:targetOperations:executionDescriptor:)":
        _graph("g.run_async", "a `concurrent.futures.Future` of the results; the completion handler is its "
                              "`add_done_callback`"),
    "gradients(of:with:name:)": _graph("g.gradients"),
    "controlDependency(with:dependentBlock:name:)": _graph("g.control_dependencies", "a `with` block instead of a closure"),
    "applyStochasticGradientDescent(learningRate:variable:gradient:name:)": _graph("g.apply_stochastic_gradient_descent"),
    # Metal objects
    "encode(to:feeds:targetOperations:resultsDictionary:executionDescriptor:)": _metal(_ENCODE + _RESULTS),
    "encode(to:feeds:targetTensors:targetOperations:executionDescriptor:)": _metal(_ENCODE),
    "run(with:feeds:targetOperations:resultsDictionary:)": _metal(_QUEUE + _RESULTS),
    "run(with:feeds:targetTensors:targetOperations:)": _metal(_QUEUE),
    "runAsync(on:feeds:targetOperations:resultsDictionary:executionDescriptor:)": _metal("runs on the caller's MTL4CommandQueue" + _RESULTS),
    "runAsync(on:feeds:targetTensors:targetOperations:executionDescriptor:)": _metal("runs on the caller's MTL4CommandQueue"),
    "runAsync(with:feeds:targetOperations:resultsDictionary:executionDescriptor:)": _metal(_QUEUE + _RESULTS),
    "runAsync(with:feeds:targetTensors:targetOperations:executionDescriptor:)": _metal(_QUEUE),
}

# Methods with no op yet, by the reason (joined to "no op yet: "): every method has one now. An
# entry gives way to an op that names the method, so a newly declared op needs no edit here.
_NO_OP_YET: dict[str, str] = {}

for _detail, _selectors in _NO_OP_YET.items():
    for _s in _selectors.split():
        if _s in EXPLICIT:  # one row per method
            raise ValueError(f"{_s} listed twice")
        EXPLICIT[_s] = _none(_detail)


def read_method_list(path: "str | Path") -> list[str]:
    """The selectors of a method list file: one a line, ``#`` lines are comments."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [s.strip() for s in lines if s.strip() and not s.startswith("#")]


def strip_suffix(selector: str) -> str:
    """``constant(_:shape:dataType:)-ylr4`` -> ``constant(_:shape:dataType:)`` (Apple's pages
    add a suffix where two methods share a selector)."""
    return re.sub(r"\)-[a-z0-9]+$", ")", selector)


def split_selector(selector: str) -> tuple[str, list[str]]:
    """``argSort(_:axis:name:)`` -> ``("argSort", ["_", "axis", "name"])``."""
    m = re.fullmatch(r"([A-Za-z0-9]+)\(((?:[A-Za-z0-9_]+:)*)\)", strip_suffix(selector))
    if m is None:
        raise ValueError(f"not a Swift selector: {selector!r}")
    return m.group(1), [x for x in m.group(2).split(":") if x]


def join_selector(base: str, labels: list[str]) -> str:
    return f"{base}({''.join(label + ':' for label in labels)})"


def _param(label: str) -> str:
    return PARAM_OF_LABEL.get(label) or re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", label).lower()


def _params(opdef: OpDef) -> Mapping[str, inspect.Parameter]:
    return inspect.signature(opdef.builder).parameters if opdef.builder is not None else {}


def _omitted(short: list[str], full: list[str]) -> Optional[list[str]]:
    """The labels of ``full`` left out of ``short``, if ``short`` is ``full`` with some left out."""
    left, i = [], 0
    for label in full:
        if i < len(short) and short[i] == label:
            i += 1
        else:
            left.append(label)
    return left if i == len(short) and left else None


def _shorter_form(selector: str, by_swift: Mapping[str, str], ops: Mapping[str, OpDef]) -> Optional[Row]:
    """The op whose Swift name is this method with arguments added, each a builder parameter
    with a default (``argSort(_:axis:name:)`` is ``arg_sort`` with ``descending=False``)."""
    base, labels = split_selector(selector)
    for swift, t in sorted(by_swift.items()):
        b, full = split_selector(swift)
        left = _omitted(labels, full) if b == base else None
        if not left:
            continue
        params = _params(ops[t])
        if all(_param(x) in params and params[_param(x)].default is not inspect.Parameter.empty for x in left):
            return _form(t, "the op with " + ", ".join(f"`{_param(x)}={params[_param(x)].default!r}`" for x in left))
    return None


def table(selectors: list[str], ops: Optional[Mapping[str, OpDef]] = None) -> dict[str, Row]:
    """Each selector that the op registry, the rules or ``EXPLICIT`` account for, with its row."""
    ops = OPS if ops is None else ops
    by_swift: dict[str, str] = {}
    for t, d in sorted(ops.items()):
        if d.swift and t not in EXPORT_ONLY:
            by_swift.setdefault(d.swift, t)

    def covered(s: str) -> Optional[Row]:
        """The row of a method some op stands for (itself or another form of it)."""
        if s in by_swift and s == strip_suffix(s):
            return _op(by_swift[s])
        row = EXPLICIT.get(s)
        if row is not None and row.kind in ("op", "form"):
            return row
        row = _shorter_form(s, by_swift, ops)
        if row is not None:
            return row
        base, labels = split_selector(s)
        if "axis" in labels:  # reductionSum(with:axis:name:): the axes op with one axis
            target = covered(join_selector(base, ["axes" if x == "axis" else x for x in labels]))
            if target is not None and target.name is not None and \
                    "axis" in _params(ops[target.name]):
                return _form(target.name, "one axis (`axis=`)")
        return None

    out: dict[str, Row] = {}
    for s in selectors:
        row = covered(s)
        if row is None and s in EXPLICIT and EXPLICIT[s].kind != "none":
            row = EXPLICIT[s]
        if row is None:
            base, labels = split_selector(s)
            constant = [TENSOR_LABELS.get(x, x) for x in labels]
            target = covered(join_selector(base, constant)) if constant != labels else None
            if target is not None and target.name is not None:
                row = _tensor(target.name)
        if row is None:
            row = EXPLICIT.get(s)
        if row is not None:
            out[s] = row
    return out


def counts(rows: Mapping[str, Row]) -> dict[str, int]:
    """How many rows of each kind."""
    return {k: sum(1 for r in rows.values() if r.kind == k) for k in KINDS}


def apple_url(selector: str) -> str:
    """Apple's page for a method: the selector in lower case."""
    return APPLE_PAGE + selector.lower()
