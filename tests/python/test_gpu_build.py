"""The GPU path end to end on every workload of the GPU corpus (gpu_helpers): the schedule is
checked on the reference interpreter, its CUDA C compiled by NVRTC for sm_80 and sm_90, and its
OpenCL C run on an OpenCL device (PoCL on the CPU) against the unscheduled function; plus the
GPU targets, the device code a module shows, and the errors of GPU lowering."""
import numpy as np
import pytest

import kiln
from kiln import tir

from gpu_helpers import (GPU_WORKLOADS, assert_close, bind_threads, block_reverse,
                         expected_results, gpu_tiled_matmul, nvrtc_missing, opencl_missing,
                         run_on_device, skip_unless)
from schedule_helpers import matmul

NAMES = sorted(GPU_WORKLOADS)


@pytest.mark.parametrize("name", NAMES)
def test_schedule_matches_on_the_interpreter(name):
    func, mod = GPU_WORKLOADS[name]()
    args, expected = expected_results(func)
    tir.interpret(mod["main"], *args)
    assert_close(args, expected)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", NAMES)
def test_cuda_compiles_with_nvrtc(name, arch):
    skip_unless(nvrtc_missing())
    _, mod = GPU_WORKLOADS[name]()
    rt = kiln.build(mod, target=f"cuda -arch={arch}")
    source = rt.get_source("cuda")
    assert '__global__ void' in source and "main_kernel0" in source
    ptx = rt.get_source("ptx")
    assert ".entry main_kernel0" in ptx
    assert f".target {arch}" in ptx


@pytest.mark.parametrize("name", NAMES)
def test_opencl_runs_like_the_interpreter(name):
    skip_unless(opencl_missing())
    func, mod = GPU_WORKLOADS[name]()
    rt = kiln.build(mod, target="opencl")
    args, expected = expected_results(func)
    assert_close(run_on_device(rt, args, kiln.opencl(0)), expected)


def test_barrier_between_shared_write_and_read():
    _, mod = GPU_WORKLOADS["block_reverse"]()
    rt = kiln.build(mod, target="opencl")
    source = rt.get_source("opencl")
    assert "__local float" in source
    assert source.count("barrier(CLK_LOCAL_MEM_FENCE);") == 1
    rt = kiln.build(gpu_tiled_matmul()[1], target="opencl")
    # Inside the k loop: after the fetches, and at the end before the next fetch.
    assert rt.get_source("opencl").count("barrier(CLK_LOCAL_MEM_FENCE);") == 2


def test_cuda_source_shape():
    skip_unless(nvrtc_missing())
    rt = kiln.build(gpu_tiled_matmul()[1], target="cuda")
    source = rt.get_source("cuda")
    assert "__launch_bounds__(64)" in source
    assert "__shared__ __align__(16) float" in source and "__syncthreads();" in source
    assert "const float* __restrict__ A" in source and "float* __restrict__ C" in source


def test_cuda_binaries_come_from_the_object_cache_the_second_time(tmp_path):
    """One NVRTC compilation gives the PTX and the cubin; with an object cache a second build of
    the same CUDA C loads both from it, and a damaged entry is compiled again."""
    skip_unless(nvrtc_missing())
    mod = GPU_WORKLOADS["matmul"]()[1]
    cache = tmp_path / "objects"
    first = kiln.build(mod, target="cuda -arch=sm_80", object_cache=str(cache))
    assert first.build_timings["device_from_cache"] is False
    assert first.build_timings["device_ms"] > 0
    second = kiln.build(mod, target="cuda -arch=sm_80", object_cache=str(cache))
    assert second.build_timings["device_from_cache"] is True
    assert second.get_source("ptx") == first.get_source("ptx")
    assert ".target sm_80" in second.get_source("ptx")
    assert second.manifest == first.manifest  # the same cubin, base64 in the manifest
    other = kiln.build(mod, target="cuda -arch=sm_90", object_cache=str(cache))
    assert other.build_timings["device_from_cache"] is False  # the architecture is in the key
    for entry in cache.iterdir():
        entry.write_bytes(entry.read_bytes()[:-5])  # cut short: its hash no longer matches
    again = kiln.build(mod, target="cuda -arch=sm_80", object_cache=str(cache))
    assert again.build_timings["device_from_cache"] is False
    assert again.manifest == first.manifest


