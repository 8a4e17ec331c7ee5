"""An audit inside the ML workflow (docs/workflow.md): the CI gate (``gate``: ``--fail-on``, the ``gate:`` key,
``miaudit.gate``), each command's verdict in one word (``verdicts``), the config keys (``keys``), what an audit
logs to a tracker (``logged``) and the MLflow client that logs it (``tracking``), and the flags every command
shares (``flow``). It reads only the typed results (``miaudit.results``); MLflow is imported when tracking is asked."""
