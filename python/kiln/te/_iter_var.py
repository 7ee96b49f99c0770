"""Python operators on tir.IterVar, so that a reduce axis reads like its variable in
expressions: ``k + 1``, ``A[i, k * 2]``, ``k < 4``. Each operator forwards to ``iter_var.var``."""
from .._kiln import ir as _ir

_FORWARDED = [
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
    "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__neg__",
    "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "astype",
]


def _forward(name):
    def method(self, *args):
        return getattr(self.var, name)(*args)
    method.__name__ = name
    method.__doc__ = f"``iter_var.var.{name}(...)``: the iteration variable's {name}."
    return method


def _dtype(self):
    return self.var.dtype


def install():
    """Adds the forwarding operators to tir.IterVar (idempotent)."""
    cls = _ir.IterVar
    for name in _FORWARDED:
        setattr(cls, name, _forward(name))
    cls.astype.__doc__ = ("The iteration variable converted to ``dtype``, like PrimExpr.astype: "
                          "``k.astype(\"float32\")``.")
    cls.__hash__ = lambda self: hash(self.var)
    cls.dtype = property(_dtype, doc="The dtype of the iteration variable, e.g. \"int32\".")
