"""MkDocs hook: every formula rendered to MathML when the site is built.

`pymdownx.arithmatex` (generic mode) marks `$...$` as `<span class="arithmatex">\\(...\\)</span>`
and `$$...$$` as `<div class="arithmatex">\\[...\\]</div>`, leaving code alone. This hook
converts each marked formula with latex2mathml, so the pages need no JavaScript and no
network. A formula latex2mathml cannot convert fails the build, naming the page.
"""

import html
import re

from latex2mathml.converter import convert
from mkdocs.exceptions import PluginError

MARKED = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">\s*\\(?P<open>[(\[])(?P<tex>.*?)\\[)\]]\s*</(?P=tag)>',
    re.S,
)


def to_mathml(tex: str, display: bool = False) -> str:
    """MathML for one formula; a ValueError when latex2mathml leaves a command unconverted
    (it passes unknown commands such as `\\foo` through as text)."""
    try:
        mathml = convert(tex, display="block" if display else "inline")
    except Exception as error:  # latex2mathml raises its own exception types
        raise ValueError(f"latex2mathml cannot convert ${tex}$: {error}") from error
    if "\\" in mathml:
        raise ValueError(f"latex2mathml left a command unconverted in ${tex}$: {mathml}")
    return mathml


def render(page_html: str, where: str = "page") -> str:
    """`page_html` with every arithmatex formula replaced by MathML."""

    def replace(match: re.Match) -> str:
        display = match["open"] == "["
        try:
            mathml = to_mathml(html.unescape(match["tex"]), display)
        except ValueError as error:
            raise PluginError(f"{where}: {error}") from error
        return f'<div class="math">{mathml}</div>' if display else mathml

    return MARKED.sub(replace, page_html)


def on_page_content(html, page, config, files):  # noqa: ARG001 (MkDocs' hook signature)
    return render(html, page.file.src_uri)
