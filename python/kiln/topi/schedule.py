"""topi.default_schedule: checks its arguments and hands the function to the scheduler of the
target's kind, cpu_schedule.py for "llvm" and gpu_schedule.py for "cuda" and "opencl"."""
from .. import runtime
from ..error import KilnTypeError, KilnValueError
from ..target import Target
from ._schedule_steps import as_prim_func
from .cpu_schedule import cpu_schedule
from .gpu_schedule import gpu_schedule

GPU_KINDS = ("cuda", "opencl")


def default_schedule(func, target="llvm", tensor_intrinsics=None, num_threads=None):
    """A schedule of ``func`` for a CPU or a GPU that needs no tuning (see
    kiln/topi/cpu_schedule.py and kiln/topi/gpu_schedule.py for the steps).

    For a CPU ("llvm"): element-wise stages inlined, matrix products and convolutions
    register-tiled after kiln.target.gemm_blocking, row statistics computed per row with their
    consumer, outer loops parallel and inner loops vectorized by the target's widest vectors
    that divide them (Target.vector_lanes_dividing). The thread count is ``num_threads``, by
    default the runtime's (kiln.runtime.get_num_threads) when this is called.

    For a GPU ("cuda", "opencl"): element-wise stages inlined; matrix products and convolutions
    tiled for thread blocks, each thread accumulating a register tile, the operands' tiles
    staged in shared memory by all the block's threads; softmax, the norms and row reductions
    one row per thread block with cross-thread reductions, a reduction to one value in two
    kernels (thread blocks reducing slices, then one block their results); every other
    block's loops fused and bound to blockIdx.x and threadIdx.x. Thread counts and shared
    tiles are sized by the target's max_threads_per_block and max_shared_memory_per_block.

    Works for any function of te.compute blocks, symbolic shapes included: a step that does
    not apply is skipped, so the schedule builds wherever the unscheduled function builds (for
    a GPU, wherever some loop of each block can be bound to GPU threads).

    Args:
        func (tir.PrimFunc or list): the function, or the list of te tensors (inputs, then
            outputs, then te.var scalars) that te.create_prim_func would take.
        target (str or kiln.target.Target): the target whose properties size the schedule:
            "llvm" (default, this CPU) or another CPU, "cuda" (e.g. "cuda -arch=sm_80") or
            "opencl".
        tensor_intrinsics (list of str, optional): for a CPU, the tensor intrinsics a sum of
            products may be tensorized with, those of them whose required features the target
            has; default the shipped x86 ones (AVX-512 VNNI, AVX-VNNI and AVX-512 BF16 dot
            products, e.g. VNNI for dense_int8). [] turns tensorization off. GPU schedules use
            none.
        num_threads (int, optional): for a CPU, the threads the kernels will run on, which
            size the parallel loops (default: the runtime's); GPU schedules ignore it.

    Returns:
        tir.Schedule: the scheduled function is ``sch.mod``; ``sch.trace`` replays it.

    Raises:
        KilnTypeError: func is neither a PrimFunc nor a list of te tensors, target is not a
            target string or a Target, tensor_intrinsics is not a list of str, or num_threads
            is not an int.
        KilnValueError: target is not a valid target string, tensor_intrinsics names no
            registered tensor intrinsic, num_threads is below 1, or, for a GPU target, a block
            has no GPU schedule (a single value computed by a reduction GPU threads cannot
            combine, such as a sum with a where condition over all elements; the message
            names the block).

    Example:
        x = te.placeholder((n, 4096), "float32", name="x")
        y = topi.nn.softmax(x)
        sch = topi.default_schedule([x, y])
        rt = kiln.build(sch.mod, target="llvm")
        sch = topi.default_schedule([x, y], target="cuda -arch=sm_80")
        rt = kiln.build(sch.mod, target="cuda -arch=sm_80")
    """
    api = "topi.default_schedule"
    func = as_prim_func(func, api)
    if not isinstance(target, (str, Target)):
        raise KilnTypeError(f"{api}: target must be a target string such as \"llvm\" or "
                            f"\"cuda\", or a kiln.target.Target, found an object of type "
                            f"{type(target).__name__}")
    target = Target(target)
    if num_threads is not None:
        if isinstance(num_threads, bool) or not isinstance(num_threads, int):
            raise KilnTypeError(f"{api}: num_threads must be an int or None, found an object of "
                                f"type {type(num_threads).__name__}")
        if num_threads < 1:
            raise KilnValueError(f"{api}: num_threads must be at least 1, found {num_threads}")
    if target.kind in GPU_KINDS:
        return gpu_schedule(func, target)
    if target.kind != "llvm":
        raise KilnValueError(f"{api}: default schedules are for the target kinds llvm, "
                             f"{', '.join(GPU_KINDS)}, found {target}")
    threads = num_threads if num_threads is not None else runtime.get_num_threads()
    return cpu_schedule(func, target, threads, tensor_intrinsics)
