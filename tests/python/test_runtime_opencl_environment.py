"""The OpenCL drivers' start must not change what later processes see: a driver that rewrites
the ICD loader's variables while it starts (one did, on a machine with two OpenCL platforms)
would hide platforms from every process started afterwards, the tuner's workers among them.
A stand-in driver that does so is built here with the C compiler and registered next to the
machine's own drivers."""
import glob
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import kiln

# A driver that empties the loader's search when it is asked for its platforms, and has none.
FAKE_DRIVER = r"""
#include <stdlib.h>
#include <string.h>
static int platform_info(void) { return -30; }
static int platform_ids(unsigned count, void** platforms, unsigned* found) {
  (void)count; (void)platforms;
  setenv("OCL_ICD_VENDORS", "/nonexistent", 1);
  if (found) *found = 0;
  return -1001;
}
void* clGetExtensionFunctionAddress(const char* name) {
  if (strcmp(name, "clIcdGetPlatformIDsKHR") == 0) return (void*)&platform_ids;
  if (strcmp(name, "clGetPlatformInfo") == 0) return (void*)&platform_info;
  return 0;
}
"""

# Lists the devices, then the loader's variable, then what a process started afterwards lists.
PROBE = textwrap.dedent("""
    import os, subprocess, sys
    import kiln
    def names():
        found = []
        while kiln.opencl(len(found)).exist:
            found.append(kiln.opencl(len(found)).device_name)
        return found
    if sys.argv[1:] == ["child"]:
        print(repr(names()))
    else:
        print(repr(names()))
        print(os.environ.get("OCL_ICD_VENDORS"))
        sys.stdout.flush()
        subprocess.run([sys.executable, "-c", sys.argv[1], "child"], check=True)
""")


def _vendors_dir():
    return os.environ.get("OCL_ICD_VENDORS") or "/etc/OpenCL/vendors"


def _skip_reason():
    if shutil.which("cc") is None:
        return "no C compiler (cc) to build the stand-in driver"
    if not glob.glob(os.path.join(_vendors_dir(), "*.icd")):
        return f"no OpenCL driver registered in {_vendors_dir()}"
    if not kiln.opencl(0).exist:
        return "no OpenCL device"
    return None


@pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))
def test_a_driver_that_rewrites_the_loader_variables_hides_nothing_from_later_processes(
        tmp_path):
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "fake.so"), "-x", "c", "-"],
                   input=FAKE_DRIVER, text=True, check=True)
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    for icd in glob.glob(os.path.join(_vendors_dir(), "*.icd")):
        shutil.copy(icd, vendors)
    # Its name sorts first, so that it starts before the machine's drivers.
    (vendors / "0-fake.icd").write_text(str(tmp_path / "fake.so") + "\n")

    env = dict(os.environ, OCL_ICD_VENDORS=str(vendors))
    result = subprocess.run([sys.executable, "-c", PROBE, PROBE], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    parent, variable, child = result.stdout.splitlines()
    assert parent != "[]"
    assert variable == str(vendors)
    assert child == parent
