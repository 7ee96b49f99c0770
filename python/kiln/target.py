"""kiln.target.Target: a target string parsed and validated, with the ISA features in effect and
the properties schedules derive their tiles from (vector width, vector registers, FMA, caches);
gemm_blocking derives the register tile and cache blocking of a matrix multiply from them.

These describe the target, not the machine Python runs on: ``Target("llvm -mcpu=znver4")``
has 512-bit vectors and 32 vector registers on any host. ``Target("llvm")`` is this CPU.
"""
from ._kiln import target as _target
from .error import KilnTypeError, KilnValueError


class Target:
    """A compilation target, parsed from a string as kiln.build takes it.

    ``Target("llvm")`` (the default) is the CPU this process runs on; ``"llvm -mcpu=znver4"``,
    ``"llvm -mcpu=haswell -mattr=-fma"``, ``"llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v1"``
    name others. An unknown kind, option, CPU or feature raises KilnValueError listing the valid
    ones; an argument that is not a string (or a Target) raises KilnTypeError.

    Example::

        t = kiln.target.Target("llvm -mcpu=haswell")
        t.vector_register_bits        # 256
        t.vector_lanes("float32")     # 8
        t.num_vector_registers        # 16
        t.has_feature("avx512f")      # False
    """

    def __init__(self, target="llvm"):
        """Parses ``target`` (a target string, or a Target to copy).

        Raises:
            KilnValueError: an unknown kind, option, CPU or feature (the message lists the
                valid ones).
            KilnTypeError: target is neither a string nor a Target.
        """
        if isinstance(target, Target):
            self._handle = target._handle
            return
        if not isinstance(target, str):
            raise KilnTypeError("kiln.target.Target: expected a target string such as \"llvm\" "
                                "or \"llvm -mcpu=znver4\", found an object of type "
                                f"{type(target).__name__}")
        self._handle = _target.Target(target)

    def __str__(self):
        """The canonical string, "llvm -mtriple=... -mcpu=... [-mattr=...]", that kiln.build
        and the tuning database use; parsing it again gives an equal Target."""
        return str(self._handle)

    def __repr__(self):
        return f"kiln.target.Target({str(self)!r})"

    def __eq__(self, other):
        return isinstance(other, Target) and str(self) == str(other)

    def __hash__(self):
        return hash(str(self))

    @property
    def kind(self):
        """The back end: "llvm" (CPU code), "cuda" or "opencl" (GPU code; the CPU properties
        then describe the host, which checks arguments and launches kernels)."""
        return self._handle.kind

    @property
    def arch(self):
        """For "cuda": the architecture compiled for, e.g. "sm_80"; else ""."""
        return self._handle.arch

    @property
    def device(self):
        """For "opencl": the substring of the device name that picks the device (-device)."""
        return self._handle.device

    @property
    def fast_math(self):
        """For GPU targets: whether float32 math functions may be the fast approximations
        (-fast-math: CUDA's __expf and --use_fast_math, OpenCL's native_exp and
        -cl-fast-relaxed-math); False for IEEE results, the default, and for "llvm"."""
        return self._handle.fast_math

    @property
    def max_threads_per_block(self):
        """For GPU targets: the most threads one block may have; None for "llvm"."""
        return self._handle.max_threads_per_block if self.kind != "llvm" else None

    @property
    def max_shared_memory_per_block(self):
        """For GPU targets: the bytes of shared memory one block may use; None for "llvm"."""
        return self._handle.max_shared_memory_per_block if self.kind != "llvm" else None

    @property
    def thread_warp_size(self):
        """For GPU targets: the threads that run in lock step (32 on NVIDIA GPUs); None for
        "llvm"."""
        return self._handle.thread_warp_size if self.kind != "llvm" else None

    @property
    def triple(self):
        """The LLVM target triple, e.g. "x86_64-pc-linux-gnu"."""
        return self._handle.triple

    @property
    def cpu(self):
        """The CPU name as LLVM spells it, e.g. "znver3"; this CPU's name for the host."""
        return self._handle.cpu

    @property
    def mattr(self):
        """The features added ("+f") or removed ("-f") relative to the CPU's defaults."""
        return list(self._handle.attrs)

    @property
    def opt_level(self):
        """LLVM's optimization level, 0 to 3 (-opt-level)."""
        return self._handle.opt_level

    @property
    def is_host(self):
        """Whether the target is the CPU this process runs on (no -mcpu, or -mcpu=native)."""
        return self._handle.is_host

    @property
    def features(self):
        """The vector and matrix ISA features in effect, e.g. ["avx", "avx2", "fma", ...]."""
        return list(self._handle.features)

    @property
    def intrinsic_features(self):
        """The features a tensor intrinsic may require of this target's code
        (TensorIntrin.required_features): ``features`` for llvm; for cuda the architecture
        levels "sm_50" ... up to -arch, whose instructions its code can use; none for opencl."""
        return list(self._handle.intrinsic_features)

    def has_feature(self, name):
        """Whether the ISA feature ``name`` (as listed in ``features``) is in effect."""
        if not isinstance(name, str):
            raise KilnTypeError("Target.has_feature: expected a feature name such as \"avx2\", "
                                f"found an object of type {type(name).__name__}")
        return self._handle.has_feature(name)

    @property
    def vector_register_bits(self):
        """The width of a vector register in bits: 512 with AVX-512, 256 with AVX2, 128 with
        SSE or NEON (LLVM's cost model for this CPU). Explicit vectors of a schedule get this
        width in the generated code."""
        return self._handle.vector_register_bits

    @property
    def preferred_vector_bits(self):
        """The width LLVM's own vectorizers prefer, in bits; less than vector_register_bits on
        CPUs tuned for narrower vectors (e.g. 256 on skylake-avx512)."""
        return self._handle.preferred_vector_bits

    @property
    def num_vector_registers(self):
        """The number of vector registers: 32 with AVX-512, 16 with SSE or AVX2 on x86-64."""
        return self._handle.num_vector_registers

    @property
    def has_fma(self):
        """Whether the CPU has vector fused multiply-add instructions."""
        return self._handle.has_fma

    def vector_lanes(self, dtype):
        """How many ``dtype`` elements one vector register holds: vector_lanes("float32") is 16
        with AVX-512, 8 with AVX2, 4 with SSE or NEON. A vector dtype or "handle" raises
        KilnValueError."""
        return self._handle.vector_lanes(dtype)

    def vector_lanes_dividing(self, dtype, extent):
        """The lanes of the widest vector of ``dtype`` whose lanes divide ``extent``: a whole
        register, or where that does not divide, half of one while the half is 256 bits or more
        (AVX-512: 8 float32 for 56 columns, where vector_lanes is 16); 1 where none divides."""
        return self._handle.vector_lanes_dividing(dtype, extent)

    @property
    def l1d_cache_bytes(self):
        """The L1 data cache of one core in bytes, for the host target; None when unknown or
        for another target."""
        return self._handle.l1d_cache_bytes

    @property
    def l2_cache_bytes(self):
        """The L2 cache of one core in bytes, for the host target; None otherwise."""
        return self._handle.l2_cache_bytes

    @property
    def l3_cache_bytes(self):
        """The L3 cache in bytes (shared by the cores that share it), for the host target;
        None otherwise."""
        return self._handle.l3_cache_bytes


