"""Write `distviz/data/sample/posterior_ood_default.json`: the Posterior page's OOD demo at its default setting.

Usage (from the repository root):

    python scripts/make_posterior_ood_default.py              # 4000 rounds, seed 322 (a few minutes on 2 cores)
    python scripts/make_posterior_ood_default.py --rounds 1000 --out /tmp/ood.json

The fit is `distviz.ui.posterior.fit_ood` (categorical WGBoost on UCI segment with the class 'sky' held
out; Section 4.3's learning rate 0.4, depth 3 and 4000 rounds). The file is plain JSON: accuracy, PR-AUC,
the OOD scores of the test rows and of the held-out class, the fit time and the settings; the page reads
it without pickle and ignores it (and fits) when its settings differ from the page's.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from distviz.ui.posterior import OOD_DEFAULT_ROUNDS, OOD_FIT, fit_ood, ood_precomputed_path, save_ood_result


def main(argv=None) -> int:
    """Parse arguments, fit and write the JSON result."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=ood_precomputed_path(), help="output JSON path")
    p.add_argument("--rounds", type=int, default=OOD_DEFAULT_ROUNDS)
    p.add_argument("--seed", type=int, default=OOD_FIT["seed"])
    a = p.parse_args(argv)
    res = fit_ood(a.rounds, a.seed)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    save_ood_result(res, a.out)
    print(f"wrote {a.out}: {a.rounds} rounds, accuracy {100 * res['accuracy']:.1f} %, OOD PR-AUC "
          f"{100 * res['pr_auc']:.1f} %, fit {res['seconds']:.0f} s, {a.out.stat().st_size / 1e3:.0f} kB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
