"""Recurrent layers (MPSGraph's MPSGraphRNNOps): ``single_gate_rnn``, ``lstm``, ``gru`` and their
gradient ops, with the formulas of Apple's header (docs/recurrent.md writes them out, with the
torch conversion):

- ``single_gate_rnn``: ``z[t] = x[t] W^T + (h[t-1] m) R^T + b``, ``h[t] = activation(z[t])``;
- ``lstm``: ``[i, f, z, o][t] = f((h[t-1] m) R^T + x[t] W^T + b + p c[t-1])`` (each gate its own
  activation), ``c[t] = f c[t-1] + i z``, ``h[t] = o g(c[t])``;
- ``gru``: ``z, r = f((h[t-1] m) R^T + x[t] W^T + b)``, ``c = (h[t-1] r m) R^T`` (or
  ``((h[t-1] m) R^T + b2) r`` with ``reset_after``), ``o = fo(c + x[t] W^T + b)``,
  ``h[t] = z h[t-1] + (1 - z) o`` (or ``(1 - z) h[t-1] + z o`` with ``flip_z``).

Layouts: source ``[T, N, I]``; recurrent weight ``[G H, H]`` (``[2, G H, H]`` bidirectional, G the
gate count: 1, 4, 3); input weight ``[G H, I]`` (``[2 G H, I]``), optional: without it the source
is already projected, ``[T, N, G H]`` (``[T, N, 2 G H]``); bias ``[G H]`` (``[2 G H]``); initial
state and cell ``[N, H]`` (``[N, 2H]``); peephole ``[4H]`` (``[2, 4H]``, or ``[8H]`` as an older
header has it); GRU's secondary bias ``[H]`` (``[2H]``). A bidirectional layer runs the forward direction on the first halves and the
backward one on the second, and concatenates the results on the last axis. ``reverse`` (ignored
when bidirectional) runs the sequence from its end; results stay at the time index they belong to.
Optional inputs given as None are MPSGraph's nil: the op holds a placeholder scalar constant in
that slot and remembers the slot in its hidden ``nil_inputs`` (Swift export writes nil).

Choices where Apple is silent (tested, docs/recurrent.md): the mask broadcasts against the
output ``[T, N, D H]`` and ``mask[t]`` multiplies the state that enters step ``t``; the training
state holds the pre-activation ``z`` (single gate) or the activated gates in the layout's order
(LSTM, GRU); with ``training`` the LSTM returns ``[state, cell, training state]``, the cell being
what ``lstm_gradients`` takes as ``cell_output_fwd``; ``cell_gradient`` may also be ``[T, N, D H]``,
the gradient of the whole cell sequence (autodiff passes it so), and no gradient flows to the mask.
"""
from __future__ import annotations

import inspect
from typing import Callable, Optional

from ..descriptors import GRUDescriptor, LSTMDescriptor, SingleGateRNNDescriptor, frozen_copy
from ..errors import DTypeError, NotDifferentiableError, ShapeError
from ..types import ShapedType
from .registry import OPS, defop, gradient

GATES = {"single_gate_rnn": 1, "lstm": 4, "gru": 3}
DESCRIPTORS = {"single_gate_rnn": SingleGateRNNDescriptor, "lstm": LSTMDescriptor, "gru": GRUDescriptor}
# the optional inputs of each forward op, in its input order
INPUTS = {"single_gate_rnn": ("source", "recurrent_weight", "input_weight", "bias", "init_state", "mask"),
          "lstm": ("source", "recurrent_weight", "input_weight", "bias", "init_state", "init_cell", "mask",
                   "peephole"),
          "gru": ("source", "recurrent_weight", "input_weight", "bias", "init_state", "mask", "secondary_bias")}
# what each gradient op takes (after source and recurrent_weight), and the forward inputs whose
# gradients it returns, in Apple's order (those given as nil are left out)
GRAD_INPUTS = {
    "single_gate_rnn": ("source", "recurrent_weight", "source_gradient", "z_state", "state_gradient",
                        "input_weight", "bias", "init_state", "mask"),
    "lstm": ("source", "recurrent_weight", "source_gradient", "z_state", "cell_output_fwd", "state_gradient",
             "cell_gradient", "input_weight", "bias", "init_state", "init_cell", "mask", "peephole"),
    "gru": ("source", "recurrent_weight", "source_gradient", "z_state", "output_fwd", "state_gradient",
            "input_weight", "bias", "init_state", "mask", "secondary_bias")}
