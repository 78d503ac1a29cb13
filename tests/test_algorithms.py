"""The app's algorithm registry (distviz.ui.algorithms) and the Streamlit-free fit layer (issue 32, item 1).

Every algorithm's factory makes an unfitted estimator of its kind's class for a family it fits and refuses the
others in one sentence; every setting an algorithm reads is a Lab setting; every algorithm a shipped lesson names
exists and fits the lesson's family; the fit modules import no Streamlit.  No fit runs here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from distviz import families
from distviz.errors import ConfigError
from distviz.ui import algorithms, fits
from distviz.ui.algorithms import REGISTRY, Kind

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = families.available()
CLASS = {Kind.LAW: "DistributionalBoosting", Kind.WG: "WGBoost", Kind.NGBOOST: "NGBoost", Kind.GP: "SparseGP"}


@pytest.mark.parametrize("key", list(REGISTRY))
def test_every_factory_makes_its_kinds_estimator_and_refuses_other_families(key):
    algo = REGISTRY[key]
    assert algo.key == key and algo.label and algo.help
    ok = [f for f in FAMILIES if algo.compatible(f) is None]
    assert ok, key
    for fam in FAMILIES:
        cfg = fits.FitConfig(family=fam, algorithm=key, n_estimators=7, max_depth=2, seed=3)
        if fam in ok:
            est = fits.make_estimator(cfg)
            assert type(est).__name__ == CLASS[algo.kind], (key, fam)
            assert not hasattr(est, "n_features_in_"), "unfitted"
        else:
            with pytest.raises(ConfigError) as info:
                fits.make_estimator(cfg)
            assert str(info.value) == algo.why_not and str(info.value).endswith(".")
    assert algo.cost.seconds(fits.FitConfig(family=ok[0], algorithm=key), 500, 1) > 0
    assert algo.cost.knobs(fits.FitConfig(family=ok[0], algorithm=key)).startswith("the ")


def test_settings_views_and_lookups():
    for algo in REGISTRY.values():
        assert set(algo.url_params) <= set(fits.URL_FIELDS), algo.key
        assert set(algo.url_params) <= set(fits.LAB_PARAMS)
        assert algo.offers_split_gains <= algo.traces_rounds and algo.has_particles <= algo.traces_rounds
        assert algo.boosted == bool(algo.url_params)
    assert set(fits.LAB_PARAMS) == set(fits.COMMON_PARAMS) | set(algorithms.url_params())
    assert algorithms.wg_methods() == ["ska", "fka", "nka", "langevin"]
    assert all(algorithms.wg_method(m).key == f"wg_{m}" for m in algorithms.wg_methods())
    with pytest.raises(ConfigError, match="Unknown algorithm"):
        algorithms.get("nope")
    assert fits.default_learning_rate("gd", "normal") == 0.01 and fits.default_learning_rate("mgd", "normal") == 0.1


def test_every_algorithm_a_lesson_names_exists_and_fits_its_family():
    from distviz.ui.lesson_check import page_fit_config
    from distviz.ui.lessons import load_lessons

    lessons, problems = load_lessons()
    assert lessons and not problems, problems
    named = 0
    for lesson in lessons:
        for step in lesson.steps:
            for name in ("algo", "salgo"):
                if name in step.params:
                    named += 1
                    assert step.params[name] in REGISTRY, (lesson.file, step.title)
            cfg = page_fit_config(step.page, step.params)
            if cfg is not None:
                assert algorithms.compatible(cfg.algorithm, cfg.family) is None, (lesson.file, step.title)
    assert named


@pytest.mark.parametrize("module", ["algorithms", "costs", "fits", "params"])
def test_fit_modules_import_no_streamlit(module):
    tree = ast.parse((ROOT / "distviz" / "ui" / f"{module}.py").read_text(encoding="utf-8"))
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [n for n in names if n.split(".")[0] == "streamlit"], module
