"""Obtaining models: the training loop, augmentation, the content-addressed model store and the
executor (local or Ray) that trains reference models in parallel."""
