"""Torch-free numerics: per-record signals, the reference logit stack, p-values (the empirical ones conformal
calibration uses, ``attacks.calibration``), metrics with intervals and leverage scores. Plain arrays in, plain
arrays out."""
