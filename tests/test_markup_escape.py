"""No markup from user text (issue 27, item 4): strings from files and URLs reach Markdown and plotly literally.

A Markdown + HTML payload goes into every path a user controls (a CSV column name, a drifter id, a URL query
parameter, a file name, a lesson from $DISTVIZ_LESSONS) and the rendered element must hold the literal text.
AppTest gives an element's body as sent to the browser; Streamlit renders it with react-markdown (plus
remark-gfm, remark-math, remark-directive and its own text-level plugins), which Python cannot run, so the
Markdown bodies are rendered here with markdown-it-py (CommonMark + GFM tables and strikethrough: an
approximation of the browser) and checked against an emulation of Streamlit's own text-level patterns
(icons, emoji, arrows, bare-address links, directives, math) as found in Streamlit 1.67's frontend bundle.
plotly specs are read with json.loads(el.proto.spec): titles, axis titles and legend names must hold
``&lt;a`` (plotly draws the entity as '<'), never a tag.
"""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest

from distviz.ui.safe_text import WORD_JOINER, escape_markdown, restrict_markdown
from distviz.viz.safe_text import plot_text

markdown_it = pytest.importorskip("markdown_it")

PAYLOAD = ("![pixel](http://127.0.0.1:9/track.png) **[click me](http://x)** <a href='http://x'>a</a> $x$ :red[r]")
#: more of what Streamlit's Markdown does beyond CommonMark, one construct each
EXTRA = [
    ":material/home: :streamlit: :smile: :blue-badge[b] :color[c]{foreground=red}",
    "a -> b <- c <-> d -- e >= f <= g ~= h",
    "www.example.com a@b.example https://x.example/p?q=1 <https://y.example> <img src=x onerror=alert(1)>",
    "$$\\int$$ and \\(x\\) and ~~gone~~ and `code` and &lt;b&gt; and &#x3C;",
    "# heading",
    "> quote",
    "- item",
    "1. first",
    "| a | b |",
    "x_y_z __init__ _em_ snake_case_",
    "line one\nline two\n\n    indented code\n---",
    "%{x} %{y:.2f} back\\slash \\*star",
]


# ------------------------------------------------------------------------------------ render and inspect
def _md():
    return markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"])


def rendered_html(source: str) -> str:
    """HTML of a Markdown body (markdown-it-py; an approximation of Streamlit's react-markdown)."""
    return _md().render(source)


def rendered_text(source: str) -> str:
    """The visible text of a Markdown body: tags removed, entities decoded, word joiners (invisible) dropped,
    whitespace collapsed as a browser does."""
    text = html.unescape(re.sub(r"<[^>]+>", " ", rendered_html(source))).replace(WORD_JOINER, "")
    return " ".join(text.split())


def _text_nodes(source: str) -> list[str]:
    """The text runs markdown-it produces (consecutive text tokens joined: mdast's text nodes)."""
    runs = []
    for tok in _md().parse(source):
        if tok.type != "inline":
            continue
        cur = ""
        for child in tok.children or []:
            if child.type in ("text", "text_special"):
                cur += child.content
            else:
                if cur:
                    runs.append(cur)
                cur = ""
        if cur:
            runs.append(cur)
    return runs


#: Streamlit 1.67's own patterns (frontend StreamlitMarkdown bundle): applied to text nodes after parsing
_TEXT_PATTERNS = {
    "material icon": re.compile(r":material_(\w+):"),
    "streamlit logo": re.compile(r":streamlit:"),
    "emoji": re.compile(r":[A-Za-z0-9_+-][A-Za-z0-9_+-]*:"),
    "arrow": re.compile(r"(^|\s)(<->|->|<-|--|>=|<=|~=)(\s|$)"),
    "bare link": re.compile(r"(?i)(https?://|www(?=\.))([-.\w]+)"),
    "e-mail link": re.compile(r"([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)"),
}
#: applied to the source: ':material/' is rewritten before parsing; math is detected on the source less code
_CODE_OR_ESCAPE = re.compile(r"(?:^|(?<=\n)) {0,3}(`{3,}|~{3,})[\s\S]*?(?:\n[ \t]*\1|$)|(?<!`)(`+)[^`\n]+\2(?!`)|\\[\\$`]")
_MATH = [re.compile(r"(?<!\$)\$\$+(?!\$)[\s\S]*?\$\$"), re.compile(r"(?<!\$)\$(?![\s$])[^$\n]*?[^\s$]\$(?!\d)")]
#: a text directive: an unescaped colon before a letter (remark-directive)
_DIRECTIVE = re.compile(r"(?<!\\)(?:\\\\)*:[A-Za-z]")


