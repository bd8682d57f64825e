"""Three audits of real models, read as a reviewer reads them: the first screen of the HTML
report and page 1 of the PDF.

Builds held-out predictions of three scikit-learn models on the shared datasets and audits
each with ``calaudit test`` (JSON, HTML, PDF, Markdown):

* ``global_failure``: gradient boosting grown deep on COMPAS (two-year recidivism), which
  over-fits: its probabilities are too extreme everywhere (the global tests fail);
* ``group_failure``: a logistic regression of home ownership on the 2019 American Housing
  Survey without the ``BLACK`` indicator, audited with ``--covariates BLACK,HHAGE``: right
  on average, wrong for Black households (the local test fails);
* ``pass``: a logistic regression of the same outcome that has ``BLACK`` and age bands
  among its features, audited with ``--covariates BLACK,HHAGE`` (nothing to find).

Then it measures what a reviewer sees: the HTML's height with its sections collapsed at
1,280 px (headless Chromium), the PDF's pages without and with ``--pdf-appendix``, and
writes PNGs of the first screen and of page 1 into the output directory. Needs the shared
datasets, scikit-learn, Chromium and poppler; the sample data's audit is measured too.
The table is saved as ``validation/first_screen.txt``.

    python validation/first_screen.py OUT_DIR
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

ROOT = Path(__file__).resolve().parents[1]
DATASETS = Path("/work/shared/datasets")
from cdp_browser import Chromium, find_chromium, inspect_page  # noqa: E402


def global_failure() -> tuple[pd.DataFrame, list[str]]:
    data = pd.read_csv(DATASETS / "compas_two_year.csv")
    features = ["age", "priors_count", "juv_fel_count", "juv_misd_count", "juv_other_count",
                "decile_score", "days_b_screening_arrest"]
    x = data[features].fillna(0.0).to_numpy()
    train, test = train_test_split(np.arange(len(data)), test_size=0.5, random_state=0)
    model = GradientBoostingClassifier(n_estimators=300, max_depth=6, learning_rate=0.2,
                                       random_state=0).fit(x[train], data["two_year_recid"]
                                                           .to_numpy()[train])
    frame = data.iloc[test][["race", "sex", "age"]].reset_index(drop=True)
    frame["label"] = data["two_year_recid"].to_numpy()[test]
    frame["prob"] = model.predict_proba(x[test])[:, 1]
    return frame, ["race", "sex", "age"]


def group_failure() -> tuple[pd.DataFrame, list[str]]:
    data = pd.read_csv(DATASETS / "ahs2019_homeownership.csv", index_col=0)
    features = ["HINCP", "HHAGE", "NUMPEOPLE", "METRO", "HHGRAD", "HHMAR", "HHSEX"]
    train, test = train_test_split(np.arange(len(data)), test_size=5000, random_state=0)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    model.fit(data[features].to_numpy()[train], data["OWNER"].to_numpy()[train])
    frame = pd.DataFrame({"BLACK": np.where(data["BLACK"].to_numpy()[test] > 0, "yes", "no"),
                          "HHAGE": data["HHAGE"].to_numpy()[test]})
    frame["label"] = data["OWNER"].to_numpy()[test].astype(int)
    frame["prob"] = model.predict_proba(data[features].to_numpy()[test])[:, 1]
    return frame, ["BLACK", "HHAGE"]


def passing() -> tuple[pd.DataFrame, list[str]]:
    """A logistic regression that has what the audit asks about: ``BLACK`` and eight age
    bands among its features (with income, household and region)."""
    data = pd.read_csv(DATASETS / "ahs2019_homeownership.csv", index_col=0)
    bands = pd.get_dummies(pd.qcut(data["HHAGE"], 8, labels=False), prefix="age")
    regions = pd.get_dummies(data["DIVISION"], prefix="division")
    features = pd.concat([data[["HINCP", "NUMPEOPLE", "METRO", "HHGRAD", "HHMAR", "HHSEX",
                                "BLACK", "HHCITSHP"]], bands, regions], axis=1).to_numpy(float)
    train, test = train_test_split(np.arange(len(data)), test_size=5000, random_state=1)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    model.fit(features[train], data["OWNER"].to_numpy()[train])
    frame = pd.DataFrame({"BLACK": np.where(data["BLACK"].to_numpy()[test] > 0, "yes", "no"),
                          "HHAGE": data["HHAGE"].to_numpy()[test]})
    frame["label"] = data["OWNER"].to_numpy()[test].astype(int)
    frame["prob"] = model.predict_proba(features[test])[:, 1]
    return frame, ["BLACK", "HHAGE"]


CASES = {"global_failure": global_failure, "group_failure": group_failure, "pass": passing}


def audit(name: str, csv: Path, covariates: list[str], out: Path) -> dict:
    stem = out / name
    command = [sys.executable, "-m", "calaudit", "test", str(csv), "--covariates",
               ",".join(covariates), "--json", f"{stem}.json", "--html", f"{stem}.html",
               "--pdf", f"{stem}.pdf", "--md", f"{stem}.md", "--quiet"]
    code = subprocess.run(command, check=False).returncode
    if code not in (0, 1):
        raise SystemExit(f"{name}: calaudit exited with {code}")
    subprocess.run([sys.executable, "-m", "calaudit", "report", f"{stem}.json", "--pdf",
                    f"{stem}-appendix.pdf", "--pdf-appendix"], check=True,
                   stdout=subprocess.DEVNULL)
    return measure(name, stem)


def pages(pdf: Path) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True)
    return int(next(line.split()[1] for line in info.stdout.splitlines()
                    if line.startswith("Pages:")))


def measure(name: str, stem: Path) -> dict:
    with Chromium(find_chromium()) as browser:
        page = inspect_page(browser, Path(f"{stem}.html"), width=1280)
    Path(f"{stem}-html.png").write_bytes(page.screenshot)
    height = int.from_bytes(page.screenshot[20:24], "big")
    subprocess.run(["pdftoppm", "-r", "60", "-png", "-f", "1", "-l", "1", f"{stem}.pdf",
                    f"{stem}-page"], check=True)
    verdict = json.loads(Path(f"{stem}.json").read_text())["verdict"]
    return {"audit": name, "verdict": verdict, "html_height_px": height,
            "pdf_pages": pages(Path(f"{stem}.pdf")),
            "pdf_pages_with_appendix": pages(Path(f"{stem}-appendix.pdf"))}


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rows = [audit("sample", ROOT / "sample_data" / "credit_default.csv", ["age", "race"], out)]
    for name, build in CASES.items():
        frame, covariates = build()
        csv = out / f"{name}.csv"
        frame.to_csv(csv, index=False)
        rows.append(audit(name, csv, covariates, out))
    text = pd.DataFrame(rows).to_string(index=False) + "\n"
    print(text, end="")
    Path(__file__).with_name("first_screen.txt").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "first_screen_out"))
