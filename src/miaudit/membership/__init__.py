"""The membership audit (``miaudit run``, ``score``, ``audit``): how much does this model leak about its training
records. Its run over the Plan of attacks (``run.py``) and ``attacks: auto``'s choice on the references as
pseudo-targets (``choice.py``); one of the four audits, beside ``dp``, ``unlearning`` and ``dataset_inference``,
none importing another."""
