"""Every public function, method, class and property of kiln's Python API has a docstring of its
own, not only the signature that pybind11 generates, so that help() and a notebook's Shift-Tab
explain it. The walk (api_helpers.py) covers kiln's modules, except the runtime's for now, and
the classes they export."""
import re

from kiln import tir

from api_helpers import is_excluded, members, public_classes_and_callables


def own_text(doc, name):
    """The docstring without pybind11's generated signature line ("name(arg: type) -> type")."""
    lines = (doc or "").strip().splitlines()
    if lines and re.match(r"^" + re.escape(name) + r"\(.*\)( -> .*)?$", lines[0]):
        lines = lines[1:]
    return "\n".join(lines).strip()


def is_documented(doc, name):
    text = own_text(doc, name)
    return len(text.split()) >= 3 and "Overloaded function" not in text


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
                 "kiln.tir.transform.flatten_buffers", "kiln.topi.add", "kiln.topi.argmax",
                 "kiln.topi.nn.conv2d", "kiln.topi.nn.scaled_dot_product_attention"):
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


def test_topi_operators_document_args_returns_and_raises():
    from kiln import topi
    missing = []
    for module in (topi, topi.nn):
        for name in module.__all__:
            obj = getattr(module, name)
            if callable(obj):
                missing += [f"{module.__name__}.{name}: {section}"
                            for section in ("Args:", "Returns:", "Raises:")
                            if section not in (obj.__doc__ or "")]
    assert not missing, "missing docstring sections: " + ", ".join(missing)
