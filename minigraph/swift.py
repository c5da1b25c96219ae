"""Swift export: ``g.to_swift()`` emits Swift source that builds the same graph with MPSGraph.

The mapping is generic: each op's ``OpDef.swift`` (e.g. ``"reshape(_:shape:name:)"``) gives the
method and its argument labels; the op's inputs fill the first labels in order, and each further
label is filled from the attribute of the same name (``outputShape`` <- ``output_shape``,
``descriptor``/``forwardConvolutionDescriptor`` <- ``descriptor``). Special cases exist only where
MPSGraph's arguments have another shape than ours (memory ops, ``sliceGradientTensor``,
``squeeze`` of all unit axes). Constants and variables become ``Data`` (little-endian bytes, in
base64); descriptors are created with ``()`` and every field is set, since a bare MPSGraph
descriptor has zeroed fields (docs/mpsgraph-spec.md §2.2). The program ends with
``graph.run(feeds:targetTensors:targetOperations:)``.
"""
from __future__ import annotations

import base64
import dataclasses
import enum
import math
import re
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from .errors import DTypeError, MiniGraphError, SwiftExportError
from .ops._util import normalize_axes
from .ir import OPS, Operation, Tensor
from .listing import is_leaf
from .version import __version__
from .types import DataType


SWIFT_DTYPES = {"float32": ".float32", "float16": ".float16", "int8": ".int8", "int16": ".int16",
                "int32": ".int32", "int64": ".int64", "uint8": ".uInt8", "uint16": ".uInt16",
                "uint32": ".uInt32", "uint64": ".uInt64", "bool": ".bool", "complex64": ".complexFloat32",
                "complex32": ".complexFloat16", "int4": ".int4", "uint4": ".uInt4"}
# Swift case names where they differ from the Python member name
SWIFT_ENUM_CASES = {("PaddingStyle", "EXPLICIT"): ".explicit",
                    ("PaddingMode", "CONSTANT"): ".constant", ("PaddingMode", "REFLECT"): ".reflect",
                    ("PaddingMode", "SYMMETRIC"): ".symmetric", ("PaddingMode", "CLAMP_TO_EDGE"): ".clampToEdge",
                    ("PaddingMode", "ZERO"): ".zero", ("PaddingMode", "PERIODIC"): ".periodic",
                    ("PaddingMode", "ANTI_PERIODIC"): ".antiPeriodic",
                    ("PaddingStyle", "EXPLICIT_OFFSET"): ".explicitOffset",
                    ("ResizeMode", "NEAREST"): ".nearest", ("ResizeMode", "BILINEAR"): ".bilinear",
                    ("ResizeNearestRoundingMode", "ROUND_PREFER_CEIL"): ".roundPreferCeil",
                    ("ResizeNearestRoundingMode", "ROUND_PREFER_FLOOR"): ".roundPreferFloor",
                    ("ResizeNearestRoundingMode", "CEIL"): ".ceil", ("ResizeNearestRoundingMode", "FLOOR"): ".floor",
                    ("ResizeNearestRoundingMode", "ROUND_TO_EVEN"): ".roundToEven",
                    ("ResizeNearestRoundingMode", "ROUND_TO_ODD"): ".roundToOdd",
                    ("RandomDistribution", "UNIFORM"): ".uniform", ("RandomDistribution", "NORMAL"): ".normal",
                    ("RandomDistribution", "TRUNCATED_NORMAL"): ".truncatedNormal",
                    ("RandomNormalSamplingMethod", "INV_CDF"): ".invCDF",
                    ("RandomNormalSamplingMethod", "BOX_MULLER"): ".boxMuller",
                    ("ScatterMode", "ADD"): ".add", ("ScatterMode", "SUB"): ".sub", ("ScatterMode", "MUL"): ".mul",
                    ("ScatterMode", "DIV"): ".div", ("ScatterMode", "MIN"): ".min", ("ScatterMode", "MAX"): ".max",
                    ("ScatterMode", "SET"): ".set",
                    ("RNNActivation", "NONE"): ".none", ("RNNActivation", "RELU"): ".relu",
                    ("RNNActivation", "TANH"): ".tanh", ("RNNActivation", "SIGMOID"): ".sigmoid",
                    ("RNNActivation", "HARD_SIGMOID"): ".hardSigmoid",
                    ("PoolingReturnIndicesMode", "NONE"): ".none",
                    **{("PoolingReturnIndicesMode", f"{kind.upper()}_FLATTEN_{k}D"): f".{kind}Flatten{k}D"
                       for kind in ("global", "local") for k in range(1, 5)},
                    ("FFTScalingMode", "NONE"): ".none", ("FFTScalingMode", "SIZE"): ".size",
                    ("FFTScalingMode", "UNITARY"): ".unitary",
                    ("ReductionMode", "MIN"): ".min", ("ReductionMode", "MAX"): ".max", ("ReductionMode", "SUM"): ".sum",
                    ("ReductionMode", "PRODUCT"): ".product", ("ReductionMode", "ARGUMENT_MIN"): ".argumentMin",
                    ("ReductionMode", "ARGUMENT_MAX"): ".argumentMax",
                    # MPSGraphNonMaximumSuppressionOps.h: CornersHeightFirst is MPS_SWIFT_NAME(explicit)
                    ("NonMaximumSuppressionCoordinateMode", "CORNERS_HEIGHT_FIRST"): ".explicit",
                    ("NonMaximumSuppressionCoordinateMode", "CORNERS_WIDTH_FIRST"): ".cornersWidthFirst",
                    ("NonMaximumSuppressionCoordinateMode", "CENTERS_HEIGHT_FIRST"): ".centersHeightFirst",
                    ("NonMaximumSuppressionCoordinateMode", "CENTERS_WIDTH_FIRST"): ".centersWidthFirst"}
