"""Every public function, method, class and property of kiln's Python API has a docstring of its
own, not only the signature that pybind11 generates, so that help() and a notebook's Shift-Tab
explain it. The walk covers the modules below and the classes they export."""
import inspect
import re
import types

import kiln
from kiln import arith, ir, te, tir
from kiln.tir import schedule as tir_schedule
from kiln.tir import transform

MODULES = [kiln, kiln.error, ir, te, tir, tir_schedule, transform, arith, kiln.driver]

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


def own_text(doc, name):
    """The docstring without pybind11's generated signature line ("name(arg: type) -> type")."""
    lines = (doc or "").strip().splitlines()
    if lines and re.match(r"^" + re.escape(name) + r"\(.*\)( -> .*)?$", lines[0]):
        lines = lines[1:]
    return "\n".join(lines).strip()


def is_documented(doc, name):
    text = own_text(doc, name)
    return len(text.split()) >= 3 and "Overloaded function" not in text


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


def undocumented():
    missing = []
    for qualname, obj in public_classes_and_callables():
        short = qualname.rsplit(".", 1)[1]
        if not is_documented(obj.__doc__, getattr(obj, "__name__", short)):
            missing.append(qualname)
        if not isinstance(obj, type):
            continue
        for name, raw, looked_up in members(obj):
            doc = raw.__doc__ if isinstance(raw, property) else looked_up.__doc__
            if not is_documented(doc, name):
                missing.append(f"{qualname}.{name}")
    return missing


def test_every_public_api_has_a_docstring():
    missing = undocumented()
    assert not missing, "no docstring beyond the signature: " + ", ".join(missing)


def test_the_walk_covers_the_api():
    walked = dict(public_classes_and_callables())
    for name in ("kiln.build", "kiln.te.compute", "kiln.te.placeholder", "kiln.tir.lower",
                 "kiln.tir.interpret", "kiln.tir.Schedule", "kiln.tir.IndexMap",
                 "kiln.tir.TensorIntrin", "kiln.arith.Analyzer", "kiln.ir.structural_hash",
                 "kiln.tir.transform.flatten_buffers"):
        assert name in walked, name
    schedule_methods = {name for name, _, _ in members(tir.Schedule)}
    for primitive in ("split", "fuse", "reorder", "compute_at", "cache_write", "tensorize",
                      "sample_perfect_tile", "get_loops", "mod", "trace", "show", "__init__"):
        assert primitive in schedule_methods, primitive
    assert not any(is_excluded(obj) for obj in walked.values())


def test_schedule_primitives_show_an_example():
    for name, _, method in members(tir.Schedule):
        if name in ("__init__", "mod", "trace", "copy", "seed", "show", "get"):
            continue
        assert "Example:" in method.__doc__, name
        assert "Raises:" in method.__doc__, name


def test_own_text_strips_only_the_generated_signature():
    assert own_text("split(self: Schedule, loop: object) -> list\n", "split") == ""
    assert own_text("split(self: Schedule) -> list\n\nSplits a loop.", "split") == "Splits a loop."
    assert not is_documented(None, "f")
    assert is_documented("Splits a loop in two.", "split")