def test_gpu_targets_parse():
    """"cuda" is sm_80 with CUDA's limits, or the architecture of the CUDA device present."""
    device = kiln.cuda(0)
    arch = "sm_" + device.compute_version.replace(".", "") if device.exist else "sm_80"
    t = kiln.target.Target("cuda")
    assert (t.kind, t.arch, t.max_threads_per_block, t.thread_warp_size) == ("cuda", arch,
                                                                             1024, 32)
    assert str(t) == (f"cuda -arch={arch} -max_threads_per_block=1024 "
                      "-max_shared_memory_per_block=49152 -thread_warp_size=32")
    assert kiln.target.Target(str(t)) == t
    t = kiln.target.Target("cuda -arch=sm_90 -max_shared_memory_per_block=232448")
    assert t.arch == "sm_90" and t.max_shared_memory_per_block == 232448
    t = kiln.target.Target("opencl -device=pocl")
    assert (t.kind, t.device, t.max_threads_per_block) == ("opencl", "pocl", 256)
    assert kiln.target.Target("llvm").max_threads_per_block is None


def test_gpu_target_errors():
    with pytest.raises(kiln.KilnValueError, match="-arch must name a CUDA architecture sm_50 or "
                                                  "newer such as sm_80 or sm_90, found 'sm_3'"):
        kiln.target.Target("cuda -arch=sm_3")
    with pytest.raises(kiln.KilnValueError, match="-max_threads_per_block must be a positive "
                                                  "integer, found '0'"):
        kiln.target.Target("cuda -max_threads_per_block=0")
    with pytest.raises(kiln.KilnValueError, match="unknown option '-opt-level=2'.*the valid "
                                                  "options of 'opencl' are -device="):
        kiln.target.Target("opencl -opt-level=2")


def test_get_source_formats():
    rt = kiln.build(GPU_WORKLOADS["matmul"]()[1], target="opencl")
    assert "__kernel void main_kernel0(" in rt.get_source("opencl")
    assert "KilnDeviceLaunch" in rt.get_source("ll")
    with pytest.raises(kiln.KilnValueError, match="unknown format 'cuda'.*\"opencl\""):
        rt.get_source("cuda")


def test_missing_bind_is_refused():
    with pytest.raises(kiln.KilnValueError, match="stores into buffer C outside every loop bound "
                                                  "to a GPU block or thread.*sch.bind"):
        kiln.build(matmul(8, 8, 8), target="opencl")


def test_too_many_threads_per_block():
    sch = tir.Schedule(block_reverse(4096))
    bind_threads(sch, sch.get_block("B"), 1, threads=2048)
    with pytest.raises(kiln.KilnValueError, match="2048 threads per block .* exceed the target's "
                                                  "limit 1024"):
        kiln.build(sch.mod, target="cuda")


def test_too_much_shared_memory():
    _, mod = GPU_WORKLOADS["block_reverse"]()
    with pytest.raises(kiln.KilnValueError, match="256 bytes of shared memory exceed the "
                                                  "target's limit 128"):
        kiln.build(mod, target="opencl -max_shared_memory_per_block=128")


def test_barrier_in_divergent_code():
    """The fetches span 16 threads along x but the compute only 8: the compute (and the barriers
    inside its k loop) would run under a guard that half the threads skip."""
    func = matmul(32, 32, 32)
    sch = tir.Schedule(func)
    block = sch.get_block("C")
    i, j, r = sch.get_loops(block)
    bi, ti = sch.split(i, factors=[None, 8])
    bj, tj = sch.split(j, factors=[None, 8])
    ko, _ = sch.split(r, factors=[None, 8])
    sch.reorder(bi, bj, ti, tj, ko)
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")
    shared = sch.cache_read(block, 0, "shared")
    sch.compute_at(shared, ko)
    ty, tx = sch.split(sch.fuse(*sch.get_loops(shared)[5:]), factors=[None, 16])
    sch.bind(ty, "threadIdx.y")
    sch.bind(tx, "threadIdx.x")
    with pytest.raises(kiln.KilnValueError, match="a barrier \\(storage_sync\\) is in code that "
                                                  "not every thread of the block reaches"):
        kiln.build(sch.mod, target="opencl")


def test_host_array_passed_to_a_device_function():
    skip_unless(opencl_missing())
    rt = kiln.build(GPU_WORKLOADS["matmul"]()[1], target="opencl")
    a = np.zeros((32, 16), "float32")
    b = np.zeros((16, 24), "float32")
    c = np.zeros((32, 24), "float32")
    with pytest.raises(kiln.KilnError, match=r"kiln.nd.array\(x, device=kiln.opencl\(0\)\)"):
        rt["main"](a, b, c)