LOSS_REDUCTION = {"none": "MPSGraphLossReductionType.none", "sum": ".sum", "mean": ".mean"}
# Swift label -> attribute name, where the label is not the camelCase of the attribute
LABEL_ALIASES = {"to": "to_type", "reuctionType": "reduction", "reductionType": "reduction",
                 "with": "padding_mode", "withMultiplier": "multiplier",
                 "withShape": "shape", "dataType": "dtype", "alongAxis": "axis", "withCounterLow": "counter_low",
                 "sparseTensorWithType": "sparse_storage_type"}
_AXIS_LABELS = ("axis", "dimension", "withDimension")
# ops whose axis is stored non-negative and may equal the input's rank (a position in the result)
_RESULT_AXIS_OPS = ("stack", "flatten_2d", "one_hot")
# ops whose MPSGraph method returns an array of tensors even when it holds one
_LIST_RESULT_OPS = ("split", "if_then_else", "while_loop", "for_loop", "call")
_SWIFT_KEYWORDS = {"as", "break", "case", "catch", "class", "continue", "default", "defer", "do",
                   "else", "enum", "extension", "fallthrough", "false", "for", "func", "guard", "if",
                   "import", "in", "init", "inout", "internal", "is", "let", "nil", "operator",
                   "private", "protocol", "public", "repeat", "return", "self", "static", "struct",
                   "subscript", "super", "switch", "throw", "throws", "true", "try", "typealias",
                   "var", "where", "while", "Any", "Self", "Type",
                   # names the generated program itself uses
                   "graph", "device", "feeds", "results"}
_SIG = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\(((?:[A-Za-z_][A-Za-z0-9_]*:)*)\)$")


def camel(snake: str) -> str:
    """``stride_in_x`` -> ``strideInX`` (MPSGraph's property and label spelling)."""
    head, *rest = snake.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def parse_signature(sig: str) -> tuple:
    """``"reshape(_:shape:name:)"`` -> ``("reshape", ["_", "shape", "name"])``."""
    m = _SIG.match(sig or "")
    if not m:
        raise SwiftExportError(f"{sig!r} is not a Swift method signature like 'addition(_:_:name:)'")
    return m.group(1), [x for x in m.group(2).split(":") if x]


def _label_attr(label: str, attr_names) -> Optional[str]:
    names = list(attr_names)
    if label in LABEL_ALIASES and LABEL_ALIASES[label] in names:
        return LABEL_ALIASES[label]
    for a in names:
        if camel(a) == label or a == label:
            return a
    if label.lower().endswith("descriptor") and "descriptor" in names:
        return "descriptor"
    return None


def argument_plan(opdef, attr_names=None) -> list:
    """How each Swift argument of an op type is filled: ``[(label, kind, key)]`` with kind
    ``"input"`` (key: input position, or ``"*"`` for a tensor list), ``"attr"`` (key: attribute
    name) or ``"name"``. Raises ``SwiftExportError`` when a label has no source."""
    if opdef.type in SPECIAL:
        return [("*", "special", opdef.type)]
    method, labels = parse_signature(opdef.swift)
    attr_names = tuple(opdef.attrs) if attr_names is None else tuple(attr_names)
    plan: list[tuple[Any, str, Any]] = []
    inputs = list(opdef.inputs)
    variadic = len(inputs) == 1 and inputs[0] in ("tensors", "values")
    for i, inp in enumerate(inputs):
        if i >= len(labels) or labels[i] == "name":
            raise SwiftExportError(f"{opdef.type}: Swift signature {opdef.swift!r} has no label for input "
                                   f"{inp!r}")
        plan.append((labels[i], "input", "*" if variadic else i))
    for label in labels[len(inputs):]:
        if label == "name":
            plan.append((label, "name", None))
            continue
        attr = _label_attr(label, attr_names)
        if attr is None:
            raise SwiftExportError(f"{opdef.type}: Swift label {label!r} of {opdef.swift!r} matches no "
                                   f"attribute (attributes: {list(attr_names)}); add a special case "
                                   "in minigraph/swift.py")
        plan.append((label, "attr", attr))
    return plan


def swift_mapping(opdef) -> str:
    """A one-line description of how an op type is exported (for docs and the registry test)."""
    plan = argument_plan(opdef)
    if plan[0][1] == "special":
        return f"{opdef.swift} (special case)"
    parts = [f"{label}: {kind if kind != 'attr' else key}" for label, kind, key in plan]
    return f"{parse_signature(opdef.swift)[0]}({', '.join(parts)})"


# ------------------------------------------------------------------------------- literals
def swift_string(s: str) -> str:
    out = []
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif ord(c) < 32 or ord(c) == 127:
            out.append(f"\\u{{{ord(c):x}}}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def swift_dtype(dt: DataType, where: str) -> str:
    s = SWIFT_DTYPES.get(dt.name)
    if s is None:
        raise SwiftExportError(f"{where}: {dt.name} has no MPSDataType (MPSGraph has no float64); "
                               "cast to float32 before exporting")
    return s


def swift_double(x: float) -> str:
    if math.isnan(x):
        return "Double.nan"
    if math.isinf(x):
        return "Double.infinity" if x > 0 else "-Double.infinity"
    r = repr(float(x))
    return r if ("." in r or "e" in r) else r + ".0"


def _numbers(v) -> str:
    return "[" + ", ".join(str(int(x)) for x in v) + "]"


def _data(arr: np.ndarray) -> str:
    le = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False)
    return f'Data(base64Encoded: "{base64.b64encode(le.tobytes()).decode("ascii")}")!'