GRAD_OUTPUTS = {"single_gate_rnn": ("source", "recurrent_weight", "input_weight", "bias", "init_state"),
                "lstm": ("source", "recurrent_weight", "input_weight", "bias", "peephole", "init_state", "init_cell"),
                "gru": ("source", "recurrent_weight", "input_weight", "bias", "init_state", "secondary_bias")}


def nil_inputs(attrs) -> tuple:
    """The input slots an op was given as nil (None)."""
    return tuple(attrs.get("nil_inputs", ()))


def _known(d) -> bool:
    return d is not None and d >= 0


def _fits(shape, want) -> bool:
    return len(shape) == len(want) and all(not _known(a) or not _known(b) or a == b for a, b in zip(shape, want))


def _fmt(want) -> str:
    return "[" + ", ".join("?" if not _known(d) else str(d) for d in want) + "]"


class Geometry:
    """The sizes of a recurrent op: T, N, the source width X, hidden H, gates G, directions D."""

    def __init__(self, kind: str, types: dict, desc, op: str) -> None:
        self.kind, self.op, self.desc = kind, op, desc
        self.G = GATES[kind]
        self.D = 2 if desc.bidirectional else 1
        src, rw = types["source"], types["recurrent_weight"]
        if len(src.shape) != 3:
            raise ShapeError(f"source has shape {src.shape}; it needs rank 3, [T, N, I]")
        self.T, self.N, self.X = src.shape
        want_rank = 3 if self.D == 2 else 2
        if len(rw.shape) != want_rank:
            raise ShapeError(f"recurrent_weight has shape {rw.shape}; it needs "
                             + ("[2, G H, H] (bidirectional)" if self.D == 2 else "[G H, H]")
                             + f" with G = {self.G} gates")
        self.H = rw.shape[-1]
        if not _known(self.H):
            raise ShapeError(f"recurrent_weight {rw.shape} needs a known hidden size (its last axis)")
        G, H, D = self.G, self.H, self.D
        want = (2, G * H, H) if D == 2 else (G * H, H)
        if not _fits(rw.shape, want):
            raise ShapeError(f"recurrent_weight has shape {rw.shape}; with hidden size H = {H} "
                             f"(its last axis) and {G} gate{'s' if G > 1 else ''} it needs {_fmt(want)}")
        nil = types.get("__nil__", ())
        if "input_weight" in nil:
            if _known(self.X) and self.X != D * G * H:
                raise ShapeError(f"without input_weight the source is already projected and needs "
                                 f"{_fmt((self.T, self.N, D * G * H))}, got {src.shape}")
            self.I = D * G * H
        else:
            self.I = self.X
        self.expect = {"input_weight": (D * G * H, self.X), "bias": (D * G * H,),
                       "init_state": (self.N, D * H), "init_cell": (self.N, D * H),
                       "peephole": (2, 4 * H) if D == 2 else (4 * H,), "secondary_bias": (D * H,)}
        for k, want in self.expect.items():
            if k == "peephole" and D == 2 and k in types and _fits(types[k].shape, (8 * H,)):
                continue  # the older header's [8H] for bidirectional: the same values as [2, 4H]
            if k in types and k not in nil and not _fits(types[k].shape, want):
                raise ShapeError(f"{k} has shape {types[k].shape}; it needs {_fmt(want)} "
                                 f"(T = {self.T}, N = {self.N}, H = {H}, {G} gate{'s' if G > 1 else ''}"
                                 f"{', bidirectional' if D == 2 else ''})")
        if "mask" in types and "mask" not in nil:
            m = types["mask"].shape
            out = (self.T, self.N, D * H)
            if len(m) > 3 or any(_known(a) and _known(b) and a not in (1, b)
                                 for a, b in zip(reversed(m), reversed(out))):
                raise ShapeError(f"mask has shape {m}; it must broadcast to the output {_fmt(out)}")

    @property
    def state(self) -> tuple:
        return (self.T, self.N, self.D * self.H)

    @property
    def gates(self) -> tuple:
        return (self.T, self.N, self.D * self.G * self.H)


