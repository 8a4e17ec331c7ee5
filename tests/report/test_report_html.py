"""report.html: one self-contained page with the metrics table, the figures and the most exposed
records, checked as text and rendered in a real headless browser; scores.parquet beside scores.csv."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from miaudit import audits
from miaudit.config.run import RunConfig
from miaudit.membership import decide
from miaudit.report import html as report_html
from miaudit.results import AttackRow

ATTACKS = [{"name": "attack-p"}, {"name": "bmia", "references": 1, "samples": 50}, {"name": "lira", "references": 2}]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory, make_config: Callable[..., RunConfig]) -> Path:
    """The tiny audit with a test that calibrates its p-values (BMIA), written once."""
    cfg = make_config(cache_dir=str(tmp_path_factory.mktemp("cache")), attacks=ATTACKS)
    out = tmp_path_factory.mktemp("report") / "out"
    decide.write(audits.run_config(cfg), out)
    return out


class Resources(HTMLParser):
    """Every resource a page loads (src/href), and the images it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.images: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        self.urls += [a[k] for k in ("src", "href") if k in a and tag != "a"]
        if tag == "img":
            self.images.append(a["src"])


@pytest.mark.slow
def test_report_html_is_self_contained(written: Path) -> None:
    text = (written / "report.html").read_text(encoding="utf-8")
    page = Resources()
    page.feed(text)
    assert all(u.startswith("data:") for u in page.urls), [u[:40] for u in page.urls if not u.startswith("data:")]
    assert len(page.images) == 3 and all(u.startswith("data:image/png;base64,") for u in page.images)
    assert "<script" not in text and not re.search(r"url\(|@import", text)
    assert "<title>miaudit report: digits" in text


@pytest.mark.slow
def test_report_html_content(written: Path) -> None:
    text = (written / "report.html").read_text(encoding="utf-8")
    for label in ("attack-p", "bmia (n=1)", "lira (n=2)"):
        assert f"<td>{label}</td>" in text  # a metrics row per attack
    assert "bmia (n=1): calibrated" in text and "lira (n=2): calibrated" in text  # which p-values each shows
    assert "Most exposed records" in text and "Environment" in text and "batch_size" in text


def test_metric_rows_show_intervals_when_present() -> None:
    attack = {"label": "x", "references": 1, "auc": 0.7, "tpr_at_fpr": {"0.001": 0.01, "0.01": 0.05, "0.05": 0.2}}
    attack |= {"unreliable_fpr_levels": ["0.001"], "seconds": {"reference_training": 1.0, "attack": 0.1}}
    attack |= {"name": "x", "kind": "test", "params": {}, "p_values": None}
    ci = {"auc_ci": [0.65, 0.75], "tpr_at_fpr_ci": {"0.01": [0.03, 0.08]}}
    [plain] = report_html.metric_rows([AttackRow.model_validate(attack)], known=True)
    [with_ci] = report_html.metric_rows([AttackRow.model_validate(attack | ci)], known=True)
    assert plain["cells"][:3] == ["0.700", "1.00 †", "5.00"]
    assert with_ci["cells"][:3] == ["0.700 [0.650, 0.750]", "1.00 †", "5.00 [3.00, 8.00]"]


@pytest.mark.slow
def test_scores_parquet_matches_csv(written: Path) -> None:
    csv, parquet = pd.read_csv(written / "scores.csv"), pd.read_parquet(written / "scores.parquet")
    assert list(parquet.columns) == list(csv.columns) and len(parquet) == len(csv)
    pd.testing.assert_frame_equal(parquet, csv, check_dtype=False, rtol=1e-7)


CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@pytest.mark.slow
@pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER), reason="needs Debian's chromium and chromium-driver (installed by .ci/run)"
)
def test_report_html_renders_in_a_browser(written: Path) -> None:
    webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (the test extra)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    try:
        driver.get((written / "report.html").as_uri())
        assert driver.title == "miaudit report: digits"
        rows = driver.execute_script("return document.querySelectorAll('#metrics tbody tr').length")
        assert rows == len(ATTACKS)
        sizes = driver.execute_script(
            "return Array.from(document.images, i => [i.id, i.complete, i.naturalWidth, i.clientWidth])"
        )
        assert [s[0] for s in sizes] == ["roc", "scores", "pvalues"]
        assert all(complete and natural > 100 and shown > 100 for _, complete, natural, shown in sizes), sizes
        errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
        assert errors == []
    finally:
        driver.quit()
