"""``miaudit bench``: the benchmark suites (``suites.py``), their runner (``run.py``), the DP
benchmark (``dp.py``) and benchmark-only model builders (``tiny_bert.py``)."""
