"""Tensor expressions: placeholder, compute, reduce_axis and reducers."""
