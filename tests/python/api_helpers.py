"""The public Python API that the API tests walk: the modules below, their public callables
and classes, and the documented members of those classes."""
import inspect
import types

import kiln
from kiln import arith, autotune, ir, te, tir, topi
from kiln.tir import schedule as tir_schedule
from kiln.tir import transform
from kiln.tir.tensor_intrin import cuda as tensor_intrin_cuda

MODULES = [kiln, kiln.error, ir, te, tir, tir_schedule, transform, tensor_intrin_cuda, arith,
           kiln.driver, autotune, topi, topi.nn]

# Modules left out of the walk, with what they hold: the runtime's Python API (modules, devices,
# kiln.nd arrays). Remove an entry to check that module too.
EXCLUDED_MODULES = {
    "kiln.runtime": "compiled modules, functions and devices",
    "kiln.runtime.module": "kiln.runtime.Module and its functions",
    "kiln._kiln.runtime": "the bindings behind kiln.runtime and kiln.nd",
    "kiln.nd": "kiln.nd arrays",
}

# Special methods that are part of the API a user reads about (the others: operators, __repr__,
# __eq__ … are documented by the class).
DOCUMENTED_SPECIAL = {"__init__", "__call__", "__getitem__"}


def is_excluded(obj):
    module = getattr(obj, "__module__", None) or ""
    return module in EXCLUDED_MODULES


def public_classes_and_callables():
    """(qualified name, object) of every public callable and class of MODULES."""
    seen, found = set(), []
    for module in MODULES:
        for name in dir(module):
            if name.startswith("_"):
                continue
            obj = getattr(module, name)
            if inspect.ismodule(obj) or not callable(obj) or is_excluded(obj):
                continue
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            found.append((f"{module.__name__}.{name}", obj))
    return found


def kiln_classes(cls):
    """cls and its bases that kiln defines (not object or pybind11's base)."""
    return [c for c in cls.__mro__ if (c.__module__ or "").startswith("kiln")]


def members(cls):
    """(name, attribute as stored in the class, attribute as looked up) of the documented
    members of a kiln class and its kiln bases."""
    result, seen = [], set()
    for owner in kiln_classes(cls):
        for name, raw in vars(owner).items():
            if name in seen or (name.startswith("_") and name not in DOCUMENTED_SPECIAL):
                continue
            seen.add(name)
            if isinstance(raw, property) or callable(raw) or isinstance(raw, staticmethod):
                if isinstance(raw, type):
                    continue  # a nested class is walked as a class
                if isinstance(raw, types.WrapperDescriptorType):
                    continue  # a slot of pybind11's base: the class has no constructor
                if hasattr(cls, "__members__") and name in ("name", "value", "__init__"):
                    continue  # pybind11's enum machinery, not kiln's
                result.append((name, raw, getattr(cls, name)))
    return result
