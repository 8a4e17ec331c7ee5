"""miaudit: membership inference auditing.

The front door: ``miaudit.run(config)`` runs an audit from a config (dict, YAML
path or RunConfig); ``miaudit.attacks.registry`` lists and runs attacks on plain
arrays.
"""
from __future__ import annotations

__version__ = "0.1.0"
