"""Verifying machine unlearning (``miaudit unlearn``, ``miaudit.verify_unlearning``): did the forgotten records
leave the model? ``config`` (the ``unlearning:`` section), ``methods`` (the built-in approximate unlearning
methods), ``verify`` (the statistics: per-record and set-level tests against models retrained without the
forgotten records), ``audit`` (from config to verdict), ``output`` (results.json, the reports, the files an
auditor gives back)."""