def pack_nibbles(arr: np.ndarray) -> np.ndarray:
    """int4 / uint4 values (held one per byte) packed two per byte, the first in the low 4 bits, as
    4-bit tensor data is laid out (an odd count leaves the last high nibble 0)."""
    low = np.ascontiguousarray(arr).reshape(-1).astype(np.uint8) & 15
    if low.size % 2:
        low = np.concatenate([low, np.zeros(1, np.uint8)])
    return (low[0::2] | (low[1::2] << 4)).astype(np.uint8)


def _enum(v: enum.Enum) -> str:
    """The Swift case: the table's, else the name as it is (MPSGraph's ``.NCHW``, ``.ONNX_SAME_LOWER``)."""
    return SWIFT_ENUM_CASES.get((type(v).__name__, v.name), "." + v.name)


def _unset_return_indices(d) -> tuple:
    """A pooling descriptor's return-indices fields when unused (mode NONE): left out, so the
    program also builds for systems before macOS 12.2 / iOS 15.3, where they do not exist."""
    mode = getattr(d, "return_indices_mode", None)
    return ("return_indices_mode", "return_indices_data_type") if mode is not None and int(mode) == 0 else ()


def _scalar_value(v: Any, where: str) -> str:
    if isinstance(v, enum.Enum):
        return _enum(v)
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return swift_double(float(v))
    if isinstance(v, DataType):
        return swift_dtype(v, where)
    if isinstance(v, str):
        return swift_string(v)
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_scalar_value(x, where) for x in v) + "]"
    raise SwiftExportError(f"{where}: cannot write a {type(v).__name__} value in Swift")


