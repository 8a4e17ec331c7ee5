"""Differential-privacy audits: epsilon lower bounds from attack scores (two-run, threshold chosen on one half
and evaluated on the other) and from canaries in one training run (Steinke, Nasr & Jagielski 2023), and a
verdict on a declared epsilon. The DP-SGD they audit is training's (``training.dp_sgd``, Opacus).

Modules: ``bounds`` (pure statistics, scipy.stats), ``audit`` (the two-run bound and the verdict, as
results.json records them), ``one_run`` (the canary audit, ``miaudit dp-audit``), ``multi_run``
(``dp-audit --runs``); ``miaudit bench dp`` is ``miaudit_bench.dp``. Nothing is imported here: opacus is an
optional extra (``dp``).
"""