def streamlit_effects(source: str) -> list[str]:
    """The Streamlit-specific constructs that would fire on a Markdown body (empty: none)."""
    out = []
    if ":material/" in source:
        out.append("material icon (source)")
    bare = _CODE_OR_ESCAPE.sub("_", source)
    if any(p.search(bare) for p in _MATH):
        out.append("math")
    if _DIRECTIVE.search(source):
        out.append("directive")
    for run in _text_nodes(source):
        out += [name for name, p in _TEXT_PATTERNS.items() if p.search(run)]
    return out


def assert_literal(body: str, expected: str) -> None:
    """`body` (a Markdown body as sent to the browser) renders as the literal `expected`, with no link, image,
    HTML, heading, list, quote, code, emphasis, math, icon, emoji, arrow or directive."""
    assert rendered_text(body) == " ".join(expected.split()), (body, rendered_html(body))
    assert_plain(body)


def assert_plain(body: str) -> None:
    """`body` renders as plain text: no Markdown construct and no Streamlit-specific one fires."""
    out = rendered_html(body)
    for tag in ("<a ", "<img", "<em>", "<strong>", "<code>", "<del>", "<h1", "<ul>", "<ol>", "<blockquote>", "<table>",
                "<pre>"):
        assert tag not in out, (tag, body, out)
    assert not streamlit_effects(body), (streamlit_effects(body), body)


def plotly_strings(spec) -> list[str]:
    """Every string of a plotly figure spec (titles, axis titles, annotations, names, hover text)."""
    if isinstance(spec, str):
        return [spec]
    if isinstance(spec, dict):
        return [s for v in spec.values() for s in plotly_strings(v)]
    if isinstance(spec, list):
        return [s for v in spec for s in plotly_strings(v)]
    return []


def assert_plotly_literal(specs: list, needle: str = "&lt;a href") -> None:
    """No tag of the payload in any figure, and the payload's escaped form in at least one."""
    strings = [s for spec in specs for s in plotly_strings(spec)]
    assert strings
    assert not [s for s in strings if "<a " in s or "<a>" in s or "$x$" in s], "a raw tag or formula in a figure"
    assert any(needle in s for s in strings), "the escaped payload is shown"


# ------------------------------------------------------------------------------------ the helpers
@pytest.mark.parametrize("text", [PAYLOAD, *EXTRA])
def test_escape_markdown_renders_the_literal_text(text):
    assert_literal(escape_markdown(text), text)


def test_escape_markdown_keeps_plain_sentences():
    for s in ["The uploaded CSV has no numeric column 'waiting'; pick another column.",
              "Fewer than 10 rows remain after dropping missing values; upload more data.",
              "x1 (input, unitless)", "u_av", "NLL (nats)", "projected to within 1e-6 of the boundary", "a < b"]:
        assert escape_markdown(s) == s.replace("<", "\\<")


def test_plot_text_escapes_tags_entities_templates_and_math():
    s = plot_text(PAYLOAD + " %{x} &lt; 5 > 3")
    assert "<" not in s and ">" not in s and "%{" not in s and "$" not in s
    assert html.unescape(s) == PAYLOAD + " %{x} &lt; 5 > 3", "plotly.js decodes the entities back to the text"
    assert plot_text(3) == "3"


def test_restrict_markdown_keeps_formatting_but_no_html_links_or_images():
    text = ("**Bold** and *it* and `code` and $x^2$ and :red[colour] and :material/home:. " + PAYLOAD
            + " <https://x.example> www.example.com https://y.example [ref] [r2][ref] and a@b.example\n\n"
            "[ref]: http://z.example\n")
    src = restrict_markdown(text)
    out = rendered_html(src)
    assert "<strong>Bold</strong>" in out and "<em>it</em>" in out and "<code>code</code>" in out
    assert "<a " not in out and "<img" not in out and "href" not in out.replace("href='http", ""), out
    runs = _text_nodes(src)
    assert not [r for r in runs if _TEXT_PATTERNS["bare link"].search(r) or _TEXT_PATTERNS["e-mail link"].search(r)]
    assert "\\<a href" in src, "raw HTML shown as text"
    assert ":red[colour]" in src and ":material/home:" in src, "Streamlit's colours and icons stay"
    assert restrict_markdown("E[T(y)] = (μ, μ² + σ²) and η\\* > 0") == "E[T(y)] = (μ, μ² + σ²) and η\\* > 0"
    assert restrict_markdown("\\](x)") == "\\](x)" and restrict_markdown("\\\\](x)") == "\\\\\\](x)"