# ------------------------------------------------------------------------------- the exporter
class _Exporter:
    def __init__(self, g):
        self.g = g
        self.lines: list = []
        self.var_of: dict = {}  # op index -> Swift identifier
        self.used: set = set()
        self.descriptors: dict = {}  # (class, field values) -> Swift variable

    def ident(self, op: Operation, suffix: str = "") -> str:
        base = re.sub(r"[^A-Za-z0-9_]+", "_", op.name + suffix).strip("_") or "op"
        if base[0].isdigit():
            base = "t_" + base
        name = base
        if name in _SWIFT_KEYWORDS or name in self.used:
            name = f"{base}_{op.index}"
        k = 2
        while name in self.used:
            name = f"{base}_{op.index}_{k}"
            k += 1
        self.used.add(name)
        return name

    def tensor(self, t: Tensor) -> str:
        v = self.var_of[t.operation.index]
        return f"{v}[{t.index}]" if len(t.operation.outputs) > 1 or t.operation.type in _LIST_RESULT_OPS else v

    def where(self, op: Operation) -> str:
        return f"{op.type} op {op.name!r}"

    # memory ops and other ops whose Swift arguments differ from ours
    def placeholder(self, op):
        a = op.attrs
        return (f"graph.placeholder(shape: {_numbers(a['shape'])}, "
                f"dataType: {swift_dtype(a['dtype'], self.where(op))}, name: {swift_string(op.name)})")

    def constant(self, op):
        a = op.attrs
        arr = np.asarray(a["value"])
        dt = swift_dtype(a["dtype"], self.where(op))
        if arr.dtype.kind == "c":
            return self.complex_constant(op, arr, dt)
        exact_double = arr.size and (arr.dtype.kind in "fb" or np.all(np.abs(arr.astype(np.float64)) < 2 ** 53))
        if arr.size and exact_double and np.all((arr == arr.flat[0]) | (np.isnan(arr) if arr.dtype.kind == "f" else False)):
            x = swift_double(float(arr.flat[0]))
            if arr.ndim == 0:
                return f"graph.constant({x}, dataType: {dt})"
            return f"graph.constant({x}, shape: {_numbers(arr.shape)}, dataType: {dt})"
        if a["dtype"].name in ("int4", "uint4"):
            return f"graph.constant({_data(pack_nibbles(arr))}, shape: {_numbers(arr.shape)}, dataType: {dt})"
        return f"graph.constant({_data(arr)}, shape: {_numbers(arr.shape)}, dataType: {dt})"

    def complex_constant(self, op, arr: np.ndarray, dt: str) -> str:
        """complexConstant(realPart:imaginaryPart:shape:dataType:) for one value, else the bytes:
        (real, imaginary) pairs of float32 (complex64) or float16 (complex32)."""
        if arr.size and np.all(arr == arr.flat[0]):
            z = complex(arr.flat[0])
            return (f"graph.complexConstant(realPart: {swift_double(z.real)}, imaginaryPart: {swift_double(z.imag)}, "
                    f"shape: {_numbers(arr.shape)}, dataType: {dt})")
        pairs = np.stack([arr.real, arr.imag], axis=-1)
        if op.attrs["dtype"].name == "complex32":
            pairs = pairs.astype(np.float16)
        return f"graph.constant({_data(pairs)}, shape: {_numbers(arr.shape)}, dataType: {dt})"

    def variable(self, op):
        arr = self.g.variable_store.values.get(op, op.attrs["initial_value"])
        return (f"graph.variable(with: {_data(np.asarray(arr))}, shape: {_numbers(op.attrs['shape'])}, "
                f"dataType: {swift_dtype(op.attrs['dtype'], self.where(op))}, name: {swift_string(op.name)})")

    def split_sizes(self, op):
        """split given a list of sizes: MPSGraph's ``split(_:splitSizes:axis:name:)``."""
        a = op.attrs
        axis = normalize_axes(a["axis"], len(op.inputs[0].shape))[0]
        return (f"graph.split({self.tensor(op.inputs[0])}, splitSizes: {_numbers(a['split_sizes'])}, "
                f"axis: {axis}, name: {swift_string(op.name)})")

    def slice_gradient(self, op):
        a = op.attrs
        shape = list(a["input_shape"])
        r = len(shape)
        (d,) = normalize_axes(a["dimension"], r)
        start = a["start"] + shape[d] if a["start"] < 0 else a["start"]
        starts, ends = [0] * r, list(shape)
        starts[d], ends[d] = start, start + a["length"]
        shape_t = f"graph.constant({_data(np.asarray(shape, np.int32))}, shape: [{r}], dataType: .int32)"
        return (f"graph.sliceGradientTensor({self.tensor(op.inputs[0])}, fwdInShapeTensor: {shape_t}, "
                f"starts: {_numbers(starts)}, ends: {_numbers(ends)}, strides: {_numbers([1] * r)}, "
                f"name: {swift_string(op.name)})")

    def slice_gradient_tensor(self, op):
        """MPSGraph takes the forward input's shape as an int32 tensor (``fwdInShapeTensor``)."""
        a = op.attrs
        shape = list(a["input_shape"])
        shape_t = f"graph.constant({_data(np.asarray(shape, np.int32))}, shape: [{len(shape)}], dataType: .int32)"
        return (f"graph.sliceGradientTensor({self.tensor(op.inputs[0])}, fwdInShapeTensor: {shape_t}, "
                f"starts: {_numbers(a['starts'])}, ends: {_numbers(a['ends'])}, strides: {_numbers(a['strides'])}, "
                f"startMask: {a['start_mask']}, endMask: {a['end_mask']}, squeezeMask: {a['squeeze_mask']}, "
                f"name: {swift_string(op.name)})")

    def along_axis(self, op):
        """gatherAlongAxis / scatterAlongAxis take the axis first (``_ axis: Int``), then the tensors."""
        t = self.tensor
        head = f"graph.{parse_signature(op.opdef.swift)[0]}({op.attrs['axis']}, "
        if op.type == "gather_along_axis":
            return f"{head}updates: {t(op.inputs[0])}, indices: {t(op.inputs[1])}, name: {swift_string(op.name)})"
        return (f"{head}data: {t(op.inputs[2])}, updates: {t(op.inputs[0])}, indices: {t(op.inputs[1])}, "
                f"mode: {_enum(op.attrs['mode'])}, name: {swift_string(op.name)})")

    def resize(self, op):
        """The resize method for the op's form: ``resizeNearest`` for a rounding mode other than
        MPSGraph's default, the ``sizeTensor:`` forms without a layout, the scale-offset forms
        with scale and offset tensors."""
        a = {"nearest_rounding_mode": None, "scale": None, "offset": None, **op.attrs}
        grad = op.type == "resize_gradient"
        t = self.tensor
        lay, scale, rounding = a["layout"], a["scale"], a["nearest_rounding_mode"]
        nearest = rounding is not None and rounding.value != 0
        head = f"withGradientTensor: {t(op.inputs[0])}, input: {t(op.inputs[1])}" if grad else t(op.inputs[0])
        if not grad:
            head += f", sizeTensor: {self._int_tensor(a['size'])}" if scale is not None or lay is None or nearest \
                else f", size: {_numbers(a['size'])}"
        if scale is not None:
            def floats(v) -> str:
                return f"graph.constant({_data(np.asarray(v, np.float32))}, shape: [{len(v)}], dataType: .float32)"
            if lay is not None:
                so = floats(list(scale) + list(a["offset"]))
                place = f"scaleOffsetTensor: {so}"
            elif grad:
                place = f"scale: {floats(scale)}, offsetTensor: {floats(a['offset'])}"
            else:
                place = f"scaleTensor: {floats(scale)}, {'offsetTensor' if nearest else 'offsetTenor'}: " \
                        f"{floats(a['offset'])}"
        else:
            if grad and lay is None:
                raise SwiftExportError(f"{self.where(op)}: MPSGraph has no resize gradient without a layout "
                                       "other than the scale-offset form; give the op scale and offset")
            place = f"centerResult: {_scalar_value(a['center_result'], '')}, " \
                    f"alignCorners: {_scalar_value(a['align_corners'], '')}"
        method = "resizeNearest" if nearest else "resize"
        mode = f"nearestRoundingMode: {_enum(rounding)}" if nearest else f"mode: {_enum(a['mode'])}"
        if nearest and scale is None:
            parts = [head, mode, place]
        else:
            parts = [head, place, mode] if scale is not None else [head, mode, place]
        if lay is not None:
            parts.append(f"layout: {_enum(lay)}")
        return f"graph.{method}({', '.join(parts)}, name: {swift_string(op.name)})"

    def sample_grid(self, op):
        """The samplingMode form, or the nearestRoundingMode form for a rounding other than the default."""
        a = op.attrs
        t = self.tensor
        rounding = a.get("nearest_rounding_mode")
        how = f"samplingMode: {_enum(a['sampling_mode'])}" if rounding is None or rounding.value == 0 else \
            f"nearestRoundingMode: {_enum(rounding)}"
        return (f"graph.sampleGrid(withSourceTensor: {t(op.inputs[0])}, coordinateTensor: {t(op.inputs[1])}, "
                f"layout: {_enum(a['layout'])}, normalizeCoordinates: {_scalar_value(a['normalize_coordinates'], '')}, "
                f"relativeCoordinates: {_scalar_value(a['relative_coordinates'], '')}, "
                f"alignCorners: {_scalar_value(a['align_corners'], '')}, paddingMode: {_enum(a['padding_mode'])}, "
                f"{how}, constantValue: {_scalar_value(float(a['constant_value']), '')}, "
                f"name: {swift_string(op.name)})")

    def _int_tensor(self, values) -> str:
        v = np.asarray(list(values), np.int32)
        return f"graph.constant({_data(v)}, shape: [{len(v)}], dataType: .int32)"
    def random_with_state(self, op):
        """randomTensor / randomUniformTensor with stateTensor: the shape (and descriptor) come
        before the state, which is minigraph's one input."""
        head = f"graph.{parse_signature(op.opdef.swift)[0]}(withShape: {_numbers(op.attrs['shape'])}, "
        if op.type == "random_tensor_with_state":
            head += f"descriptor: {self.descriptor(op, op.attrs['descriptor'])}, "
        return f"{head}stateTensor: {self.tensor(op.inputs[0])}, name: {swift_string(op.name)})"

    def sparse_tensor(self, op):
        """sparseTensor takes the storage type first, then the tensor list."""
        a = op.attrs
        tensors = ", ".join(self.tensor(t) for t in op.inputs)
        return (f"graph.sparseTensor(sparseTensorWithType: {_enum(a['sparse_storage_type'])}, tensors: [{tensors}], "
                f"shape: [{', '.join(str(d) for d in a['shape'])}], dataType: {swift_dtype(a['dtype'], self.where(op))}, "
                f"name: {swift_string(op.name)})")

    def attr_value(self, op: Operation, label: str, attr: str) -> str:
        v = op.attrs.get(attr)
        where = f"{self.where(op)} attribute {attr!r}"
        rank = len(op.inputs[0].shape) if op.inputs else 0
        if attr == "axes":
            if v is None:
                if op.type == "squeeze":
                    v = tuple(i for i, dim in enumerate(op.inputs[0].shape) if dim == 1)
                else:
                    v = tuple(range(rank))
            r = rank + len(_as_tuple(v)) if op.type == "expand_dims" else rank
            return _numbers(normalize_axes(v, r, "axes"))
        if op.type in _RESULT_AXIS_OPS and label == "axis" and isinstance(v, (int, np.integer)):
            return str(int(v))
        if label in _AXIS_LABELS and isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            return str(normalize_axes(int(v), rank, label)[0]) if rank else str(int(v))
        if attr in ("seed", "counter_low", "counter_high", "key") and op.opdef.family == "random":
            # a 64-bit pattern as Swift's Int
            seed = int(v or 0)
            return str(seed - (1 << 64) if seed >= 1 << 63 else seed)
        if attr == "reduction" and isinstance(v, str):
            if v not in LOSS_REDUCTION:
                raise SwiftExportError(f"{where}: {v!r} has no MPSGraphLossReductionType")
            return LOSS_REDUCTION[v]
        if dataclasses.is_dataclass(v) and not isinstance(v, (type, DataType)):
            return self.descriptor(op, v)
        if v is None:
            raise SwiftExportError(f"{where}: None has no Swift equivalent for label {label!r}")
        return _scalar_value(v, where)

    def descriptor(self, op: Operation, d) -> str:
        """A descriptor variable with every field set; equal descriptors share one (MPSGraph ops
        copy their descriptor when created, so sharing is safe)."""
        cls = "MPSGraph" + type(d).__name__
        skip = _unset_return_indices(d)
        values = [(camel(f.name), _scalar_value(getattr(d, f.name), f"{self.where(op)} descriptor.{f.name}"))
                  for f in dataclasses.fields(d) if f.name not in skip]
        key = (cls, tuple(values))
        var = self.descriptors.get(key)
        if var is not None and not op.control_dependencies:
            return var
        var = self.ident(op, "_descriptor")
        if cls == "MPSGraphRandomOpDescriptor":  # its initialiser takes the distribution and data type
            given = dict(values)
            self.lines.append(f"let {var} = {cls}(distribution: {given.pop('distribution')}, "
                              f"dataType: {given.pop('dtype')})!")
            values = list(given.items())
        else:
            self.lines.append(f"let {var} = {cls}()")
        self.lines += [f"{var}.{field} = {value}" for field, value in values]
        if not op.control_dependencies:  # one built inside a control-dependency block stays there
            self.descriptors[key] = var
        return var

    def call(self, op: Operation) -> str:
        opdef = OPS[op.type]
        if op.type == "split" and op.attrs.get("split_sizes") is not None:
            return self.split_sizes(op)
        if op.type in SPECIAL:
            return getattr(self, SPECIAL[op.type])(op)
        if op.type == "adam" and "beta1_power" in op.attrs.get("nil_inputs", ()):
            return self.adam_current_rate(op)
        method, _ = parse_signature(opdef.swift)
        args = []
        for label, kind, key in argument_plan(opdef, list(opdef.attrs) + list(op.attrs)):
            if kind == "input" and key != "*" and opdef.inputs[key] in op.attrs.get("nil_inputs", ()):
                val = "nil"  # an optional operand given as None (MPSGraph's nil)
            elif kind == "input":
                val = ("[" + ", ".join(self.tensor(t) for t in op.inputs) + "]") if key == "*" \
                    else self.tensor(op.inputs[key])
            elif kind == "name":
                val = swift_string(op.name)
            else:
                val = self.attr_value(op, label, key)
            args.append(val if label == "_" else f"{label}: {val}")
        return f"graph.{method}({', '.join(args)})"

    def emit(self, op: Operation) -> None:
        for t in op.outputs:
            swift_dtype(t.dtype, self.where(op))
        start = len(self.lines)
        expr = self.call(op)
        var = self.ident(op)
        self.var_of[op.index] = var
        note = " // stop_gradient: an identity in MPSGraph" if op.type == "stop_gradient" else ""
        if _refused_mode(op) is not None:
            note = f" // Warning: MPSGraph may refuse paddingMode {_refused_mode(op)} (\"Unsupported paddingMode\")"
        if not op.control_dependencies:
            self.lines.append(f"let {var} = {expr}{note}")
            return
        deps = "[" + ", ".join(self._op_ref(d) for d in op.control_dependencies) + "]"
        block = self.lines[start:]  # descriptors built for this op go inside the block too
        del self.lines[start:]
        if len(op.outputs) == 1:
            self.lines.append(f"let {var} = graph.controlDependency(with: {deps}, dependentBlock: {{")
            self.lines += ["    " + x for x in block]
            self.lines.append(f"    return [{expr}]{note}")
            self.lines.append(f"}}, name: {swift_string(op.name + '/control_dependency')})[0]")
        else:
            typ = "MPSGraphOperation" if not op.outputs else "[MPSGraphTensor]"
            self.lines.append(f"var {var}: {typ}!")
            self.lines.append(f"_ = graph.controlDependency(with: {deps}, dependentBlock: {{")
            self.lines += ["    " + x for x in block]
            self.lines.append(f"    {var} = {expr}{note}")
            self.lines.append("    return []")
            self.lines.append(f"}}, name: {swift_string(op.name + '/control_dependency')})")

    # control flow: each block a Swift closure, built before the op that takes it
    def _closure(self, op: Operation, block, params: str, ret: str, names: list) -> str:
        """A ``let`` closure holding the block's ops (its arguments named by ``names``); its name."""
        var = self.ident(op, f"_{block.name}")
        for a, expr in zip(block.arguments, names):
            self.var_of[a.operation.index] = expr
        saved, self.lines = self.lines, []
        for o in block.ops:
            if o.type != "block_argument":
                self.emit(o)
        body, self.lines = self.lines, saved
        results = [self.tensor(t) for t in block.results]
        if op.type == "while_loop" and block.name == "before":
            body += [f"{names[-1]}.addObjects(from: [{', '.join(results[1:])}])", f"return {results[0]}"]
        else:
            body.append(f"return [{', '.join(results)}]")
        self.lines.append(f"let {var} = {{ ({params}) -> {ret} in")
        self.lines += ["    " + x for x in body]
        self.lines.append("}")
        return var

    def if_then_else(self, op):
        blocks = [self._closure(op, b, "", "[MPSGraphTensor]", []) for b in op.blocks]
        other = blocks[1] if len(blocks) > 1 else "nil"
        return (f"graph.if({self.tensor(op.inputs[0])}, then: {blocks[0]}, else: {other}, "
                f"name: {swift_string(op.name)})")

    def while_loop(self, op):
        n = int(op.attrs["num_inputs"])
        ins, res, args = (self.ident(op, s) for s in ("_inputs", "_results", "_args"))
        before = self._closure(op, op.blocks[0], f"{ins}: [MPSGraphTensor], {res}: NSMutableArray", "MPSGraphTensor",
                               [f"{ins}[{i}]" for i in range(n)] + [res])
        after = self._closure(op, op.blocks[1], f"{args}: [MPSGraphTensor]", "[MPSGraphTensor]",
                              [f"{args}[{i}]" for i in range(len(op.blocks[1].arguments))])
        inits = "[" + ", ".join(self.tensor(t) for t in op.inputs[:n]) + "]"
        return f"graph.while(initialInputs: {inits}, before: {before}, after: {after}, name: {swift_string(op.name)})"

    def for_loop(self, op):
        nb = 1 if op.attrs["form"] == "count" else 3
        na = int(op.attrs["num_arguments"])
        index, args = self.ident(op, "_index"), self.ident(op, "_args")
        body = self._closure(op, op.blocks[0], f"{index}: MPSGraphTensor, {args}: [MPSGraphTensor]", "[MPSGraphTensor]",
                             [index] + [f"{args}[{i}]" for i in range(na)])
        inits = "[" + ", ".join(self.tensor(t) for t in op.inputs[nb:nb + na]) + "]"
        t = self.tensor
        head = f"numberOfIterations: {t(op.inputs[0])}" if nb == 1 else \
            f"lowerBound: {t(op.inputs[0])}, upperBound: {t(op.inputs[1])}, step: {t(op.inputs[2])}"
        return f"graph.for({head}, initialBodyArguments: {inits}, body: {body}, name: {swift_string(op.name)})"

    def adam_current_rate(self, op):
        """adam with both powers None: MPSGraph's adam(currentLearningRate:...) (no beta powers)."""
        t = self.tensor
        vmax = "nil" if "maximum_velocity" in op.attrs["nil_inputs"] else t(op.inputs[9])
        return (f"graph.adam(currentLearningRate: {t(op.inputs[0])}, beta1: {t(op.inputs[1])}, "
                f"beta2: {t(op.inputs[2])}, epsilon: {t(op.inputs[3])}, values: {t(op.inputs[6])}, "
                f"momentum: {t(op.inputs[7])}, velocity: {t(op.inputs[8])}, maximumVelocity: {vmax}, "
                f"gradient: {t(op.inputs[10])}, name: {swift_string(op.name)})")

    def call_op(self, op):
        types = ", ".join(f"MPSGraphShapedType(shape: {_numbers(s)}, dataType: {swift_dtype(d, self.where(op))})"
                          for s, d in op.attrs["output_types"])
        ins = "[" + ", ".join(self.tensor(t) for t in op.inputs) + "]"
        return (f"graph.call(symbolName: {swift_string(op.attrs['symbol_name'])}, inputTensors: {ins}, "
                f"outputTypes: [{types}], name: {swift_string(op.name)})")

    def _op_ref(self, op: Operation) -> str:
        v = self.var_of[op.index]
        if not op.outputs:
            return v
        return f"{v}[0].operation" if len(op.outputs) > 1 else f"{v}.operation"


