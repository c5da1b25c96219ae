"""MobileNetV2, MobileNetV3 (Small, Large) and EfficientNet-B0 as PyTorch modules, written from
their papers' block tables (no download), with a width multiplier so tests stay quick.

Sandler et al. 2018 (MobileNetV2, table 2), Howard et al. 2019 (MobileNetV3, tables 1 and 2),
Tan & Le 2019 (EfficientNet-B0, table 1). EfficientNet's stochastic depth is left out (it is
random in training and the identity in inference).
"""
from __future__ import annotations

import torch
from torch import nn


def divisible(v: float, divisor: int = 8) -> int:
    """Channels rounded to a multiple of 8, never below 90% of ``v`` (the papers' rule)."""
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


def conv_bn(cin: int, cout: int, k: int, s: int, groups: int = 1, act: type | None = nn.ReLU6) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expand, 3x3 depthwise, 1x1 linear projection, residual when shapes allow."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = [] if expand == 1 else [conv_bn(cin, hidden, 1, 1)]
        layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden), conv_bn(hidden, cout, 1, 1, act=None)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return x + y if self.residual else y


class MobileNetV2(nn.Module):
    # expansion t, channels c, repeats n, first stride s
    SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1)]

    def __init__(self, width: float = 1.0, classes: int = 10, dropout: float = 0.2):
        super().__init__()
        cin = divisible(32 * width)
        last = divisible(1280 * max(1.0, width))
        layers: list[nn.Module] = [conv_bn(3, cin, 3, 2)]
        for t, c, n, s in self.SETTINGS:
            cout = divisible(c * width)
            for i in range(n):
                layers.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        layers.append(conv_bn(cin, last, 1, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(dropout), nn.Linear(last, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.classifier(x)


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int, squeeze: int, act: type = nn.ReLU, gate: type = nn.Hardsigmoid):
        super().__init__()
        self.reduce = nn.Conv2d(channels, squeeze, 1)
        self.act = act()
        self.expand = nn.Conv2d(squeeze, channels, 1)
        self.gate = gate()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = nn.functional.adaptive_avg_pool2d(x, 1)
        return x * self.gate(self.expand(self.act(self.reduce(s))))


class V3Block(nn.Module):
    def __init__(self, cin: int, k: int, exp: int, cout: int, se: bool, act: type, stride: int):
        super().__init__()
        layers: list[nn.Module] = [] if exp == cin else [conv_bn(cin, exp, 1, 1, act=act)]
        layers.append(conv_bn(exp, exp, k, stride, groups=exp, act=act))
        if se:
            layers.append(SqueezeExcite(exp, divisible(exp // 4)))
        layers.append(conv_bn(exp, cout, 1, 1, act=None))
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return x + y if self.residual else y


RE, HS = nn.ReLU, nn.Hardswish
# kernel, expansion size, output channels, squeeze-excite, nonlinearity, stride
V3_SMALL = [(3, 16, 16, True, RE, 2), (3, 72, 24, False, RE, 2), (3, 88, 24, False, RE, 1),
            (5, 96, 40, True, HS, 2), (5, 240, 40, True, HS, 1), (5, 240, 40, True, HS, 1),
            (5, 120, 48, True, HS, 1), (5, 144, 48, True, HS, 1), (5, 288, 96, True, HS, 2),
            (5, 576, 96, True, HS, 1), (5, 576, 96, True, HS, 1)]
V3_LARGE = [(3, 16, 16, False, RE, 1), (3, 64, 24, False, RE, 2), (3, 72, 24, False, RE, 1),
            (5, 72, 40, True, RE, 2), (5, 120, 40, True, RE, 1), (5, 120, 40, True, RE, 1),
            (3, 240, 80, False, HS, 2), (3, 200, 80, False, HS, 1), (3, 184, 80, False, HS, 1),
            (3, 184, 80, False, HS, 1), (3, 480, 112, True, HS, 1), (3, 672, 112, True, HS, 1),
            (5, 672, 160, True, HS, 2), (5, 960, 160, True, HS, 1), (5, 960, 160, True, HS, 1)]


class MobileNetV3(nn.Module):
    def __init__(self, table: list, last: int, head: int, width: float = 1.0, classes: int = 10,
                 dropout: float = 0.2):
        super().__init__()
        cin = divisible(16 * width)
        layers: list[nn.Module] = [conv_bn(3, cin, 3, 2, act=HS)]
        for k, exp, cout, se, act, s in table:
            exp, cout = divisible(exp * width), divisible(cout * width)
            layers.append(V3Block(cin, k, exp, cout, se, act, s))
            cin = cout
        last = divisible(last * width)
        layers.append(conv_bn(cin, last, 1, 1, act=HS))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Linear(last, head), HS(), nn.Dropout(dropout), nn.Linear(head, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.classifier(x)


def mobilenet_v3_small(width: float = 1.0, classes: int = 10) -> MobileNetV3:
    return MobileNetV3(V3_SMALL, 576, 1024, width, classes)


def mobilenet_v3_large(width: float = 1.0, classes: int = 10) -> MobileNetV3:
    return MobileNetV3(V3_LARGE, 960, 1280, width, classes)


class MBConv(nn.Module):
    """EfficientNet's block: expand, depthwise, squeeze-excite (SiLU, sigmoid), project."""

    def __init__(self, cin: int, cout: int, k: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = [] if expand == 1 else [conv_bn(cin, hidden, 1, 1, act=nn.SiLU)]
        layers += [conv_bn(hidden, hidden, k, stride, groups=hidden, act=nn.SiLU),
                   SqueezeExcite(hidden, max(1, cin // 4), act=nn.SiLU, gate=nn.Sigmoid),
                   conv_bn(hidden, cout, 1, 1, act=None)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return x + y if self.residual else y


class EfficientNetB0(nn.Module):
    # expansion, kernel, stride, output channels, repeats
    STAGES = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3),
              (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]

    def __init__(self, width: float = 1.0, classes: int = 10, dropout: float = 0.2):
        super().__init__()
        cin = divisible(32 * width)
        layers: list[nn.Module] = [conv_bn(3, cin, 3, 2, act=nn.SiLU)]
        for e, k, s, c, n in self.STAGES:
            cout = divisible(c * width)
            for i in range(n):
                layers.append(MBConv(cin, cout, k, s if i == 0 else 1, e))
                cin = cout
        last = divisible(1280 * width)
        layers.append(conv_bn(cin, last, 1, 1, act=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(dropout), nn.Linear(last, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.classifier(x)


def depthwise_layers(module: nn.Module) -> int:
    """How many depthwise convolutions (groups == input channels > 1) a module holds."""
    return sum(1 for m in module.modules()
               if isinstance(m, nn.Conv2d) and m.groups > 1 and m.groups == m.in_channels)