# ------------------------------------------------------------------------------------ figures
def test_tree_importance_and_criterion_figures_escape_feature_names():
    from distviz import families
    from distviz.estimators import DistributionalBoosting
    from distviz.trees import HistTree
    from distviz.viz import trees as vt

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = X[:, 0] + 0.3 * rng.normal(size=200)
    model = DistributionalBoosting("normal", law="mgd", n_estimators=3, max_depth=2, trace_rows=50,
                                   random_state=0).fit(X, y)
    names = [PAYLOAD, "x2 <b>bold</b>"]
    specs = [vt.tree_figure(model.trace_, 1, names).to_dict(), vt.importance_figure(model.trace_, names).to_dict()]
    fam = families.get("normal")
    T = np.asarray(fam.sufficient_stats(y), dtype=float)
    pred = np.asarray(HistTree(max_depth=2).fit(X, T, family=fam, T=T).predict(X), dtype=float)
    specs.append(vt.criterion_comparison_figure(X[:, 0], T, {"variance": pred}, stat_names=fam.param_names,
                                                x_label=PAYLOAD).to_dict())
    assert_plotly_literal(specs)
    assert not [s for spec in specs for s in plotly_strings(spec) if "<b>bold" in s]
    top = vt.top_splits(model.trace_, 5, names)
    assert set(top["feature"]) <= set(names), "the table (st.dataframe: plain text) keeps the names as they are"


def test_fit_figures_escape_axis_labels():
    from distviz.viz import fits

    x = np.linspace(0, 1, 20)
    figs = [fits.regression_figure(x, x, x, x, x - 0.1, x + 0.1, x_label=PAYLOAD, y_label=PAYLOAD),
            fits.class_prob_figure(x, np.column_stack([x, 1 - x]), x_label=PAYLOAD),
            fits.particles_figure(x, np.tile(x[:, None], (1, 3)), x_label=PAYLOAD, y_label=PAYLOAD + ": particle"),
            fits.correlation_figure(x, 0 * x, x_label=PAYLOAD)]
    assert_plotly_literal([f.to_dict() for f in figs])
    for f in figs:
        assert f.layout.xaxis.title.text == plot_text(PAYLOAD)


# ------------------------------------------------------------------------------------ pages (AppTest)
st_testing = pytest.importorskip("streamlit.testing.v1")

from apptest_pages import open_page, page  # noqa: E402  (tests/ is on sys.path)

#: AppTest element kinds whose body Streamlit renders as Markdown
MARKDOWN_KINDS = ("markdown", "caption", "error", "warning", "info", "success", "title", "header", "subheader")


def markdown_bodies(at) -> list[str]:
    """Every Markdown body on the page, main area and sidebar."""
    return [el.value for kind in MARKDOWN_KINDS for el in at.get(kind)]


def assert_no_raw_payload(at, payload: str = PAYLOAD) -> None:
    """No Markdown body on the page carries a construct of the payload unescaped."""
    for body in markdown_bodies(at):
        for frag in ("![pixel](", "**[click me](", ":red[r]"):
            assert frag not in body, (frag, body)
        assert not re.search(r"(?<!\\)<a href", body), body


def _lab_csv(col: str) -> bytes:
    rows = "".join(f"{i / 10:.2f},{(i % 7) / 3 + i / 50:.3f}\n" for i in range(120))
    return (f'x,"{col}"\n' + rows).encode()


