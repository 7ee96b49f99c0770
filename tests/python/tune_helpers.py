"""Helpers of the tuning tests."""
import numpy as np

import kiln
from kiln import te

# Small settings that still run every stage of the search.
SMALL = dict(num_trials_per_iter=8, population=32, random_per_round=8, children_per_round=16,
             final_pool_k=5, final_pool_rounds=1, final_top_k=2, final_rounds=2,
             local_search_trials=2, progress=False)


def matmul(n=48):
    """The n x n x n float32 matmul C = A @ B."""
    a = te.placeholder((n, n), "float32", name="A")
    b = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return te.create_prim_func([a, b, c])


def run_matmul(rt, n=48):
    """Runs a built matmul on random inputs and compares it with NumPy."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = kiln.nd.array(np.zeros((n, n), np.float32))
    rt(kiln.nd.array(a), kiln.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)


def write_ops_file(path):
    """Writes a Python file for `kiln tune FILE:mm`: mm() returns a 16 x 16 scaling function."""
    path.write_text("from kiln import te\n\n"
                    "def mm():\n"
                    "    a = te.placeholder((16, 16), 'float32', name='A')\n"
                    "    b = te.compute((16, 16), lambda i, j: a[i, j] * 2, name='B')\n"
                    "    return te.create_prim_func([a, b])\n")
    return path
