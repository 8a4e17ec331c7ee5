"""Differential-privacy audits: DP-SGD training (Opacus), epsilon lower bounds from attack scores (two-run,
threshold chosen on one half and evaluated on the other) and from canaries in one training run (Steinke, Nasr
& Jagielski 2023), and a verdict on a declared epsilon.

Modules: ``bounds`` (pure statistics, scipy.stats), ``training`` (the Opacus loop), ``audit`` (the two-run
bound and the verdict, as results.json records them), ``one_run`` (the canary audit, ``miaudit dp-audit``),
``bench`` (``miaudit bench dp``). Nothing is imported here: opacus is an optional extra (``dp``).
"""
