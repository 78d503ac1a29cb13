"""Text from files and URLs, made literal for Streamlit's Markdown (st.markdown, st.caption, st.error, labels).

Streamlit renders the body of ``st.markdown``, ``st.caption``, ``st.error`` / ``st.warning`` / ``st.info`` /
``st.success``, ``st.toast``, metric, expander, tab and page-link labels and headers as Markdown
(CommonMark with GitHub's extensions, react-markdown in the browser). Besides Markdown's own constructs
(emphasis, code, links, images that the browser fetches at once, raw HTML, entities, tables, headings and
lists) the installed Streamlit (1.67) adds ``$...$`` / ``$$...$$`` math (KaTeX), ``:red[...]``-style
directives, ``:material/name:`` icons and ``:emoji:`` short codes, and turns bare ``http://``, ``www.``
and e-mail addresses into links and `` -> ``, `` <= ``, `` -- `` and similar into arrows and dashes.
The last four work on the parsed text, after backslash escapes are resolved, so a backslash cannot stop
them; :func:`escape_markdown` breaks them with an invisible WORD JOINER (U+2060) instead.

Every string that comes from a file or a URL (column names, file names, drifter ids, values, and the
sentences of DataError / ConfigError that quote them) goes through :func:`escape_markdown` before it
reaches such a sink; pages show error sentences with :func:`show_error`, which escapes the whole sentence.
Lesson files shipped in ``distviz/lessons/`` are trusted Markdown; lessons read from the folder named by
``$DISTVIZ_LESSONS`` are written by other people and go through :func:`restrict_markdown`, which keeps
their formatting (emphasis, code, lists, math, colours) but no raw HTML, links, images or autolinks.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["WORD_JOINER", "escape_markdown", "restrict_markdown", "show_error", "show_warning"]

#: an invisible character that joins its neighbours: it breaks Streamlit's text-level patterns without showing
WORD_JOINER = "\u2060"

_LINE_BREAKS = re.compile(r"[\r\n\v\f\x85\u2028\u2029]+")
#: Streamlit's typographic replacements (`` -> `` becomes an arrow, `` -- `` a dash, `` >= `` a sign), whole words
_TYPOGRAPHY = re.compile(r"(?<!\S)(<->|->|<-|--|>=|<=|~=)(?!\S)")
#: a colon that could open a directive (:red[...]), an icon (:material/x:), an emoji (:smile:) or a URL (http://)
_COLON = re.compile(r":(?=[A-Za-z0-9_+/-])")
_WWW = re.compile(r"(?i)(www)(?=\.)")
_AT = re.compile(r"@(?=[-\w])")
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
#: characters that are backslash-escaped wherever they stand
_ALWAYS = "\\`*[]<|~$"
#: a block marker at the start: heading, quote, list item, setext underline, ordered list item
_LEADING = re.compile(r"^( ?)([#>+=-])")
_LEADING_ORDERED = re.compile(r"^( ?\d+)([.)])")


def _escape_chars(s: str) -> str:
    """Backslash before every character of _ALWAYS and before an ``_`` that could mark emphasis (one not standing
    between two letters or digits)."""
    out = []
    for i, ch in enumerate(s):
        if ch == "_":
            j = i
            while j < len(s) and s[j] == "_":
                j += 1
            k = i
            while k > 0 and s[k - 1] == "_":
                k -= 1
            before = s[k - 1] if k > 0 else " "
            after = s[j] if j < len(s) else " "
            if not (before.isalnum() and after.isalnum()):
                out.append("\\")
        elif ch in _ALWAYS:
            out.append("\\")
        out.append(ch)
    return "".join(out)


def escape_markdown(text: Any) -> str:
    """`text` as Streamlit Markdown that renders as the literal characters, on one line.

    Parameters
    ----------
    text : Any
        Any value (converted with ``str``): a column name, a file name, an error sentence that quotes them.

    Returns
    -------
    str
        Markdown whose rendering is `text` itself: line breaks become spaces; ``\\``, `````, ``*``, ``[``,
        ``]``, ``<``, ``|``, ``~``, ``$``, an ``_`` that could mark emphasis, an ``&`` that would start an
        entity and a block marker at the start (``#``, ``>``, ``-``, ``+``, ``=``, ``1.``) are
        backslash-escaped; a WORD JOINER (U+2060, invisible) follows a colon before a letter, digit, ``_``,
        ``+``, ``-`` or ``/`` (no directive, icon, emoji or ``http://`` link), the ``www`` of ``www.`` and
        an ``@`` (no autolink), and the first character of a free-standing ``->``, ``<-``, ``<->``,
        ``--``, ``>=``, ``<=`` or ``~=`` (no arrow or dash). Plain words and sentences come back unchanged.

    Notes
    -----
    The result is meant for the Markdown sinks of Streamlit; inside a code span the escapes would show.
    Widget options (``st.selectbox`` and the like), ``st.text``, ``st.code`` and ``st.dataframe`` show
    plain text and need no escaping.
    """
    s = _LINE_BREAKS.sub(" ", str(text))
    s = re.sub(r"^\s+", " ", s)
    # the invisible joiners first (they are no punctuation, so the escapes below do not see them)
    s = _TYPOGRAPHY.sub(lambda m: m.group(1)[0] + WORD_JOINER + m.group(1)[1:], s)
    s = _COLON.sub(":" + WORD_JOINER, s)
    s = _WWW.sub(r"\1" + WORD_JOINER, s)
    s = _AT.sub("@" + WORD_JOINER, s)
    s = _escape_chars(s)
    s = _ENTITY.sub("\\\\&", s)
    s = _LEADING.sub(r"\1\\\2", s)
    return _LEADING_ORDERED.sub(r"\1\\\2", s)


def _unescaped(pattern: str):
    """A regex for `pattern` preceded by an even number of backslashes (so not already escaped); group 1 holds them."""
    return re.compile(r"(?<!\\)((?:\\\\)*)" + pattern)


#: '<' that would start raw HTML or an autolink; ']' that would close a link, an image or a link definition
_HTML_OPEN = _unescaped(r"<(?=[A-Za-z/!?])")
_LINK_CLOSE = _unescaped(r"\](?=[(\[:])")
_URL = re.compile(r"(?i)\b(https?|ftp):(?=//)")


def restrict_markdown(text: str) -> str:
    """Markdown from a less trusted author (a lesson file from $DISTVIZ_LESSONS) without HTML, links or images.

    Parameters
    ----------
    text : str
        Markdown as written in the file.

    Returns
    -------
    str
        The same Markdown with every ``<`` that would open raw HTML or an autolink and every ``]`` that would
        close a link, an image (``](``), a reference (``][``) or a link definition (``]:``) backslash-escaped,
        and a WORD JOINER (U+2060, invisible) in ``http://``, ``https://``, ``ftp://``, ``www.`` and after
        ``@`` so that no bare address becomes a link. Emphasis, code, lists, tables, math, ``:color[...]``
        and ``:material/...:`` icons (shipped with Streamlit, offline) keep working. Inside a code span a
        ``<`` before a letter or a ``](`` shows with its backslash.
    """
    s = _HTML_OPEN.sub(lambda m: m.group(1) + "\\<", str(text))
    s = _LINK_CLOSE.sub(lambda m: m.group(1) + "\\]", s)
    s = _URL.sub(lambda m: m.group(1) + ":" + WORD_JOINER, s)
    s = _WWW.sub(r"\1" + WORD_JOINER, s)
    return _AT.sub("@" + WORD_JOINER, s)


def show_error(message: Any, *, icon: str | None = None, box: Any = None) -> None:
    """``st.error`` of one sentence that may quote user strings, shown literally (:func:`escape_markdown`).

    Parameters
    ----------
    message : Any
        The sentence (an exception's text, converted with ``str``).
    icon : str, optional
        Passed to ``st.error``.
    box : Any, optional
        The container to draw in (``st`` by default).
    """
    import streamlit as st

    (st if box is None else box).error(escape_markdown(message), icon=icon)


def show_warning(message: Any, *, icon: str | None = None, box: Any = None) -> None:
    """``st.warning`` of one sentence, shown literally (:func:`escape_markdown`); see :func:`show_error`."""
    import streamlit as st

    (st if box is None else box).warning(escape_markdown(message), icon=icon)
