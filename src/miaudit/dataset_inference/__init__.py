"""Dataset inference: was a suspect set of records used to train the model? (``miaudit infer-dataset``)

``request`` reads the question (a run config, ``suspect:``, ``validation:``), ``features`` the per-record features
the target allows, ``calibrated`` the one-sided test calibrated against the references, with its
permutation p-value and the reference guard, ``blind`` the guard against sets
that differ without the model, ``fraction`` how much was used, ``power`` what the test can see, ``infer`` the
answer. docs/dataset-inference.md says what the test assumes.
"""
