"""Numerical building blocks: binning, intervals, kernels, the tiled pairwise engine and
random streams. numpy and scipy only; nothing here validates user input."""