def nvrtc_available():
    """Whether NVRTC (the CUDA runtime compiler, which builds "cuda" targets) can be loaded:
    returns (True, "") or (False, the reason, naming the paths tried)."""
    return _target.nvrtc_available()


# The L2 cache (per core) assumed where the target does not say (a target other than the host).
ASSUMED_L2_BYTES = 256 * 1024


def gemm_blocking(target, dtype="float32", n=None, k=None, threads=None):
    """How a matrix multiply ``C[m, n] += A[m, k] * B[k, n]`` is blocked for the registers and
    caches of ``target``: returns (MR, NR, panels).

    MR x NR is the register tile: the block of C that stays in vector registers while k runs.
    Each step of k keeps it in MR * V vector registers (V = NR / lanes), loads the V vectors of
    one row of B and broadcasts one element of A at a time: MR * V + V + 1 registers, which
    must fit in ``target.num_vector_registers`` or the compiler spills accumulators to memory on
    every step. Among the tiles that fit, the one with the most multiply-adds per load,
    MR * V / (MR + V), wins. V is a power of two, so that a vectorized loop over the NR columns
    is a vector type LLVM splits into whole registers (a 24-lane vector is legalized lane by
    lane). When ``n`` is given, NR divides it, so that B can be packed into whole
    [n / NR, k, NR] panels, and the vectors are the widest whose lanes divide n
    (``target.vector_lanes_dividing(dtype, n)``: on AVX-512, 16 float32 lanes for 64 columns,
    the 8 of a register's 256-bit half for 24 or 56, each vector still taking a register);
    otherwise, and where none divides n, lanes = ``target.vector_lanes(dtype)``.

    ``panels`` is how many NR-column panels of B one pass over an MR-row tile of A covers: the
    tile (MR x k elements) is read once per pass and reused from the L1 cache, while the
    panels (panels x k x NR elements) stay in the L2 cache together, in at most half of
    ``target.l2_cache_bytes`` (256 KiB assumed when the target's caches are unknown). It is a
    power of two that divides n / NR and leaves at least ``threads`` groups of panels for a
    parallel loop (default: the runtime's thread count); 1 when ``k`` is not given.

    Float32 tiles: AVX-512 (32 registers of 16 lanes) 6 x 64, or 30 x 8 where 8 divides n but
    16 does not (n = 24, 56); AVX2 (16 of 8) 6 x 16; SSE (16 of 4) 6 x 8; NEON (32 of 4) 6 x 16.

    Example::

        mr, nr, panels = kiln.target.gemm_blocking("llvm", "float32", n=1024, k=1024)
        # AVX2 with a 512 KiB L2: (6, 16, 4): 12 accumulators + 2 vectors of B + 1 broadcast of
        # A = 15 of 16 registers; 4 panels of 1024 x 16 floats = 256 KiB

    target: a kiln.target.Target or a target string. Raises KilnValueError when no tile fits
    (a target without vector registers, or no NR that divides ``n``).
    """
    target = target if isinstance(target, Target) else Target(target)
    register_lanes = target.vector_lanes(dtype)
    lanes = register_lanes
    if n is not None:
        dividing = target.vector_lanes_dividing(dtype, n)
        if dividing > 1:  # else no NR divides n: the error below names the register's lanes
            lanes = dividing
    registers = target.num_vector_registers
    best = None
    vectors = 1
    while vectors < registers:
        rows = (registers - 1 - vectors) // vectors
        if rows < 1:
            break
        if n is None or n % (vectors * lanes) == 0:
            loads_per_fma = (rows + vectors) / (rows * vectors)
            if best is None or loads_per_fma < best[0]:
                best = (loads_per_fma, rows, vectors * lanes)
        vectors *= 2
    if best is None:
        raise KilnValueError(f"gemm_blocking: no register tile of {dtype} fits target {target} "
                             f"({registers} vector registers of {register_lanes} lanes)"
                             + (f" with NR dividing n = {n}" if n is not None else ""))
    _, mr, nr = best

    panels = 1
    if k is not None:
        if threads is None:
            from .runtime import get_num_threads
            threads = get_num_threads()
        budget = (target.l2_cache_bytes or ASSUMED_L2_BYTES) // 2
        element_bytes = target.vector_register_bits // 8 // register_lanes
        panel_bytes = k * nr * element_bytes
        groups = None if n is None else n // nr
        while (2 * panels * panel_bytes <= budget and
               (groups is None or (groups % (2 * panels) == 0 and
                                   groups // (2 * panels) >= threads))):
            panels *= 2
    return mr, nr, panels