def _check_dtypes(in_types, names, nil, op: str):
    dt = in_types[0].dtype
    if not dt.is_floating:
        raise DTypeError(f"source has dtype {dt.name}; recurrent layers take a floating-point tensor "
                         "(float32 or float16; float64 on the numpy backend)")
    for t, n in zip(in_types, names):
        if n not in nil and t.dtype != dt:
            raise DTypeError(f"source is {dt.name} but {n} is {t.dtype.name}; all operands need one "
                             "dtype (cast with g.cast)")
    return dt


def _types(kind_inputs, in_types, attrs) -> dict:
    d = dict(zip(kind_inputs, in_types))
    d["__nil__"] = nil_inputs(attrs)
    return d


def forward_outputs(kind: str, geo: Geometry) -> list:
    """The output shapes of a forward op: state, then (LSTM) the cell, then the training state."""
    desc = geo.desc
    out = [geo.state]
    if kind == "lstm" and (desc.produce_cell or desc.training):
        out.append(geo.state)
    if desc.training:
        out.append(geo.state if kind == "single_gate_rnn" else geo.gates)
    return out


def _infer_forward(kind: str):
    def infer(in_types, attrs):
        names = INPUTS[kind]
        nil = nil_inputs(attrs)
        dt = _check_dtypes(in_types, names, nil, kind)
        geo = Geometry(kind, _types(names, in_types, attrs), attrs["descriptor"], kind)
        return [ShapedType(s, dt) for s in forward_outputs(kind, geo)]
    return infer


def _infer_gradients(kind: str):
    op = f"{kind}_gradients"

    def infer(in_types, attrs):
        names = GRAD_INPUTS[kind]
        nil = nil_inputs(attrs)
        dt = _check_dtypes(in_types, names, nil, op)
        types = _types(names, in_types, attrs)
        geo = Geometry(kind, types, attrs["descriptor"], op)
        zs = geo.state if kind == "single_gate_rnn" else geo.gates
        checks = {"source_gradient": [geo.state], "z_state": [zs], "cell_output_fwd": [geo.state],
                  "output_fwd": [geo.state], "state_gradient": [(geo.N, geo.D * geo.H)],
                  "cell_gradient": [(geo.N, geo.D * geo.H), geo.state]}
        for k, wants in checks.items():
            if k in types and k not in nil and not any(_fits(types[k].shape, w) for w in wants):
                raise ShapeError(f"{k} has shape {types[k].shape}; it needs "
                                 + " or ".join(_fmt(w) for w in wants))
        return [ShapedType(types[k].shape, dt) for k in GRAD_OUTPUTS[kind] if k not in nil]
    return infer


def _operands(g, kind: str, names, values: dict, label: str):
    """(tensors, nil_inputs) for an op's inputs: None becomes a placeholder scalar in its slot."""
    source = g.as_tensor(values[names[0]], label)
    tensors, nil = [], []
    for n in names:
        v = values[n]
        if v is None:
            nil.append(n)
            tensors.append(g.constant(0.0, dtype=source.dtype))
        else:
            tensors.append(source if n == names[0] else g.as_tensor(v, label, like=source))
    return tensors, tuple(nil)


def _build(g, kind: str, names, values: dict, descriptor, name, op_type: str) -> list:
    label = f"{op_type} op {name or op_type!r}"
    desc = frozen_copy(descriptor, DESCRIPTORS[kind], label)
    for required in names[:2] + (("source_gradient", "z_state") if op_type != kind else ()):
        if values[required] is None:
            raise ShapeError(f"{label}: {required} is required (it has no nil form in MPSGraph)")
    if op_type == "lstm_gradients" and values["cell_output_fwd"] is None:
        raise ShapeError(f"{label}: cell_output_fwd is required (the forward op's cell output)")
    if op_type == "gru_gradients" and values["output_fwd"] is None:
        raise ShapeError(f"{label}: output_fwd is required (the forward op's state output)")
    tensors, nil = _operands(g, kind, names, values, label)
    attrs: dict = {"descriptor": desc}
    if nil:
        attrs["nil_inputs"] = nil
    return list(g.add_op(op_type, tensors, attrs, name).outputs)


