"""Exported module files: the runtime checks a file before the dynamic loader maps it, so an
empty, non-ELF, truncated or corrupted file is refused with KilnRuntimeError naming the path and
the damage, and the process survives; the module exports only its manifest and function table
(the kernels, which check nothing, are reachable only through the runtime)."""
import shutil
import subprocess

import numpy as np
import pytest

import kiln

from runtime_helpers import add_one

N = 256


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    path = tmp_path_factory.mktemp("module_file") / "add_one.so"
    kiln.build(add_one(N)).export_library(path)
    return path


def damaged_copy(tmp_path, data, name="damaged.so"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def refusal(path):
    with pytest.raises(kiln.KilnRuntimeError) as error:
        kiln.runtime.load_module(path)
    message = str(error.value)
    assert message.startswith(f"KilnModuleLoadFromFile: {path}: "), message
    return message[len(f"KilnModuleLoadFromFile: {path}: "):]


def section_offset(data, name):
    """The file offset of the ELF64 section called `name`."""
    import struct
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    names = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)[0]
    for k in range(shnum):
        name_offset, = struct.unpack_from("<I", data, shoff + k * shentsize)
        end = data.index(b"\0", names + name_offset)
        if data[names + name_offset:end] == name:
            return struct.unpack_from("<Q", data, shoff + k * shentsize + 0x18)[0]
    raise AssertionError(f"no section {name}")


def test_intact_module_loads_and_runs(exported):
    rt = kiln.runtime.load_module(exported)
    a, b = np.arange(N, dtype="float32"), np.zeros(N, "float32")
    rt(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_empty_file(exported, tmp_path):
    assert refusal(damaged_copy(tmp_path, b"")) == \
        "the file is empty (0 bytes), not a kiln module"


def test_text_file(exported, tmp_path):
    message = refusal(damaged_copy(tmp_path, b"a text file, not a library\n"))
    assert message.startswith("not an ELF shared library"), message


@pytest.mark.parametrize("fraction", [1 / 3, 2 / 3])
def test_truncated_export(exported, tmp_path, fraction):
    data = exported.read_bytes()
    size = int(len(data) * fraction)
    message = refusal(damaged_copy(tmp_path, data[:size]))
    assert message.startswith(f"truncated: the file has {size} bytes but "), message
    assert " end at " in message, message


def test_truncated_just_before_the_trailer(exported, tmp_path):
    data = exported.read_bytes()
    assert data.endswith(b"KILNSUM1")
    message = refusal(damaged_copy(tmp_path, data[:-24]))
    assert message.startswith("no checksum trailer: "), message


def test_flipped_byte_in_the_code(exported, tmp_path):
    data = bytearray(exported.read_bytes())
    data[section_offset(bytes(data), b".text") + 5] ^= 0x10
    message = refusal(damaged_copy(tmp_path, bytes(data)))
    assert message.startswith("corrupted: the checksum of its "), message
    assert ", but the exporter recorded 0x" in message


def test_flipped_byte_in_the_manifest(exported, tmp_path):
    data = bytearray(exported.read_bytes())
    where = data.index(b'"abi_version"')
    data[where + 3] ^= 0x01
    message = refusal(damaged_copy(tmp_path, bytes(data)))
    assert message.startswith("corrupted: the checksum of its "), message


def test_the_process_survives_every_truncation(exported, tmp_path):
    data = exported.read_bytes()
    for size in range(0, len(data), max(1, len(data) // 40)):
        refusal(damaged_copy(tmp_path, data[:size], f"cut{size}.so"))
    # A good copy still loads afterwards.
    good = tmp_path / "good.so"
    shutil.copyfile(exported, good)
    assert kiln.runtime.load_module(good).functions == ["main"]


def test_kernels_are_not_in_the_dynamic_symbol_table(exported):
    listing = subprocess.run(["nm", "-D", "--defined-only", str(exported)], check=True,
                             capture_output=True, text=True).stdout
    names = sorted(line.split()[-1] for line in listing.splitlines() if line.strip())
    kiln_names = [name for name in names if name.startswith("kiln")]
    assert kiln_names == ["kiln_module_functions", "kiln_module_manifest"], names
    assert not any("main" in name for name in names), names