SPECIAL = {"placeholder": "placeholder", "constant": "constant", "variable": "variable",
           "resize": "resize", "resize_gradient": "resize", "sample_grid": "sample_grid",
           "slice_gradient": "slice_gradient", "slice_gradient_tensor": "slice_gradient_tensor",
           "gather_along_axis": "along_axis",
           "scatter_along_axis": "along_axis", "if_then_else": "if_then_else", "while_loop": "while_loop",
           "for_loop": "for_loop", "call": "call_op", "block_argument": "block_argument",
           "random_tensor_with_state": "random_with_state", "random_uniform_tensor_with_state": "random_with_state",
           "sparse_tensor": "sparse_tensor"}
# Padding styles newer than MPSGraph itself (macOS 11 / iOS 14), per Apple's documentation; an op's
# first OS versions are its OpDef's ``since``
PADDING_NEEDS = {"ONNX_SAME_LOWER": ("13.0", "16.0")}
# pad_tensor's modes newer than padTensor itself (MPSGraphCore.h's availability of each case)
PADDING_MODE_NEEDS = {"CLAMP_TO_EDGE": ("11.1", "15.0"), "ZERO": ("12.0", "15.0"), "PERIODIC": ("12.0", "15.0"),
                      "ANTI_PERIODIC": ("12.0", "15.0")}