# ------------------------------------------------------------------------------ docstrings
_ARG_DOCS = {
    "source": "x: ``[T, N, I]`` (without an input weight ``[T, N, G H]``; ``[T, N, 2 G H]`` bidirectional).",
    "recurrent_weight": "R: ``[G H, H]`` (``[2, G H, H]`` bidirectional), rows by gate in the descriptor's order.",
    "input_weight": "W: ``[G H, I]`` (``[2 G H, I]``); None: the source is already projected.",
    "bias": "b: ``[G H]`` (``[2 G H]``); None: zeros.",
    "init_state": "h[-1]: ``[N, H]`` (``[N, 2H]``); None: zeros.",
    "init_cell": "c[-1]: ``[N, H]`` (``[N, 2H]``); None: zeros.",
    "mask": "m, broadcast against the output ``[T, N, D H]``; ``mask[t]`` multiplies the state entering "
            "step t; None: ones.",
    "peephole": "p: ``[4H]`` (``[2, 4H]``, or ``[8H]``), added to every gate times c[t-1]; None: zeros.",
    "secondary_bias": "b2: ``[H]`` (``[2H]``), used only with ``reset_after``; None: zeros.",
    "source_gradient": "The gradient of the forward op's state output, ``[T, N, D H]``.",
    "z_state": "The forward op's training-state output (built with ``descriptor.training``).",
    "cell_output_fwd": "The forward op's cell output, ``[T, N, D H]``.",
    "output_fwd": "The forward op's state output, ``[T, N, D H]``.",
    "state_gradient": "A gradient entering after the last step of each direction, ``[N, D H]``; None: zeros.",
    "cell_gradient": "A cell gradient entering after the last step, ``[N, D H]``, or the gradient of the whole "
                     "cell output, ``[T, N, D H]``; None: zeros.",
    "descriptor": "The layer's descriptor (None: its defaults), copied when the op is built.",
    "name": "The op's name (MPSGraph's ``name:``); None uses the op type.",
}


def _documented(returns: str) -> Callable[[Callable], Callable]:
    """Google-style sections for a declared recurrent builder (applied above ``@defop``): its inputs'
    layouts, what it returns, and the Swift method it mirrors."""
    def deco(fn: Callable) -> Callable:
        params = list(inspect.signature(fn).parameters)[1:]
        lines = ["", "", "Args:"] + [f"    {p}: {_ARG_DOCS[p]}" for p in params]
        lines += ["", "Returns:", f"    {returns} (MPSGraph ``{OPS[fn.__name__].swift}``)", "", "Raises:",
                  "    MiniGraphError: a ShapeError, DTypeError or DescriptorError when the inputs or the descriptor "
                  "do not fit; the message names the op."]
        summary = inspect.cleandoc(fn.__doc__ or "").split("\n\nArgs:")[0]  # defop's generic sections replaced
        fn.__doc__ = summary + "\n".join(lines)
        return fn
    return deco


_FORWARD_RETURNS = "list[Tensor]: the outputs MPSGraph returns, in its order (the state first)."
_GRADIENT_RETURNS = "list[Tensor]: one gradient per input given (not None), in Apple's order."


# ---------------------------------------------------------------------------------- forward ops
_SINCE_RNN = ("12.3", "15.4")
_SINCE_GRU = ("13.0", "16.0")


@_documented(_FORWARD_RETURNS)
@defop("single_gate_rnn", swift="singleGateRNN(_:recurrentWeight:inputWeight:bias:initState:mask:descriptor:name:)",
       objc="singleGateRNNWithSourceTensor:recurrentWeight:inputWeight:bias:initState:mask:descriptor:name:",
       inputs=INPUTS["single_gate_rnn"], infer=_infer_forward("single_gate_rnn"), family="rnn",
       attrs=("descriptor",), hidden_attrs=("nil_inputs",), since=_SINCE_RNN)
