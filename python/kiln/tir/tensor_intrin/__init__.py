"""The names and layouts of kiln's shipped tensor intrinsics, by target, as
tvm.tir.tensor_intrin: kiln.tir.tensor_intrin.cuda for tensor cores. The intrinsics themselves are
registered in C++ (schedule/intrin/) and listed by tir.TensorIntrin.names()."""
from . import cuda  # noqa: F401

__all__ = ["cuda"]