# pad_tensor's modes a third party measured MPSGraph refusing on a macOS release ("Unsupported
# paddingMode"): minigraph computes them; the export warns that a Mac may not
# MPSGraphResizeNearestRoundingMode's cases newer than the rounding-mode methods (macOS 13.0)
ROUNDING_NEEDS = {"ROUND_TO_EVEN": ("13.2", "16.3"), "ROUND_TO_ODD": ("13.2", "16.3")}
REFUSED_PADDING_MODES = ("PERIODIC", "ANTI_PERIODIC")
FIRST = ("11.0", "14.0")


def _refused_mode(op: Operation) -> Optional[str]:
    """The Swift name of ``op``'s padding mode where MPSGraph has been seen refusing it, else None."""
    mode = op.attrs.get("padding_mode")
    return _enum(mode) if isinstance(mode, enum.Enum) and mode.name in REFUSED_PADDING_MODES else None


def _warnings(g) -> list:
    """Header lines for what the graph uses that MPSGraph has been seen refusing at run time."""
    refused = [(op.name, m) for op in g.operations if (m := _refused_mode(op)) is not None]
    if not refused:
        return []
    names = ", ".join(f"{n!r} ({m})" for n, m in refused)
    return ["// Warning: paddingMode .periodic and .antiPeriodic are refused by MPSGraph on at least one macOS",
            f"// release (\"Unsupported paddingMode\", measured by a third party); this graph uses them in {names}."]