def single_gate_rnn(g, source, recurrent_weight, input_weight=None, bias=None, init_state=None, mask=None,
                    descriptor=None, name: Optional[str] = None) -> list:
    """A single-gate RNN over ``source`` ``[T, N, I]``: ``h[t] = activation(x[t] W^T + (h[t-1] m) R^T + b)``
    (MPSGraph ``singleGateRNN``). Returns ``[state]``, or ``[state, z]`` with ``descriptor.training``
    (``z``: the pre-activation, which ``single_gate_rnn_gradients`` takes as ``z_state``); each
    ``[T, N, H]`` (``[T, N, 2H]`` bidirectional). None inputs are MPSGraph's nil: no input weight
    (the source is already ``[T, N, H]``), zero bias and initial state, a mask of ones.
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/singlegaternn(_:recurrentweight:inputweight:bias:initstate:mask:descriptor:name:)"""
    values = dict(source=source, recurrent_weight=recurrent_weight, input_weight=input_weight, bias=bias,
                  init_state=init_state, mask=mask)
    return _build(g, "single_gate_rnn", INPUTS["single_gate_rnn"], values, descriptor, name, "single_gate_rnn")


@_documented(_FORWARD_RETURNS)
@defop("lstm", swift="LSTM(_:recurrentWeight:inputWeight:bias:initState:initCell:mask:peephole:descriptor:name:)",
       objc="LSTMWithSourceTensor:recurrentWeight:inputWeight:bias:initState:initCell:mask:peephole:descriptor:name:",
       inputs=INPUTS["lstm"], infer=_infer_forward("lstm"), family="rnn",
       attrs=("descriptor",), hidden_attrs=("nil_inputs",), since=_SINCE_RNN)
def lstm(g, source, recurrent_weight, input_weight=None, bias=None, init_state=None, init_cell=None, mask=None,
         peephole=None, descriptor=None, name: Optional[str] = None) -> list:
    """An LSTM over ``source`` ``[T, N, I]`` with gates ``[i, f, z, o]`` (``[i, z, f, o]`` with
    ``forget_gate_last``) (MPSGraph ``LSTM``). Returns ``[state]``, ``[state, cell]`` with
    ``produce_cell``, ``[state, cell, training_state]`` with ``training`` (the activated gates,
    ``[T, N, 4H]``); state and cell are ``[T, N, H]`` (``[T, N, 2H]`` bidirectional). None inputs
    are nil: no input weight (the source is ``[T, N, 4H]``), zero bias, state, cell and peephole,
    a mask of ones.
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/lstm(_:recurrentweight:inputweight:bias:initstate:initcell:mask:peephole:descriptor:name:)"""
    values = dict(source=source, recurrent_weight=recurrent_weight, input_weight=input_weight, bias=bias,
                  init_state=init_state, init_cell=init_cell, mask=mask, peephole=peephole)
    return _build(g, "lstm", INPUTS["lstm"], values, descriptor, name, "lstm")


@_documented(_FORWARD_RETURNS)
@defop("gru", swift="GRU(_:recurrentWeight:inputWeight:bias:initState:mask:secondaryBias:descriptor:name:)",
       objc="GRUWithSourceTensor:recurrentWeight:inputWeight:bias:initState:mask:secondaryBias:descriptor:name:",
       inputs=INPUTS["gru"], infer=_infer_forward("gru"), family="rnn",
       attrs=("descriptor",), hidden_attrs=("nil_inputs",), since=_SINCE_GRU)
def gru(g, source, recurrent_weight, input_weight=None, bias=None, init_state=None, mask=None,
        secondary_bias=None, descriptor=None, name: Optional[str] = None) -> list:
    """A GRU over ``source`` ``[T, N, I]`` with gates ``[z, r, o]`` (``[r, z, o]`` with
    ``reset_gate_first``) (MPSGraph ``GRU``). Returns ``[state]``, or ``[state, training_state]``
    with ``training`` (the activated gates, ``[T, N, 3H]``). ``secondary_bias`` ``[H]`` is ``b2``,
    used only with ``reset_after``. None inputs are nil (zeros; no input weight: the source is
    ``[T, N, 3H]``; a mask of ones).
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/gru(_:recurrentweight:inputweight:bias:initstate:mask:secondarybias:descriptor:name:)"""
    values = dict(source=source, recurrent_weight=recurrent_weight, input_weight=input_weight, bias=bias,
                  init_state=init_state, mask=mask, secondary_bias=secondary_bias)
    return _build(g, "gru", INPUTS["gru"], values, descriptor, name, "gru")


