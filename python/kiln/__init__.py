"""kiln: a tensor-expression compiler.

Describe an operator with ``kiln.te``, transform its loops with ``kiln.tir.Schedule``, and run
it with ``kiln.tir.interpret`` (the reference interpreter) or compile it with ``kiln.build``.
"""
from . import error
from .error import KilnError, KilnTypeError, KilnValueError, KilnIndexError, InternalError
from . import ir
from .ir import IRModule
from . import tir
from . import te  # noqa: F401
from . import arith  # noqa: F401
from .error import KilnRuntimeError
from . import runtime
from . import nd
from .runtime import Device, device, cpu, cuda, opencl
from .driver import build
from . import target
from .error import KilnWarning
from . import topi

__all__ = ["error", "ir", "tir", "te", "arith", "IRModule", "KilnError", "KilnTypeError",
           "KilnValueError", "KilnIndexError", "InternalError"]
__all__ += ["KilnRuntimeError", "runtime", "nd", "Device", "device", "cpu", "cuda", "opencl",
            "build"]
__all__ += ["target", "KilnWarning", "topi"]
