"""kiln.target.Target: parsing, the canonical string, the ISA features, and the vector unit and
caches that schedules derive their tiles from. The properties are the named CPU's, whatever CPU
runs the test; the host's are checked against its own features."""
import os

import numpy as np
import pytest

import kiln
from kiln import te
from kiln.target import Target


@pytest.mark.parametrize("text,bits,registers,fma,lanes", [
    ("llvm -mcpu=znver4", 512, 32, True, 16),
    ("llvm -mcpu=skylake-avx512", 512, 32, True, 16),
    ("llvm -mcpu=haswell", 256, 16, True, 8),
    ("llvm -mcpu=znver2", 256, 16, True, 8),
    ("llvm -mcpu=x86-64", 128, 16, False, 4),
    ("llvm -mcpu=haswell -mattr=-fma", 256, 16, False, 8),
])
def test_vector_unit_of_named_cpus(text, bits, registers, fma, lanes):
    t = Target(text)
    assert t.vector_register_bits == bits
    assert t.num_vector_registers == registers
    assert t.has_fma is fma
    assert t.vector_lanes("float32") == lanes
    assert 128 <= t.preferred_vector_bits <= bits
    assert t.l1d_cache_bytes is None and t.l2_cache_bytes is None and t.l3_cache_bytes is None
    assert not t.is_host


def test_preferred_width_of_a_cpu_tuned_for_256_bit_vectors():
    t = Target("llvm -mcpu=skylake-avx512")
    assert (t.vector_register_bits, t.preferred_vector_bits) == (512, 256)


def test_lanes_per_dtype():
    t = Target("llvm -mcpu=znver4")
    assert t.vector_lanes("float64") == 8
    assert t.vector_lanes("float16") == 32
    assert t.vector_lanes("int8") == 64
    assert t.vector_lanes(np.float32) == 16


def test_host_agrees_with_its_features():
    host = Target("llvm")
    assert host.is_host
    assert host.kind == "llvm"
    assert host.cpu and host.triple
    if not host.triple.startswith("x86_64"):
        pytest.skip("the host is not x86-64")
    expected = 512 if host.has_feature("avx512f") else 256 if host.has_feature("avx") else 128
    assert host.vector_register_bits == expected
    assert host.num_vector_registers == (32 if host.has_feature("avx512f") else 16)
    assert host.has_fma == host.has_feature("fma")
    assert set(host.features) >= {"avx2"} or not host.has_feature("avx2")


def test_host_caches_from_the_system():
    if not os.path.exists("/sys/devices/system/cpu/cpu0/cache/index0/level"):
        pytest.skip("this system does not describe its caches in sysfs")
    host = Target()
    assert host.l1d_cache_bytes >= 4096
    assert host.l2_cache_bytes > host.l1d_cache_bytes


def test_canonical_string_round_trips():
    for text in ("llvm", "llvm -mcpu=znver4", "llvm -mcpu=haswell -opt-level=2"):
        t = Target(text)
        again = Target(str(t))
        assert again == t and hash(again) == hash(t)
        assert str(again) == str(t)
        assert repr(t) == f"kiln.target.Target({str(t)!r})"
    assert Target(Target("llvm -mcpu=haswell")) == Target("llvm -mcpu=haswell")
    assert Target("llvm -mcpu=haswell") != Target("llvm -mcpu=znver4")


def test_features_and_attrs():
    t = Target("llvm -mcpu=haswell -mattr=-fma")
    assert t.has_feature("avx2") and not t.has_feature("fma")
    assert "avx2" in t.features and "fma" not in t.features
    assert t.mattr == ["-fma"]
    assert t.cpu == "haswell"
    assert Target("llvm -opt-level=1").opt_level == 1


def test_build_accepts_a_target():
    n = 64
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    t = Target("llvm")
    rt = kiln.build(te.create_prim_func([A, B]), target=t)
    assert rt.target == str(t)
    a = np.arange(n, dtype="float32")
    b = np.zeros(n, "float32")
    rt(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_errors():
    with pytest.raises(kiln.KilnTypeError, match=r"kiln.target.Target: expected a target string "
                                                 r"such as \"llvm\" .*found an object of type int"):
        Target(3)
    with pytest.raises(kiln.KilnValueError, match="unknown CPU 'znver9'"):
        Target("llvm -mcpu=znver9")
    with pytest.raises(kiln.KilnValueError, match="unknown target kind 'cuda'"):
        Target("cuda")
    with pytest.raises(kiln.KilnValueError, match="Target.vector_lanes: expected a scalar element "
                                                  "dtype such as float32, found float32x4"):
        Target("llvm -mcpu=haswell").vector_lanes("float32x4")
    with pytest.raises(kiln.KilnTypeError, match="Target.has_feature: expected a feature name"):
        Target().has_feature(1)