def _as_tuple(v) -> tuple:
    return (v,) if isinstance(v, (int, np.integer)) else tuple(v)


def _default_targets(g) -> tuple:
    consumed = {t.operation.index for op in g.operations for t in op.inputs}
    consumed |= {d.index for op in g.operations for d in op.control_dependencies}
    tensors, ops = [], []
    for op in g.operations:
        if op.index in consumed or is_leaf(op) or op.block is not None:
            continue
        if op.outputs:
            tensors.extend(op.outputs)
        else:
            ops.append(op)
    return tensors, ops


def _availability(g) -> list:
    """A header line naming the newest OS an op of the graph needs, where one needs more than MPSGraph's first."""
    used = {(OPS[op.type].since, parse_signature(OPS[op.type].swift)[0]) for op in g.operations
            if OPS[op.type].since != FIRST}
    for op in g.operations:
        style = getattr(op.attrs.get("descriptor"), "padding_style", None)
        if style is not None and style.name in PADDING_NEEDS:
            used.add((PADDING_NEEDS[style.name], f"paddingStyle .{style.name}"))
        mode = op.attrs.get("padding_mode")
        if isinstance(mode, enum.Enum) and mode.name in PADDING_MODE_NEEDS:
            used.add((PADDING_MODE_NEEDS[mode.name], f"paddingMode {_enum(mode)}"))
        rounding = op.attrs.get("nearest_rounding_mode")
        if isinstance(rounding, enum.Enum) and rounding.name in ROUNDING_NEEDS:
            used.add((ROUNDING_NEEDS[rounding.name], f"nearestRoundingMode {_enum(rounding)}"))
        four = sorted({SWIFT_DTYPES[t.dtype.name] for t in op.outputs if t.dtype.name in ("int4", "uint4")})
        if four:  # MPSDataType.int4 / .uInt4
            used.add((("15.0", "18.0"), f"dataType {', '.join(four)}"))
        if op.type in ("resize", "resize_gradient"):
            if op.attrs.get("layout", 0) is None:
                used.add((("14.0", "17.0"), "resize without a layout"))
            elif op.attrs.get("scale") is not None:
                used.add((("13.0", "16.0"), "resize scaleOffsetTensor"))
            elif isinstance(rounding, enum.Enum) and rounding.value != 0:
                used.add((("13.0", "16.0"), "resizeNearest"))
    if not used:
        return []
    macos, ios = (max((v[i] for v, _ in used), key=_version) for i in (0, 1))
    return [f"// Needs macOS {macos} / iOS {ios} or later ({', '.join(sorted({m for _, m in used}))})."]


