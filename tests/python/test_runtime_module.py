"""kiln.runtime.Module: names and targets, time_evaluator, export_library and load_module (from
Python and from the C++ deployment example), refusal of modules the runtime cannot run, and the
size of the thread pool."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln import te

from runtime_helpers import add_one, matmul, seal_module_file, vector_add

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rt_matmul():
    return kiln.build(matmul(32, 24, 16))


def matmul_data(seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (32, 16)).astype("float32")
    b = rng.uniform(-1, 1, (16, 24)).astype("float32")
    return a, b, np.zeros((32, 24), "float32")


def test_names_and_target(rt_matmul):
    assert rt_matmul.functions == ["main"]
    assert rt_matmul.entry_name == "main"
    assert "main" in rt_matmul and "other" not in rt_matmul
    assert rt_matmul.target.startswith("llvm -mtriple=")
    assert rt_matmul["main"].name == "main"
    assert rt_matmul.path is None
    spec = rt_matmul["main"].spec
    assert [arg["name"] for arg in spec["args"]] == ["A", "B", "C"]
    assert spec["args"][0]["shape"] == (32, 16) and spec["args"][0]["dtype"] == "float32"


def test_unknown_function_lists_the_names(rt_matmul):
    with pytest.raises(kiln.KilnIndexError, match="main"):
        rt_matmul["nope"]


def test_time_evaluator_returns_positive_times(rt_matmul):
    a, b, c = matmul_data()
    timer = rt_matmul.time_evaluator("main", kiln.cpu(0), number=5, repeat=3)
    result = timer(a, b, c)
    assert len(result.results) == 3
    assert all(t > 0 for t in result.results)
    assert result.min <= result.median <= result.max
    assert result.min <= result.mean <= result.max
    assert result.std >= 0
    np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-5, atol=1e-5)
    assert "BenchmarkResult(mean=" in repr(result)


def test_time_evaluator_min_repeat_ms(rt_matmul):
    result = rt_matmul.time_evaluator("main", kiln.cpu(0), number=1, repeat=2,
                                      min_repeat_ms=5)(*matmul_data())
    assert len(result.results) == 2 and result.mean > 0


def test_time_evaluator_errors(rt_matmul):
    a, b, c = matmul_data()
    with pytest.raises(kiln.KilnValueError, match="time_evaluator: number must be at least 1"):
        rt_matmul.time_evaluator("main", kiln.cpu(0), number=0)(a, b, c)
    with pytest.raises(kiln.KilnValueError, match="expected a cpu, cuda or opencl device"):
        rt_matmul.time_evaluator("main", kiln.device("vulkan", 0))
    with pytest.raises(kiln.KilnTypeError, match="main: expected 3 arguments, found 1"):
        rt_matmul.time_evaluator("main", kiln.cpu(0))(a)


def test_export_and_load_module(rt_matmul, tmp_path):
    path = tmp_path / "matmul.so"
    rt_matmul.export_library(path)
    loaded = kiln.runtime.load_module(path)
    assert loaded.functions == ["main"]
    assert loaded.target == rt_matmul.target
    assert loaded.path == str(path)
    a, b, c = matmul_data(1)
    loaded["main"](a, b, c)
    np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-5, atol=1e-5)
    c2 = np.zeros_like(c)
    loaded(a, b, c2)
    np.testing.assert_array_equal(c, c2)
    with pytest.raises(kiln.KilnValueError, match="main: argument A: expected ndim 2, found 1"):
        loaded(a.reshape(-1), b, c)
    timed = loaded.time_evaluator("main", kiln.cpu(0), number=2)(a, b, c)
    assert timed.mean > 0
    with pytest.raises(kiln.KilnValueError, match="carries machine code only"):
        loaded.get_source("asm")
    copy = tmp_path / "copy.so"
    loaded.export_library(copy)
    assert kiln.runtime.load_module(copy).functions == ["main"]


def test_exported_module_outlives_the_built_one(tmp_path):
    path = tmp_path / "add.so"
    kiln.build(add_one(32)).export_library(str(path))
    loaded = kiln.runtime.load_module(str(path))
    fn = loaded["main"]
    del loaded
    a, b = np.arange(32, dtype="float32"), np.zeros(32, "float32")
    fn(a, b)  # the function keeps its module alive
    np.testing.assert_array_equal(b, a + 1)


def test_functions_outlive_their_module():
    fn = kiln.build(add_one(8))["main"]
    a, b = np.arange(8, dtype="float32"), np.zeros(8, "float32")
    fn(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_load_refuses_a_file_that_is_not_a_module(tmp_path):
    path = tmp_path / "junk.so"
    path.write_bytes(b"not a shared library")
    with pytest.raises(kiln.KilnRuntimeError, match="junk.so"):
        kiln.runtime.load_module(path)
    with pytest.raises(kiln.KilnRuntimeError):
        kiln.runtime.load_module(tmp_path / "missing.so")


def hand_made_module(tmp_path, manifest_text, name):
    """A sealed shared library whose only content is `manifest_text` as kiln_module_manifest."""
    source = tmp_path / (name + ".c")
    escaped = manifest_text.replace("\\", "\\\\").replace('"', '\\"')
    source.write_text(f'const char kiln_module_manifest[] = "{escaped}";\n')
    library = tmp_path / (name + ".so")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    seal_module_file(library)
    return library


def test_load_refuses_an_unknown_abi_version(tmp_path):
    library = hand_made_module(
        tmp_path, '{"abi_version": 99, "target": "llvm", "functions": []}', "future")
    with pytest.raises(kiln.KilnRuntimeError,
                       match="module has ABI version 99, this runtime runs ABI version 2; load it "
                             "with a newer kiln runtime"):
        kiln.runtime.load_module(library)


def test_load_refuses_a_module_of_the_previous_abi(tmp_path):
    library = hand_made_module(
        tmp_path, '{"abi_version": 1, "target": "llvm", "functions": []}', "old")
    with pytest.raises(kiln.KilnRuntimeError,
                       match="module has ABI version 1, this runtime runs ABI version 2; export "
                             "the module again with this version of kiln"):
        kiln.runtime.load_module(library)


def test_module_for_features_this_cpu_lacks(tmp_path):
    """A module built for a CPU feature this CPU lacks is refused, naming the feature. On x86-64
    the feature tried is the first of a list this CPU lacks; a feature may imply others (avx512fp16
    implies avx512f, avx512bw ...), and the message names every missing one, so the test checks
    that the requested feature is among them, whatever the CPU has."""
    host = json.loads(kiln.build(add_one(8)).manifest)
    if "x86_64" not in host["target"]:
        pytest.skip("the features tried are x86 features")
    candidates = ["avx512fp16", "amx-tile", "avx512f", "avx2"]
    lacking = [f for f in candidates if f not in host["host_features"]]
    if not lacking:
        pytest.skip("this CPU has every feature tried")
    feature = lacking[0]
    rt = kiln.build(add_one(64), target="llvm -mattr=+" + feature)
    needed = json.loads(rt.manifest)["host_features"]
    assert feature in needed
    with pytest.raises(kiln.KilnRuntimeError) as refusal:
        rt(np.zeros(64, "float32"), np.zeros(64, "float32"))
    message = str(refusal.value)
    prefix = "cannot run in this process: it uses CPU features this CPU lacks ("
    assert prefix in message, message
    missing = message.split(prefix, 1)[1].split(")", 1)[0].split(", ")
    assert feature in missing, message
    assert all(name in needed and name not in host["host_features"] for name in missing), message
    assert "export it with export_library" in message
    assert "kiln_unchecked_main:" in rt.get_source("asm")
    path = tmp_path / "lacking.so"
    rt.export_library(path)
    with pytest.raises(kiln.KilnRuntimeError,
                       match="module needs CPU features this CPU lacks: .*" + feature):
        kiln.runtime.load_module(path)


def test_module_for_an_avx2_cpu_runs_on_any_avx2_host(tmp_path):
    """Code built for an AVX2 CPU model (Haswell: AVX2 and FMA, no AVX-512) runs on every x86-64
    host with those features, AVX-512 or not, in process and exported."""
    host = json.loads(kiln.build(add_one(8)).manifest)
    if "x86_64" not in host["target"]:
        pytest.skip("haswell is an x86-64 CPU model")
    rt = kiln.build(add_one(256), target="llvm -mcpu=haswell")
    needed = json.loads(rt.manifest)["host_features"]
    assert "avx2" in needed and not any(name.startswith("avx512") for name in needed)
    lacking = [name for name in needed if name not in host["host_features"]]
    if lacking:
        pytest.skip(f"this CPU lacks {', '.join(lacking)}, which haswell code uses")
    a, b = np.arange(256, dtype="float32"), np.zeros(256, "float32")
    rt(a, b)
    np.testing.assert_array_equal(b, a + 1)
    path = tmp_path / "haswell.so"
    rt.export_library(path)
    b[...] = 0
    kiln.runtime.load_module(path)(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_thread_count():
    old = kiln.runtime.get_num_threads()
    assert old >= 1
    kiln.runtime.set_num_threads(3)
    assert kiln.runtime.get_num_threads() == 3
    kiln.runtime.set_num_threads(0)
    assert kiln.runtime.get_num_threads() == old


def test_thread_count_from_the_environment():
    code = "import kiln; print(kiln.runtime.get_num_threads())"
    env = dict(os.environ, KILN_NUM_THREADS="5", PYTHONPATH=str(REPO / "python"))
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                         text=True).stdout
    assert out.strip() == "5"


def test_deploy_cpp_example_runs_an_exported_module(tmp_path):
    """examples/deploy_cpp/run.sh builds the minimal runtime and the example with CMake (the first
    run takes a minute; its build folder is kept) and runs the exported module's main."""
    path = tmp_path / "matmul.so"
    kiln.build(matmul(32, 24, 16)).export_library(path)
    result = subprocess.run(["bash", str(REPO / "examples/deploy_cpp/run.sh"), str(path)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "functions: main" in result.stdout
    assert "check (matmul): OK" in result.stdout

    vadd = tmp_path / "vadd.so"
    kiln.build(vector_add()).export_library(vadd)
    result = subprocess.run(["bash", str(REPO / "examples/deploy_cpp/run.sh"), str(vadd),
                             "n=77"], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "main([77], [77], [77])" in result.stdout
    assert "check (element-wise add): OK" in result.stdout


def test_scalar_only_functions_keep_working_after_errors():
    x = te.var("x", "int64")
    A = te.placeholder((2,), "int64", name="A")
    B = te.compute((2,), lambda i: A[i] * x, name="B")
    rt = kiln.build(te.create_prim_func([A, x, B]))
    a, b = np.array([3, 4], "int64"), np.zeros(2, "int64")
    for _ in range(3):
        with pytest.raises(kiln.KilnTypeError):
            rt(a, 1.5, b)
    rt(a, -2, b)
    np.testing.assert_array_equal(b, [-6, -8])
