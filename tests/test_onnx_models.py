"""Model zoos through ``mg.from_onnx``: real architectures from ``torchvision.models`` and ``timm``,
exported with both of PyTorch's exporters, imported and run, against onnxruntime.

Nothing is downloaded: every network is built with random weights (``pretrained=False``, seeded).
Freshly initialized networks are degenerate test cases (batch norms are identities, ConvNeXt's layer
scales are 1e-6, so its blocks add nothing; outputs shrink to 1e-10), so before export each
parameter of rank 0 or 1 is redrawn (biases from U(-0.2, 0.2), the rest — norms' scales, layer
scales — from U(0.5, 1.5)) and the batch norms' running statistics are set from one batch of
random images (train mode, momentum 1): every layer then works on activations of order one, as in
a trained network, and every scale, shift and statistic reaches the output.

Each model is exported by the TorchScript-based exporter (``dynamo=False``, opset 17: the first
with ``LayerNormalization``) and by the ``torch.export``-based one (``dynamo=True``, its default
opset), imported, and its forward pass on numpy compared with onnxruntime's on the same file.

Tolerances: ``rtol=1e-3`` and ``atol=1e-4 * max|reference|``. Both sides compute in float32 but in
different orders (minigraph's numpy kernels accumulate convolutions and matmuls in float64,
onnxruntime in float32 with its own blocking), and 20 to 50 layers of normalization and
nonlinearity carry that rounding to the output: the measured differences are at most ~1.5e-5 of
the output's magnitude (PyTorch and onnxruntime differ by as much). An absolute tolerance scaled to
the output's magnitude keeps the check meaningful for logits near zero; 1e-4 of it leaves about a
factor of ten of headroom, while a wrong operator (a dropped bias, a wrong axis, a missed
activation) moves the output by far more than 1e-3 of its magnitude.

The two smallest networks (MobileNetV3-Small from torchvision, LCNet-050 from timm) run in the
default selection; the rest are ``slow`` (``pytest -m slow``), as are most webgpu runs. docs/onnx.md
("Model zoos") holds the table of results.
"""
from __future__ import annotations

import hashlib
import logging
import os
import sys
import types
import warnings

import numpy as np
import pytest

import minigraph as mg

ORACLES_REASON = "needs the oracles extra (torch, torchvision, timm, onnx, onnxruntime): pip install -e '.[oracles]'"
onnx = pytest.importorskip("onnx", reason=ORACLES_REASON)
torch = pytest.importorskip("torch", reason=ORACLES_REASON)
ort = pytest.importorskip("onnxruntime", reason=ORACLES_REASON)
pytest.importorskip("onnxscript", reason=ORACLES_REASON + " (onnxscript: the dynamo exporter)")


def _import_torchvision():
    """``torchvision``, or a skip. PyPI's torchvision wheel is built against CUDA PyTorch: with the CPU
    build its compiled ops (``torchvision._C``: nms, roi_align, ...) do not load, and its import
    fails registering their fake kernels. The model definitions use none of them, so the import is
    retried without the two modules that register those kernels."""
    try:
        import torchvision
    except ImportError as e:
        pytest.skip(f"{ORACLES_REASON}: {e}", allow_module_level=True)
    except RuntimeError as e:
        if "torchvision::" not in str(e):
            raise
        for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[name]
        for name in ("torchvision._meta_registrations", "torchvision._autograd_registrations"):
            sys.modules[name] = types.ModuleType(name)
        import torchvision
    return torchvision


tv = _import_torchvision().models
timm = pytest.importorskip("timm", reason=ORACLES_REASON)

SIZE = 64  # the input images are 1x3x64x64: the smallest size all of these take (ViT: 4x4 patches of 16)
CLASSES = 10


def _timm(name, **kw):
    return lambda: timm.create_model(name, pretrained=False, num_classes=CLASSES, **kw)


