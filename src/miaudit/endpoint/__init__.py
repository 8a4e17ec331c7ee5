"""Auditing a deployed model through its prediction API (docs/endpoint.md).

``protocols`` speaks the wire formats (Open Inference Protocol v2, MLflow's ``/invocations``, a user's
adapter); ``outputs`` turns what each output mode answers into rows and rows into the logits the attacks read;
``store`` keeps every answer keyed by its input; ``client`` batches, rate-limits, retries and counts;
``target`` builds the Experiment around the endpoint and answers the label-only attacks' questions.
"""
