"""kiln.build itself: what it accepts (PrimFunc, IRModule, Schedule), function names, target
strings and their errors, IR dumps, modules for another CPU, and the compile latency of a small
element-wise operator (printed, never asserted)."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln import te

from runtime_helpers import add_one, matmul

REPO = Path(__file__).resolve().parents[2]


def scale(n=16, factor=3.0, name="X"):
    A = te.placeholder((n,), name=name)
    B = te.compute((n,), lambda i: A[i] * factor, name="Y")
    return te.create_prim_func([A, B])


def test_primfunc_is_built_as_main():
    rt = kiln.build(add_one(16))
    assert isinstance(rt, kiln.runtime.Module)
    assert rt.functions == ["main"]
    a, b = np.arange(16, dtype="float32"), np.zeros(16, "float32")
    rt(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_name_and_global_symbol():
    rt = kiln.build(add_one(16), name="add_one")
    assert rt.functions == ["add_one"]
    assert rt.entry_name == "add_one"
    named = add_one(16).with_attr("global_symbol", "plus_one")
    assert kiln.build(named).functions == ["plus_one"]
    a, b = np.arange(16, dtype="float32"), np.zeros(16, "float32")
    rt["add_one"](a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_irmodule_builds_every_function():
    mod = kiln.IRModule({"double": scale(16, 2.0), "triple": scale(16, 3.0)})
    rt = kiln.build(mod)
    assert rt.functions == ["double", "triple"]
    a, b = np.arange(16, dtype="float32"), np.zeros(16, "float32")
    rt["double"](a, b)
    np.testing.assert_array_equal(b, a * 2)
    rt["triple"](a, b)
    np.testing.assert_array_equal(b, a * 3)
    with pytest.raises(kiln.KilnValueError, match="none is named main"):
        rt(a, b)
    manifest = json.loads(rt.manifest)
    assert [f["name"] for f in manifest["functions"]] == ["double", "triple"]
    assert [f["symbol"] for f in manifest["functions"]] == ["kiln_unchecked_double",
                                                            "kiln_unchecked_triple"]


def test_irmodule_with_main_and_export(tmp_path):
    mod = kiln.IRModule({"main": scale(8, 2.0), "helper": scale(8, 5.0)})
    rt = kiln.build(mod)
    assert rt.entry_name == "main"
    rt.export_library(tmp_path / "two.so")
    loaded = kiln.runtime.load_module(tmp_path / "two.so")
    assert sorted(loaded.functions) == ["helper", "main"]
    a, b = np.ones(8, "float32"), np.zeros(8, "float32")
    loaded(a, b)
    np.testing.assert_array_equal(b, 2.0)
    loaded["helper"](a, b)
    np.testing.assert_array_equal(b, 5.0)


def test_manifest_contents():
    rt = kiln.build(matmul(8, 4, 2))
    manifest = json.loads(rt.manifest)
    assert manifest["abi_version"] == 2
    assert manifest["target"] == rt.target
    assert manifest["device_blobs"] == []
    assert isinstance(manifest["host_features"], list)
    (entry,) = manifest["functions"]
    assert entry["name"] == "main"
    assert [a["shape"] for a in entry["args"]] == [[8, 2], [2, 4], [8, 4]]
    assert [a["written"] for a in entry["args"]] == [False, False, True]


def test_target_strings():
    rt = kiln.build(add_one(16), target="llvm -opt-level=1")
    assert "-opt-level=1" in rt.target
    a, b = np.zeros(16, "float32"), np.zeros(16, "float32")
    rt(a, b)
    np.testing.assert_array_equal(b, 1.0)
    assert kiln.build(add_one(16), target=None).target == kiln.build(add_one(16)).target


@pytest.mark.parametrize("target,message", [
    ("llvm -bogus=1", "bogus"),
    ("llvm -opt-level=7", "opt-level"),
    ("tpu", "tpu"),
    ("llvm -mcpu=notacpu", "notacpu"),
])
def test_bad_target_strings(target, message):
    with pytest.raises(kiln.KilnValueError, match=message):
        kiln.build(add_one(16), target=target)


def test_bad_inputs():
    with pytest.raises(kiln.KilnTypeError, match="kiln.build: func must be a PrimFunc, an "
                                                 "IRModule or a tir.Schedule, found an object "
                                                 "of type str"):
        kiln.build("not a function")
    with pytest.raises(kiln.KilnTypeError, match="the target must be a string"):
        kiln.build(add_one(16), target=3)
    with pytest.raises(kiln.KilnValueError, match="the module has no functions"):
        kiln.build(kiln.IRModule({}))
    with pytest.raises(kiln.KilnValueError, match="name applies to a PrimFunc"):
        kiln.build(kiln.IRModule({"f": add_one(4)}), name="g")


def test_dump_ir(tmp_path):
    rt = kiln.build(add_one(16), dump_ir=tmp_path / "ir")
    files = sorted(p.name for p in (tmp_path / "ir").iterdir())
    assert files[0].startswith("00_input")
    assert any("flatten_buffers" in f for f in files)
    assert rt.functions == ["main"]
    mod = kiln.IRModule({"double": scale(8, 2.0), "triple": scale(8, 3.0)})
    kiln.build(mod, dump_ir=str(tmp_path / "mod"))
    assert sorted(p.name for p in (tmp_path / "mod").iterdir()) == ["double", "triple"]


def test_dump_ir_from_the_environment(tmp_path):
    code = ("import kiln\n"
            "from kiln import te\n"
            "A = te.placeholder((4,), name='A')\n"
            "B = te.compute((4,), lambda i: A[i] + 1.0, name='B')\n"
            "kiln.build(te.create_prim_func([A, B]))\n")
    env = dict(os.environ, KILN_DUMP_IR=str(tmp_path / "env"),
               PYTHONPATH=str(REPO / "python"))
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    assert any(p.name.startswith("00_input") for p in (tmp_path / "env").iterdir())


def test_lowering_errors_are_kiln_errors():
    n = te.var("n")
    A = te.placeholder((n * 2,), name="A")  # a dimension the argument spec cannot state
    B = te.compute((n * 2,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(kiln.KilnError):
        kiln.build(te.create_prim_func([A, B]))


def test_build_timings():
    timings = kiln.build(add_one(16)).build_timings
    assert set(timings) == {"lower_ms", "codegen_ms", "optimize_ms", "emit_ms", "link_ms",
                            "device_ms", "total_ms", "from_cache", "device_from_cache"}
    assert timings["total_ms"] >= timings["lower_ms"] > 0
    assert timings["from_cache"] is False
    assert timings["device_ms"] == 0 and timings["device_from_cache"] is False  # a CPU build


def test_build_loads_what_it_compiled_before_from_an_object_cache(tmp_path):
    a = kiln.nd.array(np.arange(16, dtype="float32"))
    for k in range(3):
        rt = kiln.build(add_one(16), object_cache=tmp_path / "objects")
        assert rt.build_timings["from_cache"] is (k > 0)
        assert (rt.build_timings["optimize_ms"] == 0) is (k > 0)
        b = kiln.nd.empty((16,), "float32")
        rt(a, b)
        np.testing.assert_array_equal(b.numpy(), np.arange(16, dtype="float32") + 1)
    assert "define" in rt.get_source("ll") and rt.get_source("asm")
    # Another target is another object.
    assert not kiln.build(add_one(16), "llvm -opt-level=2",
                          object_cache=tmp_path / "objects").build_timings["from_cache"]
    with pytest.raises(kiln.KilnTypeError, match="object_cache"):
        kiln.build(add_one(16), object_cache=3)


def test_compile_latency_of_a_small_elementwise_op():
    kiln.build(add_one(1024))  # the first build pays for starting LLVM
    samples = []
    for _ in range(5):
        func = add_one(1024)
        start = time.perf_counter()
        rt = kiln.build(func)
        samples.append((time.perf_counter() - start) * 1e3)
    t = rt.build_timings
    print(f"\nkiln.build latency, 1024-element add: median {sorted(samples)[2]:.1f} ms, "
          f"min {min(samples):.1f} ms (lower {t['lower_ms']:.1f}, codegen {t['codegen_ms']:.1f}, "
          f"optimize {t['optimize_ms']:.1f}, emit {t['emit_ms']:.1f}, link {t['link_ms']:.1f})")
