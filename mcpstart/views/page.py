"""``mcpstart html``: one self-contained HTML file of one or more results files, to open
offline or attach to release notes (as criterion's and asv's reports are): the table, each
file's plots, the warnings, the raw samples and the machine. Everything it shows is inside
the file: the plots are PNG as data: URLs, the style is inline, no script, no font, no
request leaves it. The plots need matplotlib (the "plot" extra); without it the page says so.
"""

from __future__ import annotations

import base64
import io
from html import escape
from pathlib import Path

from ..results import dig, documents, name_of, servers, writable_folder
from .table import file_labels, table

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 72em; padding: 0 1em;
       color: #222; }
table { border-collapse: collapse; margin: .5em 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: .2em .5em; text-align: right; vertical-align: top; }
th:first-child, td:first-child { text-align: left; }
.scroll { overflow-x: auto; }
.scroll > table:not(.text) th:first-child, .scroll > table:not(.text) td:first-child {
  position: sticky; left: 0; background: white; min-width: 14em; }
img { max-width: 100%; height: auto; }
pre { white-space: pre-wrap; background: #f6f6f6; padding: .6em; font-size: 12px; }
.noisy { background: crimson; color: white; font-weight: bold; padding: .4em .8em;
         border-radius: .4em; display: inline-block; }
table.text td, table.text th { text-align: left; }
td.samples { text-align: left; font-family: monospace; font-size: 12px; }
"""
"""The page's style sheet: system fonts only."""


def _plots(docs: list[dict], labels: list[str]) -> list[tuple[str, str]]:
    """(caption, PNG bytes as base64) of each file's charts, then history: against the SDK
    version where a file has variants, across the files when there are several. Raises
    ValueError when matplotlib is missing (plot.require)."""
    from .history import history_data
    from .plot import available, figure, render, require

    require()
    shots = []
    for doc, label in zip(docs, labels):
        if available(doc):
            shots.append((f"{label}: {', '.join(available(doc))}", figure(doc)))
        if history_data(doc):
            shots.append((f"{label}: against the SDK version", figure(doc, "history")))
    if len(docs) > 1:
        shots.append(("across the files", figure(docs, "history", labels)))
    out = []
    for caption, fig in shots:
        buffer = io.BytesIO()
        render(fig, buffer, "png", 100)  # a missing glyph shows as a box in the page too
        out.append((caption, base64.b64encode(buffer.getvalue()).decode("ascii")))
    return out


def _warnings(doc: dict) -> list[list[str]]:
    """[server, kind, metric, detail] of every warning of every server row."""
    rows = []
    for s in servers(doc):
        for w in s.get("warnings") or []:
            if isinstance(w, dict):
                rows.append([name_of(s), str(w.get("kind", "")), str(w.get("metric", "")),
                             str(w.get("detail", ""))])
            else:
                rows.append([name_of(s), "", "", str(w)])
    return rows


def samples(value, path: str = "") -> list[tuple[str, list]]:
    """(key path, samples) of every stats block (a dict with a ``samples`` list) in
    ``value``, depth first: ``handshake_ms``, ``http.start_ms.initialize`` ..."""
    if isinstance(value, dict):
        found = [(path, value["samples"])] if isinstance(value.get("samples"), list) else []
        for key, inner in value.items():
            found += samples(inner, f"{path}.{key}" if path else key)
        return found
    if isinstance(value, list):
        return [found for i, inner in enumerate(value) if isinstance(inner, dict)
                for found in samples(inner, f"{path}.{inner.get('scenario', i)}")]
    return []


def _rows(header: list[str], rows: list[list[str]], cls: tuple = ()) -> str:
    """An HTML table of escaped cells; ``cls``: a class per column ("" none)."""
    def cells(row, tag):
        return "".join(f"<{tag}{f' class={c!r}' if c else ''}>{escape(str(v))}</{tag}>"
                       for v, c in zip(row, list(cls) + [""] * len(row)))
    return ("<div class='scroll'><table class='text'><thead><tr>" + cells(header, "th") + "</tr></thead><tbody>"
            + "".join(f"<tr>{cells(r, 'td')}</tr>" for r in rows) + "</tbody></table></div>")


def _fmt(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def page(results_list, labels=None) -> str:
    """The report (module doc) of one results file or a list (``Results`` objects or their
    JSON dicts), as an HTML5 document.

    Raises:
        ValueError: ``labels`` does not hold one label per file.
    """
    from .plot import noisy

    docs = documents(results_list)
    labels = file_labels(docs, labels)
    notes: list[str] = []
    body = ["<h1>mcpstart report</h1>"]
    for doc, label in zip(docs, labels):
        if (mark := noisy(doc)) is not None:
            body.append(f"<p class='noisy'>{escape(label)}: {escape(mark)}</p>")
    body += ["<h2>Table</h2>", "<div class='scroll'>" + table(docs, "html", labels=labels, aside=notes.append)
             + "</div>"]
    if notes:
        body.append(f"<pre>{escape(chr(10).join(notes))}</pre>")
    body.append("<h2>Plots</h2>")
    try:
        shots = _plots(docs, labels)
    except ValueError as err:
        body.append(f"<p>{escape(str(err))}</p>")
    else:
        body += [f"<figure><img alt='{escape(caption, quote=True)}' src='data:image/png;base64,{png}'>"
                 f"<figcaption>{escape(caption)}</figcaption></figure>" for caption, png in shots]
    for doc, label in zip(docs, labels):
        body.append(f"<h2>{escape(label)}</h2>")
        body.append("<h3>Warnings</h3>")
        warned = _warnings(doc)
        body.append(_rows(["server", "kind", "metric", "detail"], warned) if warned
                    else "<p>No warning.</p>")
        body.append("<h3>Raw samples (ms unless the key says otherwise)</h3>")
        raw = [[name_of(s), path, " ".join(_fmt(v) for v in values)]
               for s in servers(doc) for path, values in samples(s)]
        body.append("<details><summary>every series, in the order measured</summary>"
                    + _rows(["server", "series", "samples"], raw, ("", "", "samples"))
                    + "</details>")
        env = doc.get("environment") if isinstance(doc.get("environment"), dict) else {}
        machine = [[key, _fmt(value) if not isinstance(value, (dict, list)) else
                    ", ".join(f"{k}: {v}" for k, v in value.items()) if isinstance(value, dict)
                    else ", ".join(_fmt(v) for v in value)] for key, value in env.items()]
        machine += [["created", str(doc.get("created", "?"))],
                    ["mcpstart", str(doc.get("mcpstart_version", "?"))],
                    ["command", " ".join(str(a) for a in doc.get("argv") or [])],
                    ["runs", f"{dig(doc, 'settings.runs')} after {dig(doc, 'settings.warmup')} warm-up"]]
        body.append("<h3>The machine</h3>" + _rows(["", ""], machine))
    return ("<!DOCTYPE html>\n<html lang='en'>\n<head>\n<meta charset='utf-8'>\n"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>\n"
            f"<title>mcpstart report: {escape(', '.join(labels))}</title>\n"
            f"<style>{STYLE}</style>\n</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n")


def write(results_list, path, labels=None) -> None:
    """``page(results_list, labels)`` written to ``path`` (UTF-8); a folder that cannot be
    written is refused before anything is drawn.

    Raises:
        ValueError: as ``page``; the file cannot be written (the message names it).
    """
    writable_folder(Path(path))
    text = page(results_list, labels)
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as err:
        raise ValueError(f"cannot write {path}: {err.strerror or err}") from err
