"""kiln.topi.nn: neural-network operators with TVM's topi names and signatures (softmax,
layer_norm, dense, dense_pack, dense_int8, conv2d, pool2d ...), and PyTorch's meaning where it
defines the operator (gelu, rope, scaled_dot_product_attention)."""
from .softmax import softmax, log_softmax
from .norm import layer_norm, rms_norm
from .activation import relu, leaky_relu, gelu, silu, swiglu
from .dense import dense, matmul, batch_matmul
from .dense_pack import (dense_pack, dense_int8, pack_dense_weight, pack_dense_weight_int8,
                         has_vnni, vnni_lanes)
from .conv2d import (conv2d, conv2d_nchw, conv2d_nhwc, group_conv2d_nchw,
                     depthwise_conv2d_nchw)
from .pooling import pool2d, adaptive_pool, global_pool
from .rope import rope
from .attention import scaled_dot_product_attention, attention
from .quantize import quantize, dequantize
from ..transform import pad

__all__ = [
    "softmax", "log_softmax", "layer_norm", "rms_norm", "relu", "leaky_relu", "gelu", "silu",
    "swiglu", "dense", "matmul", "batch_matmul", "dense_pack", "dense_int8", "pack_dense_weight",
    "pack_dense_weight_int8", "has_vnni", "vnni_lanes", "conv2d", "conv2d_nchw", "conv2d_nhwc",
    "group_conv2d_nchw", "depthwise_conv2d_nchw", "pool2d", "adaptive_pool", "global_pool",
    "rope", "scaled_dot_product_attention", "attention", "quantize", "dequantize", "pad",
]
