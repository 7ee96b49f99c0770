"""Helpers of the tuning tests."""


def write_ops_file(path):
    """Writes a Python file for `kiln tune FILE:mm`: mm() returns a 16 x 16 scaling function."""
    path.write_text("from kiln import te\n\n"
                    "def mm():\n"
                    "    a = te.placeholder((16, 16), 'float32', name='A')\n"
                    "    b = te.compute((16, 16), lambda i, j: a[i, j] * 2, name='B')\n"
                    "    return te.create_prim_func([a, b])\n")
    return path
