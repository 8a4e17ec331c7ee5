"""The Experiment (a target, its references, the record sets) and its three sources: models miaudit
trains (``build.py``), the user's own model (``own_model.py``, checked by ``validate.py``) and
precomputed outputs (``precomputed.py``, read through ``layouts.py``)."""
