"""Text from files and URLs, made literal for plotly: titles, axis titles, legend names, hover text and templates.

plotly.js reads a small HTML subset in every piece of text it draws (``<b>``, ``<i>``, ``<br>``, ``<sup>``,
``<span style>``, ``<a href>``), converts HTML entities, substitutes ``%{variable}`` in hover and text
templates, and typesets ``$...$`` with MathJax where a page has loaded it. A column name such as
``<a href='http://x'>click</a>`` would become a link in an axis title. :func:`plot_text` turns such a
string into the entity-escaped form that plotly draws as the literal characters; the figure builders
in :mod:`distviz.viz` apply it to every label that can come from a user's file (column names, feature
names, drifter ids), never to their own titles, which use the HTML subset on purpose.
"""

from __future__ import annotations

__all__ = ["plot_text"]

#: character -> the entity plotly.js draws as that character (svg_text_utils.convertEntities)
_ENTITIES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("$", "&#36;"))


def plot_text(text: object) -> str:
    """`text` as plotly text that draws as the literal characters.

    Parameters
    ----------
    text : object
        Any value; it is converted with ``str``.

    Returns
    -------
    str
        The text with ``&``, ``<``, ``>`` and ``$`` written as HTML entities (no tag, link, entity or
        MathJax formula can form) and ``%{`` as ``&#37;{`` (no hover- or text-template substitution).
        Safe in titles, axis titles, annotations, legend names, hover text and hover templates.

    Examples
    --------
    >>> plot_text("<a href='http://x'>a</a> %{x} $y$")
    "&lt;a href='http://x'&gt;a&lt;/a&gt; &#37;{x} &#36;y&#36;"
    """
    s = str(text)
    for ch, ent in _ENTITIES:   # "&" first: the entities written afterwards are not escaped again
        s = s.replace(ch, ent)
    return s.replace("%{", "&#37;{")
