"""Runs side by side: paired comparisons, pooling, the release gate and the sequential gate."""
