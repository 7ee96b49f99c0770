"""kiln.target.Target: a target string parsed and validated, with the ISA features in effect and
the properties schedules derive their tiles from (vector width, vector registers, FMA, caches).

These describe the target, not the machine Python runs on: ``Target("llvm -mcpu=znver4")``
has 512-bit vectors and 32 vector registers on any host. ``Target("llvm")`` is this CPU.
"""
from ._kiln import target as _target
from .error import KilnTypeError


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
        """The back end: "llvm"."""
        return "llvm"

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