# --------------------------------------------------------------------------------- gradient ops
@_documented(_GRADIENT_RETURNS)
@defop("single_gate_rnn_gradients",
       swift="singleGateRNNGradients(_:recurrentWeight:sourceGradient:zState:stateGradient:inputWeight:bias:"
             "initState:mask:descriptor:name:)",
       objc="singleGateRNNGradientsWithSourceTensor:recurrentWeight:sourceGradient:zState:stateGradient:inputWeight:"
            "bias:initState:mask:descriptor:name:",
       inputs=GRAD_INPUTS["single_gate_rnn"], infer=_infer_gradients("single_gate_rnn"), family="rnn",
       role="data_gradient", forward="single_gate_rnn", differentiable=False,
       attrs=("descriptor",), hidden_attrs=("nil_inputs",), since=_SINCE_RNN)
def single_gate_rnn_gradients(g, source, recurrent_weight, source_gradient, z_state, state_gradient=None,
                              input_weight=None, bias=None, init_state=None, mask=None,
                              descriptor=None,
                              name: Optional[str] = None) -> list:
    """Gradients of ``single_gate_rnn`` (MPSGraph ``singleGateRNNGradients``): toward source,
    recurrent_weight, input_weight, bias and init_state, in that order, leaving out the inputs
    given as None. ``source_gradient`` is the gradient of the state output, ``z_state`` the
    forward op's training output, ``state_gradient`` ``[N, H]`` a gradient entering from beyond
    the last step.
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/singlegaternngradients(_:recurrentweight:sourcegradient:zstate:stategradient:inputweight:bias:initstate:mask:descriptor:name:)"""
    values = dict(source=source, recurrent_weight=recurrent_weight, source_gradient=source_gradient, z_state=z_state,
                  state_gradient=state_gradient, input_weight=input_weight, bias=bias, init_state=init_state,
                  mask=mask)
    return _build(g, "single_gate_rnn", GRAD_INPUTS["single_gate_rnn"], values, descriptor, name,
                  "single_gate_rnn_gradients")


@_documented(_GRADIENT_RETURNS)
@defop("lstm_gradients",
       swift="LSTMGradients(_:recurrentWeight:sourceGradient:zState:cellOutputFwd:stateGradient:cellGradient:"
             "inputWeight:bias:initState:initCell:mask:peephole:descriptor:name:)",
       objc="LSTMGradientsWithSourceTensor:recurrentWeight:sourceGradient:zState:cellOutputFwd:stateGradient:"
            "cellGradient:inputWeight:bias:initState:initCell:mask:peephole:descriptor:name:",
       inputs=GRAD_INPUTS["lstm"], infer=_infer_gradients("lstm"), family="rnn",
       role="data_gradient", forward="lstm", differentiable=False,
       attrs=("descriptor",), hidden_attrs=("nil_inputs",), since=_SINCE_RNN)
def lstm_gradients(g, source, recurrent_weight, source_gradient, z_state, cell_output_fwd, state_gradient=None,
                   cell_gradient=None, input_weight=None, bias=None, init_state=None, init_cell=None, mask=None,
                   peephole=None, descriptor=None, name: Optional[str] = None) -> list:
    """Gradients of ``lstm`` (MPSGraph ``LSTMGradients``): toward source, recurrent_weight,
    input_weight, bias, peephole, init_state and init_cell, in that order, leaving out the inputs
    given as None. ``z_state`` and ``cell_output_fwd`` are the forward op's training and cell
    outputs; ``state_gradient`` and ``cell_gradient`` ``[N, H]`` enter from beyond the last step
    (``cell_gradient`` may also be ``[T, N, H]``, the gradient of the whole cell output).
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/lstmgradients(_:recurrentweight:sourcegradient:zstate:celloutputfwd:stategradient:cellgradient:inputweight:bias:initstate:initcell:mask:peephole:descriptor:name:)"""
    values = dict(source=source, recurrent_weight=recurrent_weight, source_gradient=source_gradient, z_state=z_state,
                  cell_output_fwd=cell_output_fwd, state_gradient=state_gradient, cell_gradient=cell_gradient,
                  input_weight=input_weight, bias=bias, init_state=init_state, init_cell=init_cell, mask=mask,
                  peephole=peephole)
    return _build(g, "lstm", GRAD_INPUTS["lstm"], values, descriptor, name, "lstm_gradients")


