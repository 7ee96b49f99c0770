"""Tuning records of GPU targets are keyed by the device: its name and its OpenCL driver version or
CUDA compute capability. A record measured on another device (another name, another driver) is
never applied by compile_tir or kiln.build(database=), and a machine without a device of the
target's kind applies none. Tests that run kernels skip without an OpenCL device."""
import re

import numpy as np
import pytest

import kiln
from kiln import autotune as ms
from kiln import tir
from kiln._kiln import autotune as _core
from kiln.error import TuningRecordMissingWarning

from gpu_helpers import bind_threads, opencl_missing, skip_unless
from schedule_helpers import elementwise_chain


def bound_schedule(func, threads=32):
    """func's blocks inlined into the output, whose loops are bound to blocks and threads."""
    sch = tir.Schedule(func)
    sch.compute_inline(sch.get_block("B"))
    sch.compute_inline(sch.get_block("C"))
    bind_threads(sch, sch.get_block("D"), 2, threads=threads)
    return sch


def store_record(db, func, key, candidate_hash=1):
    """One ok record of the bound schedule of func under `key`; returns the schedule."""
    sch = bound_schedule(func)
    workload = db.commit_workload(kiln.ir.structural_hash(func), kiln.ir.save_json(func))
    db.commit_records([ms.Measurement(workload, key, sch.trace.as_json(), candidate_hash,
                                      (1e-4, 1e-4))])
    return sch


def local_key(target):
    return ms.TargetKey(*_core.local_target_key(target, 0, "test"))


def test_opencl_key_names_the_device_and_its_driver():
    skip_unless(opencl_missing())
    device = kiln.opencl(0)
    key = local_key("opencl")
    assert key.target.startswith("opencl ")
    assert key.device_model == device.device_name
    assert key.device_features == "driver=" + device.driver_version
    assert key.num_threads == 1  # one host thread launches the kernels, whatever the pool


def test_record_of_this_device_applies_and_runs(tmp_path):
    skip_unless(opencl_missing())
    func = elementwise_chain()
    db = ms.Database(tmp_path / "gpu.db")
    store_record(db, func, local_key("opencl"))
    sch = ms.compile_tir(db, func, target="opencl")
    assert sch is not None
    rt = kiln.build(func, target="opencl", database=db)
    a = np.random.default_rng(0).uniform(-1, 1, size=(24, 10)).astype("float32")
    expected = [a.copy(), np.zeros_like(a)]
    tir.interpret(func, *expected)
    arrays = [kiln.nd.array(x, device=kiln.opencl(0)) for x in (a, np.zeros_like(a))]
    rt["main"](*arrays)
    np.testing.assert_allclose(arrays[1].numpy(), expected[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("change", ["device_model", "device_features"])
def test_record_of_another_device_is_not_applied(tmp_path, change):
    skip_unless(opencl_missing())
    # A function of its own per case: kiln.build warns once per function and target.
    func = elementwise_chain(m={"device_model": 11, "device_features": 12}[change])
    db = ms.Database(tmp_path / "gpu.db")
    here = local_key("opencl")
    other = {"device_model": "Some Other GPU 9000", "device_features": "driver=0.1"}[change]
    store_record(db, func, ms.TargetKey(**{**here.__dict__, change: other}))
    assert ms.compile_tir(db, func, target="opencl") is None
    assert db.best(func, "opencl") == []
    with pytest.warns(TuningRecordMissingWarning,
                      match=re.escape(f"device '{here.device_model}' (driver=")):
        with pytest.raises(kiln.KilnValueError, match="sch.bind"):
            kiln.build(func, target="opencl", database=db)  # the untuned function has no threads


def test_without_a_device_no_gpu_record_applies(tmp_path):
    if kiln.cuda(0).exist:
        pytest.skip("this machine has a CUDA device; the test needs a machine without one")
    func = elementwise_chain()
    db = ms.Database(tmp_path / "gpu.db")
    key = local_key("cuda")
    assert (key.device_model, key.device_features, key.num_threads) == ("", "", 1)
    store_record(db, func, ms.TargetKey(key.target, "NVIDIA H100 80GB HBM3", "sm_90", 1))
    assert ms.compile_tir(db, func, target="cuda") is None
    with pytest.raises(kiln.KilnValueError, match="device_model must name the device"):
        store_record(db, func, key, candidate_hash=2)  # no record is stored without a device
