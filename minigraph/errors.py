"""One exception hierarchy. Every user-reachable failure raises a MiniGraphError subclass.

Each subclass also derives from the builtin a Python user would expect (ValueError,
TypeError, KeyError, RuntimeError), so ``except ValueError`` keeps working.
"""


class MiniGraphError(Exception):
    """Base of every error minigraph raises on purpose (where MPSGraph usually aborts the process)."""


class ShapeError(MiniGraphError, ValueError):
    """Shapes, ranks or axes that do not fit the op (an MLIR verifier failure in MPSGraph)."""


class DTypeError(MiniGraphError, TypeError):
    """Data types that do not fit the op (no implicit promotion, as in MPSGraph)."""


class DescriptorError(MiniGraphError, ValueError):
    """A convolution or pooling descriptor with invalid fields (an ``MPSGraph…OpDescriptor``)."""


class FeedError(MiniGraphError, ValueError):
    """A feed that is missing, of the wrong shape/dtype, or not a placeholder (MPSGraph's ``feeds:``)."""


class TargetError(MiniGraphError, ValueError):
    """A target tensor or operation that cannot be run (MPSGraph's ``targetTensors:``/``targetOperations:``)."""


class GraphMismatchError(MiniGraphError, ValueError):
    """A tensor or operation used with a graph it does not belong to (an MPSGraphTensor belongs to one MPSGraph)."""


class NameLookupError(MiniGraphError, KeyError):
    """A name that does not exist in the graph (the message lists close matches); MPSGraph has no lookup by name."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class NotDifferentiableError(MiniGraphError, TypeError):
    """Asked for a gradient through an op that has no gradient rule (in MPSGraph's ``gradients(of:with:name:)``)."""


class BackendUnavailableError(MiniGraphError, RuntimeError):
    """An unknown backend, or one that cannot run on this machine (MPSGraph needs Metal on Apple hardware)."""


class KernelMissingError(MiniGraphError, RuntimeError):
    """A backend has no kernel for an op (raised at compile time, never a silent fallback, unlike MPSGraph's CPU/ANE placement)."""


class ExecutionError(MiniGraphError, RuntimeError):
    """A kernel failed while running; variables are left unchanged (a minigraph guarantee, not an MPSGraph one)."""


class PlanError(ExecutionError):
    """A plan that breaks the step contract (``Plan.check``): a slot read before it is written,
    written twice, read after it was freed, a freed target, a fused program out of order. A
    compiler bug, caught before any backend sees the plan (not in MPSGraph)."""


class SerializationError(MiniGraphError, ValueError):
    """A saved graph file that is corrupt, truncated, hostile or of an unknown version (cf. MPSGraph's ``.mpsgraphpackage``)."""


class ResourceLimitError(MiniGraphError, ValueError):
    """A declared shape too large to allocate (caught at build/compile time; a minigraph check, not an MPSGraph one).

    A ValueError, not a MemoryError: nothing failed to allocate, the shape itself is out of range
    (as NumPy raises ValueError for an array "too big" to exist).
    """


# Errors that fit two builtins: each also derives from the second one a Python user may expect,
# so ``except TypeError`` / ``except KeyError`` / ``except ValueError`` all keep working.
class FeedDTypeError(FeedError, TypeError):
    """A feed whose dtype differs from its placeholder's (or a feed keyed by something not a tensor); no implicit cast, as everywhere in MPSGraph."""


class MissingFeedError(FeedError, KeyError):
    """A placeholder the targets need, with no feed for it (MPSGraph requires a feed for every such placeholder)."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class UnknownDTypeError(DTypeError, ValueError):
    """A dtype name or object that is not one of minigraph's data types (MPSGraph's ``MPSDataType`` cases)."""


class UnknownBackendError(BackendUnavailableError, ValueError):
    """A backend name that no backend is registered under (in MPSGraph terms, an unknown device)."""


class AxisError(ShapeError, IndexError):
    """An axis outside ``-rank..rank-1`` (like NumPy's AxisError, a ValueError and an IndexError; an MLIR verifier failure in MPSGraph)."""


class AmbiguousNameError(NameLookupError, ValueError):
    """A name the user gave to several ops; look them up by their unique names (MPSGraph allows duplicate names)."""


class SymbolicValueError(MiniGraphError, TypeError):
    """Misuse of a symbolic tensor as if it held a value (``if t:``, ``for x in t``); an MPSGraphTensor has no value either."""


class SwiftExportError(MiniGraphError, ValueError):
    """The graph holds something MPSGraph cannot express (e.g. float64, an unmapped op)."""


class GraphvizNotFoundError(MiniGraphError, RuntimeError):
    """Rendering needs Graphviz's ``dot`` program, and it is not installed (rendering is not in MPSGraph)."""


class RenderError(MiniGraphError, RuntimeError):
    """Graphviz ran but could not render (the message carries its stderr); rendering is not in MPSGraph."""


class UnsupportedDTypeError(KernelMissingError, DTypeError):
    """The webgpu backend has no kernel for this dtype (both a KernelMissingError and a DTypeError); MPSGraph's dtypes are those of Metal."""


class RegistrationError(MiniGraphError, ValueError):
    """An op or kernel declared twice, or a kernel registered for an op that is not declared (MPSGraph has a fixed op set)."""


class ModelImportError(MiniGraphError, ValueError):
    """A model file that cannot be imported (``mg.from_onnx``; MPSGraph reads no ONNX): malformed,
    an operator or opset outside the supported set, a missing initializer, shapes that contradict its ops."""