# name -> (where it comes from, the constructor); the fast ones run by default
MODELS = {
    "mobilenet_v2": ("torchvision", lambda: tv.mobilenet_v2(num_classes=CLASSES)),
    "mobilenet_v3_small": ("torchvision", lambda: tv.mobilenet_v3_small(num_classes=CLASSES)),
    "mobilenet_v3_large": ("torchvision", lambda: tv.mobilenet_v3_large(num_classes=CLASSES)),
    "efficientnet_b0": ("torchvision", lambda: tv.efficientnet_b0(num_classes=CLASSES)),
    "efficientnet_v2_s": ("torchvision", lambda: tv.efficientnet_v2_s(num_classes=CLASSES)),
    "mnasnet0_5": ("torchvision", lambda: tv.mnasnet0_5(num_classes=CLASSES)),
    "shufflenet_v2_x0_5": ("torchvision", lambda: tv.shufflenet_v2_x0_5(num_classes=CLASSES)),
    "regnet_y_400mf": ("torchvision", lambda: tv.regnet_y_400mf(num_classes=CLASSES)),
    "convnext_tiny": ("torchvision", lambda: tv.convnext_tiny(num_classes=CLASSES)),
    "ghostnet_100": ("timm", _timm("ghostnet_100")),
    "lcnet_050": ("timm", _timm("lcnet_050")),
    "mixnet_s": ("timm", _timm("mixnet_s")),
    "mobilevit_xxs": ("timm", _timm("mobilevit_xxs")),
    "deit_tiny_patch16_224": ("timm", _timm("deit_tiny_patch16_224", img_size=SIZE)),
}
FAST = {"mobilenet_v3_small", "lcnet_050"}
EXPORTERS = {"torchscript": dict(dynamo=False, opset_version=17), "dynamo": dict(dynamo=True)}
# the webgpu runs (pipeline compilation makes them slower): one fast, the rest slow
WEBGPU = {("lcnet_050", "torchscript"): False, ("mobilenet_v3_small", "dynamo"): True,
          ("mixnet_s", "torchscript"): True, ("convnext_tiny", "dynamo"): True,
          ("deit_tiny_patch16_224", "dynamo"): True, ("mobilevit_xxs", "dynamo"): True}


def _cases(pairs, slow_if):
    return [pytest.param(m, e, id=f"{m}-{e}", marks=[pytest.mark.slow] if slow_if(m, e) else [])
            for m, e in pairs]


def build(name):
    """The network with seeded random weights, made non-degenerate (see the module's docstring), in eval mode."""
    torch.manual_seed(0)
    module = MODELS[name][1]()
    with torch.no_grad():
        for pname, p in module.named_parameters():
            if p.ndim <= 1:
                p.uniform_(-0.2, 0.2) if pname.endswith("bias") else p.uniform_(0.5, 1.5)
        norms = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        saved = [m.momentum for m in norms]
        for m in norms:
            m.momentum = 1.0
        module.train()
        module(torch.randn(4, 3, SIZE, SIZE))
        for m, mom in zip(norms, saved):
            m.momentum = mom
    return module.eval()


def export(module, x, path, exporter):
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kw = EXPORTERS[exporter]
            if kw["dynamo"]:
                torch.onnx.export(module, (x,), str(path), verbose=False, **kw)
            else:
                torch.onnx.export(module, (x,), str(path), do_constant_folding=True, **kw)
    finally:
        logging.disable(logging.NOTSET)


@pytest.fixture(scope="session")
def zoo(tmp_path_factory):
    """(path, input, PyTorch's output) per (model, exporter), exported once into a folder the test
    workers share (named after the versions and this file's text: an edit here exports afresh)."""
    with open(__file__, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    folder = tmp_path_factory.getbasetemp().parent / f"onnx-zoo-{torch.__version__}-{timm.__version__}-{digest}"
    folder.mkdir(exist_ok=True)

    def get(name, exporter):
        module = build(name)
        torch.manual_seed(1)
        x = torch.randn(1, 3, SIZE, SIZE)
        path = folder / f"{name}-{exporter}.onnx"
        if not path.exists():
            tmp = folder / f"{name}-{exporter}.{os.getpid()}.tmp.onnx"
            export(module, x, tmp, exporter)
            os.replace(tmp, path)
        with torch.no_grad():
            y = module(x).numpy()
        return str(path), x.numpy(), y
    return get


def _close(got, ref, what):
    scale = float(np.abs(ref).max()) or 1.0
    np.testing.assert_allclose(got, ref, rtol=1e-3, atol=1e-4 * scale, err_msg=what)


def _check(name, exporter, backend, zoo):
    path, x, y_torch = zoo(name, exporter)
    g, inputs, outputs = mg.from_onnx(path)
    (input_name, ph), = inputs.items()
    (out,) = outputs.values()
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {input_name: x})[0]
    _close(ref, y_torch, "onnxruntime against PyTorch (the exported file itself)")
    got = g.run({ph: x}, [out], backend=backend)[out]
    _close(got, ref, f"{name} ({exporter}) on {backend}")