def _version(v: str) -> tuple:
    return tuple(int(p) for p in v.split("."))


def to_swift(g, feeds: Optional[Mapping[Tensor, Any]] = None, target_tensors: Optional[Sequence[Tensor]] = None,
             target_operations: Optional[Sequence[Operation]] = None) -> str:
    """Swift source that builds this graph with MPSGraph and runs it once.

    ``feeds`` (optional ``{placeholder: array}``) are embedded as the run's data; without them
    each placeholder gets zero bytes (and size 1 for dynamic dimensions). Targets default to the
    tensors nothing consumes, and the assign operations nothing depends on. Variables are written
    with their current values. Raises ``SwiftExportError`` for what MPSGraph cannot express.

    Args:
        feeds: Optional ``{placeholder: array}`` embedded as the run's data.
        target_tensors: The tensors the Swift run returns (default: those nothing consumes).
        target_operations: The operations it runs (default: assigns nothing depends on).
    """
    if target_tensors is None and target_operations is None:
        target_tensors, target_operations = _default_targets(g)
    target_tensors = list(target_tensors or [])
    target_operations = list(target_operations or [])
    feeds = dict(feeds or {})
    ex = _Exporter(g)
    head = [f"// Generated by minigraph {__version__}: builds this graph with Apple's MPSGraph and runs it once.",
            f"// {len(g.operations)} ops. Tensor data is little-endian, row-major; constants and",
            "// variables are embedded as base64 Data.",
            *_availability(g),
            *_warnings(g),
            "import Foundation",
            "import Metal",
            "import MetalPerformanceShadersGraph",
            "",
            "let graph = MPSGraph()",
            ""]
    for op in g.operations:
        if op.block is not None:  # emitted inside its control-flow op's closure
            continue
        try:
            ex.emit(op)
        except SwiftExportError:
            raise
        except (DTypeError, MiniGraphError) as e:
            raise SwiftExportError(f"{op.type} op {op.name!r}: {e}") from None
    tail = ["", "// Run it once. Replace the feed bytes with real data (little-endian, row-major).",
            "let device = MPSGraphDevice(mtlDevice: MTLCreateSystemDefaultDevice()!)"]
    feed_items = []
    for p in g.placeholders:
        if feeds and p not in feeds:
            continue
        if p in feeds:
            arr = np.asarray(feeds[p])
            if arr.dtype != p.dtype.np_dtype:
                raise SwiftExportError(f"feed for {p.name!r}: dtype {arr.dtype} is not the placeholder's {p.dtype.name}")
            shape, data = arr.shape, _data(arr)
        else:
            shape = tuple(1 if d == -1 else d for d in p.shape)
            n = int(np.prod(shape, dtype=np.int64))
            data = f"Data(count: {(n + 1) // 2 if p.dtype.name in ('int4', 'uint4') else p.dtype.itemsize * n})"
        v = ex.var_of[p.operation.index]
        tail.append(f"let {v}_data = MPSGraphTensorData(device: device, data: {data}, "
                    f"shape: {_numbers(shape)}, dataType: {swift_dtype(p.dtype, repr(p.name))})")
        feed_items.append(f"{v}: {v}_data")
    tail.append("let feeds: [MPSGraphTensor: MPSGraphTensorData] = "
                + ("[" + ", ".join(feed_items) + "]" if feed_items else "[:]"))
    tt = "[" + ", ".join(ex.tensor(t) for t in target_tensors) + "]"
    to = "[" + ", ".join(ex._op_ref(o) for o in target_operations) + "]" if target_operations else "nil"
    tail.append(f"let results = graph.run(feeds: feeds, targetTensors: {tt}, targetOperations: {to})")
    for t in target_tensors:
        tail.append(f"print({swift_string(t.name)}, results[{ex.tensor(t)}]!.shape)")
    return "\n".join(head + ex.lines + tail) + "\n"
