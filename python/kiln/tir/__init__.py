"""TensorIR: expressions, statements, buffers and functions (the IR node classes), the
reference interpreter (interpret), schedules (Schedule and its handles, traces, index maps and
tensor intrinsics) and lowering (lower, and the passes one at a time in kiln.tir.transform)."""
from .._kiln import ir as _ir

# Expressions
PrimExpr = _ir.PrimExpr
IntImm = _ir.IntImm
FloatImm = _ir.FloatImm
StringImm = _ir.StringImm
Var = _ir.Var
SizeVar = _ir.SizeVar
Add, Sub, Mul, Div, Mod = _ir.Add, _ir.Sub, _ir.Mul, _ir.Div, _ir.Mod
FloorDiv, FloorMod, Min, Max = _ir.FloorDiv, _ir.FloorMod, _ir.Min, _ir.Max
EQ, NE, LT, LE, GT, GE = _ir.EQ, _ir.NE, _ir.LT, _ir.LE, _ir.GT, _ir.GE
And, Or, Not = _ir.And, _ir.Or, _ir.Not
Select, Cast, Call, Ramp, Broadcast, Let = _ir.Select, _ir.Cast, _ir.Call, _ir.Ramp, _ir.Broadcast, _ir.Let
BufferLoad, Reduce, CommReducer = _ir.BufferLoad, _ir.Reduce, _ir.CommReducer
Range, IterVar = _ir.Range, _ir.IterVar

# Statements
Stmt = _ir.Stmt
LetStmt, AssertStmt, BufferStore, Allocate = _ir.LetStmt, _ir.AssertStmt, _ir.BufferStore, _ir.Allocate
For, SeqStmt, IfThenElse, Evaluate = _ir.For, _ir.SeqStmt, _ir.IfThenElse, _ir.Evaluate
Block, BlockRealize, BufferRegion = _ir.Block, _ir.BlockRealize, _ir.BufferRegion

# Calls of C functions by name (an extern library: kiln.runtime.load_library), and constants
# of a given dtype for their arguments (as tvm.tir.const).
call_extern, call_pure_extern = _ir.call_extern, _ir.call_pure_extern
# A condition marked as usually true (loop_partition splits loops where it is decided).
likely = _ir.likely
from .._kiln import te as _te  # noqa: E402

const = _te.const

# Buffers and functions
Buffer = _ir.Buffer
decl_buffer = _ir.decl_buffer
PrimFunc = _ir.PrimFunc

# The reference interpreter: runs a PrimFunc on NumPy arrays without a code generator.
from .._kiln import tir as _tir_tools  # noqa: E402

interpret = _tir_tools.interpret

# Scheduling: primitives that transform loops and blocks, recorded in replayable traces.
from .schedule import Schedule, Trace, BlockRV, LoopRV, ExprRV, ScheduleError  # noqa: E402,F401
from .schedule import IndexMap  # noqa: E402,F401
from .schedule import TensorIntrin  # noqa: E402,F401
from . import tensor_intrin  # noqa: E402,F401

# Lowering: the pipeline from a scheduled PrimFunc to the flat loop program, and its passes.
from . import transform  # noqa: E402,F401


def lower(func, dump_ir=None, verify=None, target=None):
    """Lowers a scheduled function to the flat loop program that code generators take: no
    blocks, one-dimensional buffers, vector loops as vector code. The passes, in order, are in
    tir/pipeline.cc; kiln.tir.transform runs them one at a time.

    With a GPU target, the GPU passes run too: cross-thread reductions through shared memory,
    barriers (storage_sync) where threads pass values through shared memory, and the split of
    each loop nest bound to blocks and threads into a device kernel that the function, now its
    host side, launches (device_launch). The result is what kiln.build compiles for that target
    before the packed entry point; kiln.tir.interpret runs it with GPU semantics (thread
    blocks, barriers, shared memory per block), which makes it the oracle of GPU lowering.

    Args:
        func (PrimFunc, IRModule or tir.Schedule): what to lower; a Schedule lowers its module.
        dump_ir (str or os.PathLike, optional): a directory that receives the IR after each
            pass (NN_<pass>.py, "(unchanged)" when a pass changed nothing) and timing.txt; with
            several functions, one subdirectory per function.
        verify (bool, optional): run the IR verifier after every pass (default: on in debug
            builds, or when KILN_VERIFY_IR=1).
        target (str, optional): a target string; a GPU one ("cuda", "opencl", …) adds the GPU
            passes, and its limits (threads and shared memory per block) are checked. A CPU
            target or None lowers for the CPU.

    Returns:
        PrimFunc for a PrimFunc, IRModule for an IRModule or a Schedule. With a GPU target,
        always an IRModule: the host functions (a PrimFunc's under "main") and their device
        kernels under their global symbols ("main_kernel0", …).

    Raises:
        KilnTypeError: func is not a PrimFunc, an IRModule or a Schedule, or dump_ir or verify
            has the wrong type.
        KilnValueError: the function cannot be lowered (the message names the pass), or the
            target string is not a valid target.
        InternalError: verify found IR that a pass broke (a bug in kiln).

    Example:
        sch = tir.Schedule(func)
        ...
        print(tir.lower(sch)["main"])
        gpu = tir.lower(sch, target="cuda")   # host "main" and kernels "main_kernel0", ...
        tir.interpret(gpu, a, b)
    """
    return _tir_tools.lower(func, dump_ir=dump_ir, verify=verify, target=target)