@pytest.mark.parametrize("name, exporter", _cases([(m, e) for m in MODELS for e in EXPORTERS],
                                                  lambda m, e: m not in FAST))
def test_forward_matches_onnxruntime_on_numpy(name, exporter, zoo):
    _check(name, exporter, "numpy", zoo)


@pytest.mark.parametrize("name, exporter", _cases(WEBGPU, lambda m, e: WEBGPU[m, e]))
def test_forward_matches_onnxruntime_on_webgpu(name, exporter, zoo, webgpu):
    _check(name, exporter, webgpu, zoo)


def test_the_zoo_covers_the_listed_architectures():
    """MobileNetV2, MobileNetV3-Small/Large, EfficientNet-B0 and V2-S, MnasNet, ShuffleNetV2, RegNet,
    ConvNeXt-Tiny; from timm a GhostNet, an LCNet, a MixNet, a MobileViT and a ViT/DeiT-tiny."""
    wanted = ["mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "efficientnet_b0", "efficientnet_v2_s",
              "mnasnet", "shufflenet_v2", "regnet", "convnext_tiny", "ghostnet", "lcnet", "mixnet", "mobilevit",
              "deit_tiny"]
    for w in wanted:
        assert any(m.startswith(w) for m in MODELS), w
    assert {src for src, _ in MODELS.values()} == {"torchvision", "timm"}


def _train_mode(module):
    """Train mode with the random layers off (dropout and EfficientNet's stochastic depth at p = 0;
    the training-mode export keeps no eval-mode layer): batch norm on batch statistics, the same
    function in PyTorch and in the exported file."""
    for m in module.modules():
        if isinstance(m, torch.nn.Dropout) or type(m).__name__ == "StochasticDepth":
            m.p = 0.0
    return module.train()


TRAINING = {"mobilenet_v2": True, "mobilenet_v3_small": True, "efficientnet_b0": True, "mnasnet0_5": False}


@pytest.mark.parametrize("name", [pytest.param(m, marks=[pytest.mark.slow] if slow else []) for m, slow in TRAINING.items()])
def test_training_import_gradients_match_torch_autograd(name, tmp_path):
    """The network exported in training form (batch norm on batch statistics), imported with
    ``training=True``: the loss and every parameter's gradient equal ``torch.autograd``'s in train
    mode, on numpy (whose batch-norm kernels sum in float64), within 2e-3 relative and 2e-4 of the
    largest gradient (rounding through a dozen batch norms)."""
    module = build(name)
    torch.manual_seed(2)
    x = torch.randn(4, 3, SIZE, SIZE)
    labels = torch.arange(4) % CLASSES
    path = tmp_path / f"{name}-train.onnx"
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _train_mode(module)
            torch.onnx.export(module, (x,), str(path), dynamo=False, opset_version=13, do_constant_folding=False,
                              training=torch.onnx.TrainingMode.TRAINING)
    finally:
        logging.disable(logging.NOTSET)
    g, inputs, outputs = mg.from_onnx(str(path), training=True)
    onehot = np.eye(CLASSES, dtype=np.float32)[labels.numpy()]
    lab = g.placeholder(onehot.shape, name="labels")
    loss = g.softmax_cross_entropy(next(iter(outputs.values())), lab, axis=-1, reduction="mean")
    params = dict(module.named_parameters())
    weights = [v for v in g.variables if v.name in params]
    assert len(weights) == len(params)
    grads = g.gradients(loss, weights)
    out = g.run({next(iter(inputs.values())): x.numpy(), lab: onehot}, [loss] + [grads[v] for v in weights])
    _train_mode(module).zero_grad()
    ref = torch.nn.functional.cross_entropy(module(x), labels)
    ref.backward()
    np.testing.assert_allclose(out[loss].item(), ref.item(), rtol=1e-4)
    scale = max(float(p.grad.abs().max()) for p in params.values())
    for v in weights:
        np.testing.assert_allclose(out[grads[v]], params[v.name].grad.numpy(), rtol=2e-3, atol=2e-4 * scale,
                                   err_msg=v.name)