@_documented(_GRADIENT_RETURNS)
@defop("gru_gradients",
       swift="GRUGradients(_:recurrentWeight:sourceGradient:zState:outputFwd:stateGradient:inputWeight:bias:"
             "initState:mask:secondaryBias:descriptor:name:)",
       objc="GRUGradientsWithSourceTensor:recurrentWeight:sourceGradient:zState:outputFwd:stateGradient:"
            "inputWeight:bias:initState:mask:secondaryBias:descriptor:name:",
       inputs=GRAD_INPUTS["gru"], infer=_infer_gradients("gru"), family="rnn",
       role="data_gradient", forward="gru", differentiable=False,
       attrs=("descriptor",), hidden_attrs=("nil_inputs",), since=_SINCE_GRU)
def gru_gradients(g, source, recurrent_weight, source_gradient, z_state, output_fwd, state_gradient=None,
                  input_weight=None, bias=None, init_state=None, mask=None, secondary_bias=None,
                  descriptor=None, name: Optional[str] = None) -> list:
    """Gradients of ``gru`` (MPSGraph ``GRUGradients``): toward source, recurrent_weight,
    input_weight, bias, init_state and secondary_bias, in that order, leaving out the inputs
    given as None. ``z_state`` and ``output_fwd`` are the forward op's training and state outputs.
    https://developer.apple.com/documentation/metalperformanceshadersgraph/mpsgraph/grugradients(_:recurrentweight:sourcegradient:zstate:outputfwd:stategradient:inputweight:bias:initstate:mask:secondarybias:descriptor:name:)"""
    values = dict(source=source, recurrent_weight=recurrent_weight, source_gradient=source_gradient, z_state=z_state,
                  output_fwd=output_fwd, state_gradient=state_gradient, input_weight=input_weight, bias=bias,
                  init_state=init_state, mask=mask, secondary_bias=secondary_bias)
    return _build(g, "gru", GRAD_INPUTS["gru"], values, descriptor, name, "gru_gradients")


# ---------------------------------------------------------------------------------- autodiff
def _zeros_like(g, t):
    if all(_known(d) for d in t.shape):
        return g.constant(0.0, dtype=t.dtype, shape=list(t.shape))
    return g.multiplication(t, 0.0)


def _rnn_gradient(kind: str):
    def rule(g, op, dy, wanted):
        desc = op.attrs["descriptor"]
        nil = nil_inputs(op.attrs)
        names = INPUTS[kind]
        n_out = len(op.outputs)
        dy = list(dy) if n_out > 1 else [dy]
        if desc.training and dy[n_out - 1] is not None:
            raise NotDifferentiableError(f"{op.type} op {op.name!r}: a gradient reached its training state "
                                         "output; MPSGraph's gradient op takes none (differentiate the state "
                                         "or cell outputs)")
        if desc.training:
            fwd = list(op.outputs)
        else:  # the gradient op needs the training state: the same op with training on
            d = desc.copy()
            d.training = True
            attrs = dict(op.attrs, descriptor=d)
            fwd = list(g.add_op(op.type, list(op.inputs), attrs, f"{op.name}_training").outputs)
        ins = dict(zip(names, op.inputs))
        vals = {n: (None if n in nil else ins[n]) for n in names}
        vals["source_gradient"] = dy[0] if dy[0] is not None else _zeros_like(g, op.outputs[0])
        vals["z_state"] = fwd[-1]
        vals["state_gradient"] = None
        if kind == "lstm":
            vals["cell_output_fwd"] = fwd[1]
            vals["cell_gradient"] = dy[1] if n_out > 1 and (desc.produce_cell or desc.training) else None
        if kind == "gru":
            vals["output_fwd"] = fwd[0]
        grad_names = GRAD_INPUTS[kind]
        outs = _build(g, kind, grad_names, {n: vals.get(n) for n in grad_names}, desc, None, f"{kind}_gradients")
        by_input = dict(zip([k for k in GRAD_OUTPUTS[kind] if k not in nil], outs))
        return [by_input.get(n) if wanted[i] else None for i, n in enumerate(names)]
    return rule


for _kind in GATES:
    gradient(_kind)(_rnn_gradient(_kind))
