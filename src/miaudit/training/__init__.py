"""Obtaining models: the training loop and its options (``options``), DP-SGD (``dp_sgd``, ``dp_stacked``),
augmentation, the content-addressed model store and the executor (local or Ray) that trains reference models in
parallel."""
