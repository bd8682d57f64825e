"""docs/global-battery.md states the two conventions that decide numbers compared with
other tools: the Hosmer-Lemeshow degrees of freedom (the groups formed, R's rule since
ResourceSelection 0.3-6) and the clip before the logit of the logistic recalibration,
with the value the code uses."""

from __future__ import annotations

import numpy as np

from calaudit.inference.classical import hosmer_lemeshow_test
from calaudit.metrics.clinical import CLIP
from tests.conftest import ROOT

PAGE = " ".join((ROOT / "docs" / "global-battery.md").read_text(encoding="utf-8").split())


def test_hosmer_lemeshow_df_is_documented_as_the_groups_formed():
    assert "df = G - 2 with G the groups actually formed" in PAGE
    assert "ResourceSelection 0.3-6" in PAGE
    p = np.repeat([0.1, 0.2, 0.3, 0.6], 50)  # ten groups requested, three formed
    y = (np.random.default_rng(0).random(p.size) < p).astype(int)
    result = hosmer_lemeshow_test(y, p, 10)
    assert len(result.observed) == 3 and result.df == 3 - 2


def test_the_logit_clip_is_documented_with_its_value_and_the_other_conventions():
    assert f"clipped to [{CLIP:g}, 1 - {CLIP:g}]" in PAGE and "`params.logit_clip`" in PAGE
    for other in ("calzone", "1e-7", "val.prob", "validation/ logit_clip.py"):
        assert other in PAGE, other
