"""Family explorer: density / pmf of a family at chosen parameters, natural and mean parameters side by side."""

import numpy as np
import streamlit as st

from distviz import families
from distviz.ui.explorer import EXPLAINER, PAGE
from distviz.ui.figures import charts, shared_figures
from distviz.ui.lab import settings
from distviz.ui.layout import static_table
from distviz.ui.safe_text import escape_markdown
from distviz.ui.state import bound, user_errors
from distviz.viz import explorer as vx

st.title("Family explorer")
with st.expander("What am I looking at?"):
    st.markdown(EXPLAINER)
# the family and its parameter sliders in the sidebar, the figures in the body; the family (and K) are the Lab's,
# drawn by app.py (distviz.ui.lab.draw_settings), so the family explored is the family the Lab boosts
box = st.sidebar
fam_name, K = settings()
kwargs = {}
if fam_name == "categorical":
    kwargs["K"] = K
if fam_name == "mvn":
    kwargs["P"] = 2
with user_errors():
    family = families.get(fam_name, **kwargs)
    values = {}
    for spec in vx.conventional_specs(family):
        values[spec.name] = box.slider(
            spec.label, float(spec.lo), float(spec.hi), float(spec.default), step=float(spec.step),
            help=spec.help, **bound(f"{fam_name}.{spec.name}"))
    eta, mean = vx.natural_from_conventional(family, values)
    col_fig, col_tab = st.columns([3, 2], gap="medium")
    with col_fig:
        # one build per server for this family and these parameters: a class at the default view shares it
        fig = shared_figures("explorer.density", (fam_name, K, *(float(v) for v in np.ravel(eta))),
                             lambda: vx.density_figure(family, eta))
        charts().plotly_chart(fig, width="stretch", key=f"{PAGE}.density")
    with col_tab:
        st.markdown(f"**{escape_markdown(vx.describe_family(family))}**")
        st.markdown("Natural parameters **η** and mean parameters **η\\* = ∇A(η) = E[T(y)]**, "
                    "one row per sufficient statistic:")
        static_table(vx.parameter_table(family, eta))
        # two cards per row: four across the narrow column truncated A(η) and A*(η*) at 1400 px
        items = list(vx.summary_numbers(family, eta).items())
        for i in range(0, len(items), 2):
            for c, (k, v) in zip(st.columns(2), items[i:i + 2]):
                c.metric(k, vx.format_number(v))
