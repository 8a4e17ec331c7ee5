"""What each command logs to a tracker, from its typed results alone (test_mlflow.py reads a run back from a real
server): the params naming the audit, the headline metrics the gate reads, each section's numbers, the tags."""

from __future__ import annotations

from _built import dp, inferred, membership, unlearned

from miaudit import __version__
from miaudit.workflow.logged import config_hash, contents, name


def test_a_runs_metrics_per_attack_with_intervals_and_the_verdict() -> None:
    r = membership()
    logged = contents(r, "run")
    m = logged.metrics
    assert m["rmia.auc"] == 0.7 and m["rmia.auc_lo"] == 0.7 - 0.05 and m["lira.tpr_at_fpr_0.01"] == 0.04
    assert (m["rmia.tpr_at_fpr_0.01_lo"], m["rmia.tpr_at_fpr_0.01_hi"]) == (0.05, 0.08 + 0.05)
    assert m["verdict.leaks"] == 1 and m["verdict.adjusted_p_value"] == 6e-6 and m["records_at_risk"] == 3
    assert m["headline.auc"] == 0.7 and m["headline.tpr_at_fpr_0.01"] == 0.08  # the strongest, as the gate reads
    assert logged.params["attacks"] == "lira, rmia" and logged.params["dataset"] == "digits"
    assert logged.tags == {"miaudit.version": __version__, "miaudit.command": "run", "miaudit.verdict": "leaks"}
    assert logged.artifacts == []  # no folder given


def test_the_other_commands_headline_numbers() -> None:
    d = contents(dp(True), "dp-audit")
    assert d.metrics["dp.epsilon_lb"] == 2.5 and d.metrics["dp.violated"] == 1 and d.params["dp.kind"] == "one-run"
    assert d.metrics["headline.epsilon_lb"] == 2.5 and d.tags["miaudit.verdict"] == "violation"
    u = contents(unlearned("not_forgotten"), "unlearn")
    assert u.metrics["unlearning.remembered"] == 4 and u.metrics["unlearning.p_remembered"] == 0.001
    assert u.params["unlearning.forget"] == "50" and u.tags["miaudit.verdict"] == "not_forgotten"
    i = contents(inferred(None), "infer-dataset")
    assert i.metrics["inference.p_value"] == 0.001 and i.metrics["inference.blind_auc"] == 0.51
    assert "inference.used" not in i.metrics and i.tags["miaudit.verdict"] == "none"  # inconclusive


def test_names_trackers_accept_and_one_hash_per_audit() -> None:
    assert name("lira (n=2)") == "lira_n_2" and name("rmia [a=0.3]") == "rmia_a_0.3"
    r = membership()
    tracked = r.model_copy(update={"config": {**r.config, "gate": ["leaks"], "tracking": {"mlflow": "http://x"}}})
    assert config_hash(tracked) == config_hash(r) != config_hash(r.model_copy(update={"config": {"seed": 1}}))