def test_lab_upload_column_name_is_literal_in_errors_and_figures():
    from distviz.ui.uploads import content_hash

    at = page(data="upload", rounds="20")
    assert not at.exception
    data = _lab_csv(PAYLOAD)
    at.sidebar.file_uploader[0].set_value(("cols.csv", data, "text/csv")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert_plotly_literal([json.loads(el.proto.spec) for el in at.get("plotly_chart")])
    assert_no_raw_payload(at)
    # the payload column as input and target: the sentence quotes its name
    digest = content_hash(data)
    at.sidebar.multiselect(key=f"lab.xcols.{digest}").set_value([PAYLOAD]).run()
    assert not at.exception
    assert len(at.error) == 1
    body = at.error[0].value
    expected = f"Column {PAYLOAD!r} is both an input and the target; pick different columns."
    assert body == escape_markdown(expected)
    assert_literal(body, expected)
    assert_no_raw_payload(at)


def test_drifter_upload_id_value_is_literal_in_the_error():
    at = open_page("app_pages/drifters.py", {"source": "upload"})
    assert not at.exception
    from distviz.ui.drifters import UPLOAD_PROMPT

    # issue 29: before a file is there the page asks for one; no error (it stayed beside the uploaded file's chip)
    assert not at.error and any(UPLOAD_PROMPT.split(" (")[0] in i.value for i in at.info)
    head = "Tx,Ty,Wx,Wy,u_av,v_av,lon,lat,t,u,v,id\n"
    rows = "".join(f"0.1,0.1,1,1,0.1,0.1,-60,35,{18000 + i},0.1,0.1,{i}\n" for i in range(20))
    bad = (head + rows + f'0.1,0.1,1,1,0.1,0.1,-60,35,18030,0.1,0.1,"{PAYLOAD}"\n').encode()
    at.sidebar.file_uploader[0].set_value(("drifters.csv", bad, "text/csv")).run()
    assert not at.exception
    bodies = [e.value for e in at.error]
    assert len(bodies) == 1, bodies
    assert "\\[click me\\]" in bodies[0], bodies
    assert_plain(bodies[0])
    assert PAYLOAD in rendered_text(bodies[0]), "the id value is quoted literally"
    assert_no_raw_payload(at)


@pytest.mark.parametrize("path", [None, "app_pages/drifters.py", "app_pages/posterior.py", "app_pages/explorer.py",
                                  "app_pages/lessons.py"])
def test_url_parameter_values_never_reach_the_page(path):
    from distviz.ui.lessons import PAGES, page_params

    names = {n for p in PAGES for n in page_params(p)} | {"present", "apply", "view", "round", "lesson", "step"}
    at = open_page(path, {n: PAYLOAD for n in names})
    assert not at.exception
    assert_no_raw_payload(at)
    assert not [v for v in at.query_params.values() if PAYLOAD in str(v)], "refused values leave the address"


def test_lesson_file_name_and_text_from_lessons_folder_are_literal(tmp_path, monkeypatch):
    name = "![pixel](x.png) **[click me](y)** <img src=z> $x$ :red[r]"
    (tmp_path / f"{name}.toml").write_text("title = \n", encoding="utf-8")   # not TOML: one sentence names it
    (tmp_path / "zz_hostile.toml").write_text(
        'title = "Hostile **lesson**"\n'
        f'summary = "{PAYLOAD}"\n'
        "[[step]]\n"
        'title = "Step <b>one</b> [t](http://x)"\n'
        "text = \"\"\"Read **this**. ![pixel](http://127.0.0.1:9/track.png) [click me](http://x) "
        "<a href='http://x'>a</a> www.example.com\"\"\"\n"
        'question = "Why [here](http://x)?"\n'
        'page = "lab"\n', encoding="utf-8")
    monkeypatch.setenv("DISTVIZ_LESSONS", str(tmp_path))
    from distviz.ui.lessons import load_lessons

    lessons, problems = load_lessons()
    hostile = lessons[-1]
    assert not hostile.trusted and all(ls.trusted for ls in lessons[:-1])
    at = open_page("app_pages/lessons.py", {"lesson": str(hostile.number)})
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == len(problems) == 1, errors
    assert name in rendered_text(errors[0])
    assert_plain(errors[0])
    bodies = markdown_bodies(at)
    for body in bodies:
        out = rendered_html(body)
        assert "<img" not in out and "<a " not in out, (body, out)
        assert not [r for r in _text_nodes(body) if _TEXT_PATTERNS["bare link"].search(r)], body
    assert any("<strong>this</strong>" in rendered_html(b) for b in bodies), "the lesson keeps its formatting"
