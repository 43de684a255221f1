"""Plotly figures that draw in JupyterLab, in the static site and in a plain browser."""

from __future__ import annotations

import html
import json
import re
import uuid

from transformer_lab.viz.figure_text import figure_words

__all__ = ["figure_html", "mimebundle", "show"]

PLOTLY_MIME = "application/vnd.plotly.v1+json"

# No Plotly logo, and no "Share chart..." button (it would upload the figure to Plotly's
# cloud service): the figures never talk to the network.
PLOTLY_CONFIG = {
    "displaylogo": False,
    "responsive": True,
    "showSendToCloud": False,
    "modeBarButtonsToRemove": ["sendChartToCloud", "sendDataToCloud"],
}

_DRAW_SCRIPT = """(function () {{
  var fig = {fig};
  var id = {div_id};
  function draw(P) {{
    var gd = document.getElementById(id);
    if (gd && !gd.classList.contains("js-plotly-plot")) {{ P.newPlot(gd, fig); }}
  }}
  function fallback() {{
    if (window.Plotly) {{ draw(window.Plotly); return; }}
    if (typeof window.require === "function" && window.require.amd !== undefined) {{
      window.require(["plotly"], draw); return;
    }}
    var gd = document.getElementById(id);
    if (gd) {{ gd.textContent = "This figure needs plotly.js, which this page did not load."; }}
  }}
  if (window.Plotly) {{ draw(window.Plotly); }}
  else if (document.readyState === "complete") {{ fallback(); }}
  else {{ window.addEventListener("load", fallback); }}
}})();"""


def _figure_dict(fig) -> dict:
    """The figure as plain JSON-compatible data (numpy arrays become lists or typed arrays)."""
    import plotly.io as pio

    return json.loads(pio.to_json(fig, validate=False))


def _title_of(fig) -> str:
    """The title as plain text: line breaks become spaces, Plotly's other tags go."""
    title = fig.layout.title.text if fig.layout.title is not None else None
    if title:
        title = " ".join(re.sub(r"<[^>]*>", "", re.sub(r"<br\s*/?>", " ", title)).split())
    return title or "Interactive figure"


def figure_html(fig, *, alt: str | None = None, div_id: str | None = None) -> str:
    """The ``text/html`` of :func:`show`: a div and a script drawing with the global Plotly."""
    div_id = div_id or f"tl-plotly-{uuid.uuid4().hex[:12]}"
    fig_dict = _figure_dict(fig)
    fig_dict["config"] = {**PLOTLY_CONFIG, **fig_dict.get("config", {})}
    # "</" inside a script element would end it early; "<\/" is the same string in JS.
    fig_json = json.dumps(fig_dict, separators=(",", ":")).replace("</", "<\\/")
    title = _title_of(fig)
    label = alt or title
    height = fig_dict.get("layout", {}).get("height") or 450
    script = _DRAW_SCRIPT.format(fig=fig_json, div_id=json.dumps(div_id))
    return (
        f'<div class="tl-plotly" role="figure" aria-label="{html.escape(label)}" '
        f'data-tl-title="{html.escape(title)}">'
        f'<div id="{div_id}" class="plotly-graph-div" style="height:{int(height)}px;width:100%;">'
        f"</div><script>{script}</script></div>"
    )


def mimebundle(fig, *, alt: str | None = None) -> dict:
    """The MIME bundle :func:`show` publishes (plotly JSON for JupyterLab, HTML for the site)."""
    fig_dict = _figure_dict(fig)
    fig_dict["config"] = {**PLOTLY_CONFIG, **fig_dict.get("config", {})}
    n_traces = len(fig_dict.get("data", []))
    return {
        PLOTLY_MIME: fig_dict,
        "text/html": figure_html(fig, alt=alt),
        "text/plain": f"<Plotly figure {_title_of(fig)!r} with {n_traces} traces>",
    }


def show(fig, name: str | None = None, *, alt: str | None = None, **values) -> None:
    """Display a Plotly figure so it renders in JupyterLab and on the offline static site.

    ``alt`` is the figure's text alternative (``aria-label`` on the site); a view of the
    book passes its ``name`` ("ch05-explorer") instead, and the alt comes from
    ``viz/captions/chNN.md`` with ``values`` filled in (see
    :mod:`transformer_lab.viz.figure_text`). Without either, the layout's title is used.
    See the module docstring for how each front end renders the output.
    """
    if name is not None:
        if alt is not None:
            raise ValueError(f"view {name!r} takes its alt from its name; pass one of the two")
        alt = figure_words(name, values)["alt"]
    elif values:
        raise ValueError(f"values {sorted(values)} need the name of a view of the book")
    from IPython.display import display

    display(mimebundle(fig, alt=alt), raw=True)