def test_cuda_runs_when_a_device_exists():
    skip_unless(nvrtc_missing())
    device = kiln.cuda(0)
    if not device.exist:
        pytest.skip("no CUDA device")
    func, mod = GPU_WORKLOADS["tiled_matmul"]()
    rt = kiln.build(mod, target="cuda")
    args, expected = expected_results(func)
    assert_close(run_on_device(rt, args, device), expected)


def test_exported_opencl_module_runs(tmp_path):
    """The device code travels in the exported library: a fresh load runs it."""
    skip_unless(opencl_missing())
    func, mod = GPU_WORKLOADS["tiled_matmul"]()
    path = str(tmp_path / "gemm_opencl.so")
    kiln.build(mod, target="opencl").export_library(path)
    loaded = kiln.runtime.load_module(path)
    args, expected = expected_results(func)
    assert_close(run_on_device(loaded, args, kiln.opencl(0)), expected)


def test_exported_cuda_module_needs_a_driver_only_to_run(tmp_path):
    skip_unless(nvrtc_missing())
    _, mod = GPU_WORKLOADS["matmul"]()
    path = str(tmp_path / "matmul_cuda.so")
    kiln.build(mod, target="cuda").export_library(path)
    loaded = kiln.runtime.load_module(path)
    assert loaded["main"] is not None
    if not kiln.cuda(0).exist:
        with pytest.raises(kiln.KilnRuntimeError, match="libcuda.so.1"):
            kiln.nd.array(np.zeros(4, "float32"), device=kiln.cuda(0))


def test_buffers_between_kernels_live_in_device_memory():
    _, mod = GPU_WORKLOADS["multi_kernel_chain"]()
    rt = kiln.build(mod, target="opencl")
    assert rt.get_source("opencl").count("__kernel void") == 3
    host = rt.get_source("ll")
    assert "KilnDeviceAlloc" in host and "KilnDeviceFree" in host


def test_deploy_cpp_example_runs_an_exported_opencl_module(tmp_path):
    """The C++ deployment example loads a GPU module with the minimal runtime, copies its
    arguments to the OpenCL device, runs it and checks the matmul."""
    skip_unless(opencl_missing())
    import subprocess
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    path = tmp_path / "matmul_opencl.so"
    kiln.build(gpu_tiled_matmul(32, 48, 16)[1], target="opencl").export_library(str(path))
    result = subprocess.run(["bash", str(repo / "examples/deploy_cpp/run.sh"), str(path)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ran on device type 4" in result.stdout
    assert "check (matmul): OK" in result.stdout


def test_cross_thread_reduction_uses_warp_shuffles_on_cuda():
    """32 threads along x reduce in registers with warp shuffles on CUDA; OpenCL C has none, so
    there the threads combine their parts in shared memory."""
    skip_unless(nvrtc_missing())
    _, mod = GPU_WORKLOADS["softmax_cross_thread"]()
    cuda = kiln.build(mod, target="cuda").get_source("cuda")
    assert cuda.count("__shfl_down_sync(__activemask(), ") == 10  # 5 steps, max and sum
    assert "row_max_red" not in cuda
    opencl = kiln.build(mod, target="opencl").get_source("opencl")
    assert "__local float row_max_red[32] __attribute__((aligned(16)));" in opencl
    # Groups of 8 threads along x (two along y): shuffles within segments of 8 lanes.
    _, mod = GPU_WORKLOADS["row_sum_cross_thread"]()
    assert "__shfl_down_sync(__activemask(), B_acc[0], 4, 8)" in kiln.build(
        mod, target="cuda").get_source("cuda")


def test_cross_thread_argmax_shuffles_and_shares_both_values():
    """Each step of an argmax combines an (index, value) pair: both values are shuffled on CUDA,
    and kept in a shared buffer each on OpenCL."""
    skip_unless(nvrtc_missing())
    _, mod = GPU_WORKLOADS["argmax_cross_thread"]()
    cuda = kiln.build(mod, target="cuda").get_source("cuda")
    for acc in ("T_argmax_acc0", "T_argmax_acc1"):
        assert cuda.count(f"__shfl_down_sync(__activemask(), {acc}[0], ") == 5
    assert "__shared__" not in cuda
    opencl = kiln.build(mod, target="opencl").get_source("opencl")
    assert "__local int T_argmax_red0[32] __attribute__((aligned(16)));" in opencl
    assert "__local int T_argmax_red1[32] __attribute__((aligned(16)));" in opencl
