"""Home / Lab: choose family, data, algorithm and knobs; fit with progress; show the fitted distribution."""

import streamlit as st

from distviz.ui.common import explainer, fit_or_last, fit_summary
from distviz.ui.figures import charts, show_row
from distviz.ui.lab import settings
from distviz.ui.shared_views import lab_row

LAB_TEXT = """
Pick an output **family**, a **data set** and an **algorithm** in the sidebar (rows, rounds, learning
rate, tree depth and the rest are under **More settings**, summarised in one line while closed); the model is fitted
(with a progress bar) and cached, and every setting is in the page address, so copying the URL shares
this exact view. The first plot shows the data (grey), the fitted mean (coloured line) and the fitted
90% predictive band; for synthetic data the true mean (dashed) and true band (grey) are known. The
second plot shows the training and validation negative log-likelihood per boosting round and the
generalised entropy of each round's tree partition. WGBoost shows its particles per input instead:
each input carries N particles that flow to the posterior of the output's parameters.
**Model checks** (folded at the bottom) refit the same settings with 20% of the rows held out and score those
rows: a PIT histogram (flat when the predicted laws are right), the coverage of the central intervals at
levels 10% to 95% against the diagonal, the CRPS and the held-out NLL.
Go to **Evolution** to replay the rounds, to **Split gains & entropy** for the trees.
"""

st.title("distviz · Lab")
st.caption("An interactive laboratory for distributional gradient boosting: mirror (MGD) vs natural (NGD) "
           "boosting, WGBoost particles, NGBoost charts.")
explainer(LAB_TEXT)
cfg, upload = settings()   # the sidebar's fit settings, drawn by app.py (distviz.ui.lab.draw_settings)
res = fit_or_last(cfg, upload)
if res is None:
    st.stop()
fit_summary(res)
# one build per fit, shared by the class's sessions; several panels (categorical WGBoost) span the page, the others
# stand side by side: one chart of two panels where they allow it
wide, row, shared = lab_row(res)
for i, fig in enumerate(wide):
    charts().plotly_chart(fig, key=f"lab.wide{i}")
show_row(row, key="lab.fig", shared=shared)
from distviz.ui.checks import TEST_FRACTION, checks_expander, lab_checks  # noqa: E402 (after the fit is drawn)

exp = checks_expander(st, f"Model checks on {TEST_FRACTION:.0%} held-out rows: PIT, coverage, CRPS, test NLL",
                      key="lab.checks_open")
if exp is not None:
    lab_checks(cfg, upload, box=exp)
