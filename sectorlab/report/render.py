"""The one renderer every report kind writes through: text from a results directory on one line
(one_line) and in a table cell (cell), Markdown tables (table), report.md and report.html written
together (write: the HTML one file with its pictures inline, nothing from the network, through one
autoescaping page), the results directory a command was given (results_dir), and the page drawn to
PNG by headless Chromium (chromium, render_png: `--png`).

markdown and jinja2 (html) come with the optional 'analysis' extra (pyproject.toml) and are imported
only inside the functions that need them: reading a results directory, or refusing one, does not."""

from __future__ import annotations

import base64
import os
import re
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

from .. import errors, inputs
from ..analysis import stats
from ..errors import SectorlabError, UsageError


def one_line(text) -> str:
    """Text from a results directory on one line of the report: every character that is not
    printable (a line break, an escape, U+2028) written as its escape, as an error line writes it
    (errors.one_line, the one definition), so that a name or a quote can neither end a table row nor
    start a block of its own, and reads as what the file holds."""
    return errors.one_line(str(text))


def cell(text) -> str:
    """A table cell: on one line, its '|' escaped."""
    return one_line(text).replace("|", "\\|")


ALIGN = {"l": ":---", "r": "---:", "-": "---"}


def table(rows: list[list[str]], numbers: bool = True, align: str | None = None) -> list[str]:
    """A markdown table (every cell on one line, its '|' escaped); with `numbers`, every column but
    the first is right-aligned; `align`, a letter a column, says it for each: l(eft), r(ight) or -
    (as the reader's default)."""
    head, *body = rows
    align = align or "l" + ("r" if numbers else "l") * (len(head) - 1)
    lines = ["| " + " | ".join(cell(c) for c in head) + " |", "|" + "|".join(ALIGN[a] for a in align) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in body]
    return lines + [""]


_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:0 auto;padding:0 12px;line-height:1.45;color:#222}
table{border-collapse:collapse;font-size:.9em;display:block;overflow-x:auto;max-width:100%}
th,td{border:1px solid #ccc;padding:3px 8px;vertical-align:top}
td:first-child{min-width:12em}
tr:nth-child(even){background:#f6f6f6}
td[style*="right"],th[style*="right"]{white-space:nowrap}
img{width:49%;height:auto}
img[alt^="The findings"]{width:80%}
@media (max-width:700px){img{width:100%}}
code{font-size:.9em}
pre{overflow-x:auto;background:#f4f4f4;padding:8px}
"""


# The only pictures a page shows: those report.write() drew in the results directory (20-40 KiB
# each; one over PICTURE_MAX is not one of them and is left out).
FINDINGS_PNG = "report-findings.png"   # the first screen's picture: each comparison's effect with its CI
_OWN_PICTURE = re.compile(r"report-[A-Za-z0-9._-]+\.png")


PICTURE_MAX = 16 << 20


def _picture(path: Path) -> bytes | None:
    """The bytes of a picture in the results directory: a regular file (not a link, FIFO or
    device) of at most PICTURE_MAX bytes, else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = f.read(PICTURE_MAX + 1)
    return data if len(data) <= PICTURE_MAX else None


def _converter(results: Path):
    """Python-Markdown as report.html needs it: tables and fenced code; no raw HTML (a '<' in the
    text is text, escaped by the serializer with every other character of it), an '&' always shown
    as written (not read as the start of an entity), and no link or picture but the report's own
    pictures, inlined as data: URIs."""
    import xml.etree.ElementTree as etree

    import markdown as md_lib
    from markdown.inlinepatterns import ENTITY_RE, InlineProcessor
    from markdown.treeprocessors import Treeprocessor

    class Ampersand(InlineProcessor):
        """'&lt;' in a name is the four characters it is."""

        def handleMatch(self, m, data):
            return m.group(0).replace("&", self.md.htmlStash.store("&amp;")), m.start(0), m.end(0)

    class OwnPicturesOnly(Treeprocessor):
        """Every <a> becomes its text; an <img> stays only when it is one of the report's own
        pictures, a regular file in the results directory, which it then carries inline; any
        other becomes its alt text."""

        def run(self, root):
            for parent in list(root.iter()):
                for i, child in enumerate(list(parent)):
                    if child.tag == "img" and self._inline(child):
                        continue
                    if child.tag in ("a", "img"):
                        words = child.get("alt", "") if child.tag == "img" else "".join(child.itertext())
                        span = etree.Element("span")
                        span.text, span.tail = words, child.tail
                        parent.remove(child)
                        parent.insert(i, span)

        def _inline(self, img) -> bool:
            src = img.get("src", "")
            if not _OWN_PICTURE.fullmatch(src):
                return False
            data = _picture(results / src)
            if data is None:
                return False
            img.set("src", "data:image/png;base64," + base64.b64encode(data).decode())
            return True

    converter = md_lib.Markdown(extensions=["tables", "fenced_code"])
    converter.preprocessors.deregister("html_block")
    converter.inlinePatterns.deregister("html")
    converter.inlinePatterns.deregister("entity")
    converter.inlinePatterns.register(Ampersand(ENTITY_RE, converter), "entity", 80)
    converter.treeprocessors.register(OwnPicturesOnly(converter), "own_pictures", 5)
    return converter


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">\
<title>{{ title }}</title><style>""" + _CSS + """</style></head><body>
{{ body }}
</body></html>
"""


def html(md_text: str, results: Path) -> str:
    """report.md as one HTML file: the pictures inline (data: URIs), no network. The body is the
    converter's (its serializer escapes every text of it), the page around it a Jinja2 template
    with autoescaping (the title, the first heading's text, is escaped there)."""
    # Imported here only: markdown and jinja2 come with the optional 'analysis' extra
    # (pyproject.toml), which reading a results directory (or refusing one) does not need.
    import jinja2
    from markupsafe import Markup

    body = Markup(_converter(Path(results)).convert(md_text))  # escaped by the converter's serializer
    heading = re.match(r"# (.+)", md_text)
    page = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string(_PAGE)
    return page.render(title=heading.group(1).strip() if heading else "sectorlab report", body=body)


def results_dir(results: Path | str) -> Path:
    """The results directory a command was given: one line when it is not a directory."""
    results = Path(results)
    try:
        st = results.stat()
    except FileNotFoundError as e:
        raise UsageError(f"{results}: no such directory, so no bench.json; expected a results directory written "
                         f"by 'sectorlab bench' (results/<timestamp>-<preset>/)") from e
    except OSError as e:
        raise UsageError(f"{results}: {e.strerror}; expected a results directory written by 'sectorlab bench' "
                         f"(results/<timestamp>-<preset>/)") from e
    except ValueError as e:  # a NUL byte in the name
        raise UsageError(f"{str(results)!r}: {e}; expected a results directory") from e
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{results}: not a directory; expected a results directory written by 'sectorlab bench' "
                         f"(results/<timestamp>-<preset>/)")
    return results


# Chromium with no way out: every host name resolves to nothing, and its background services
# (updates, sync, metrics) are off; the report is a local file.
_CHROMIUM_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                   "--disable-background-networking", "--disable-component-update", "--disable-sync",
                   "--disable-default-apps", "--host-resolver-rules=MAP * ~NOTFOUND"]


# CSS pixels: the screens' widths. Chromium's --screenshot shoots the window, not the page: the
# window is made as tall as the page measures at that width (its scrollHeight, read back from the
# DOM by a first run), of at most PNG_MAX_PIXELS (a 1,200 x 60,000 px shot took 37 s against 2.4 s
# at 1,200 x 20,000).
SCREENS = {"desktop": 1200, "phone": 412}


PNG_MAX_PIXELS = 1200 * 40000


_HEIGHT_RE = re.compile(r'data-sectorlab-height="(\d+)"')


# report.html with its pictures inline: a bench of the largest lab's disks draws some 1,500
# pictures of 20-30 KiB (base64: 4/3 of that).
REPORT_HTML_MAX = 256 << 20


def chromium() -> str:
    """The headless browser --png draws with, or one line saying how to install it: asked before a
    run starts, not after its hours of work."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SectorlabError("--png: chromium is not installed: run 'scripts/bootstrap --all' (it installs Debian's "
                             "chromium), or run without --png and draw later with 'sectorlab report DIR --png'")
    return browser


def render_png(html_path: Path, screens: dict[str, int] = SCREENS,
               progress: Callable[[str], None] = lambda msg: None) -> dict[str, Path]:
    """report.html as a reader sees it, one PNG per screen (report-desktop.png, report-phone.png),
    drawn by headless Chromium (scripts/bootstrap installs it), as tall as the page (a page
    larger than PNG_MAX_PIXELS is cut there, and said)."""
    browser = chromium()
    page = inputs.read_text(html_path, "report page", REPORT_HTML_MAX)
    out = {}
    with tempfile.TemporaryDirectory(prefix="sectorlab-page-") as work:
        copy = stats.write_file(Path(work) / "page.html", page)
        for name, width in screens.items():
            height = _page_height(browser, page, Path(work), width)
            png = html_path.with_name(f"report-{name}.png")
            if height > PNG_MAX_PIXELS // width:
                progress(f"{png.name}: the page is {height:,} px tall at {width} px wide; drawn to "
                         f"{PNG_MAX_PIXELS // width:,} px (report.html has all of it)")
                height = PNG_MAX_PIXELS // width
            # Chromium writes the picture in a directory of sectorlab's own; it is then written whole
            # into the results directory (never through a link in its place).
            shot = Path(work) / f"{name}.png"
            _chromium(browser, copy, f"--window-size={width},{height}", f"--screenshot={shot}")
            if not shot.is_file():
                raise SectorlabError(f"chromium drew no {png.name} of {html_path}")
            out[name] = stats.write_file(png, shot.read_bytes())
    return out


def _page_height(browser: str, page: str, work: Path, width: int) -> int:
    """The page's height in CSS pixels at this width: a copy of it in sectorlab's own directory
    `work` (its pictures are inline, so nothing it shows is left behind) with a script that writes
    document.documentElement.scrollHeight into the DOM Chromium dumps."""
    probe = work / "height.html"
    stats.write_file(probe, page + "<script>document.body.setAttribute('data-sectorlab-height', "
                     "Math.ceil(document.documentElement.scrollHeight))</script>")
    try:
        dom = _chromium(browser, probe, f"--window-size={width},800", "--dump-dom")
    finally:
        probe.unlink(missing_ok=True)
    found = _HEIGHT_RE.search(dom)
    if not found:
        raise SectorlabError(f"chromium gave no height of the page at {width} px")
    return int(found.group(1))


def _chromium(browser: str, html_path: Path, *args: str) -> str:
    with tempfile.TemporaryDirectory(prefix="sectorlab-chromium-") as profile:
        proc = subprocess.run([browser, *_CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args,
                               html_path.resolve().as_uri()], capture_output=True, text=True, timeout=180)
    if proc.returncode != 0:
        raise SectorlabError(f"chromium could not draw {html_path} (exit {proc.returncode}): "
                             f"{proc.stderr.strip()[-400:]}")
    return proc.stdout


def write(results: Path, text: str) -> dict[str, Path]:
    """report.md (`text`) and report.html (the same as one page) in the results directory, each
    written whole and never through a link in its place; the two by name ("md", "html")."""
    out = {"md": results / "report.md", "html": results / "report.html"}
    stats.write_file(out["md"], text)
    stats.write_file(out["html"], html(text, results))
    return out


def read_results(results: Path, name: str, what: str, expected: str, limit: int = inputs.BENCH_JSON_MAX) -> dict:
    """A JSON file a results directory holds (its record, or a run's report it names) through the
    bounded reader: inside the directory, a regular file within `limit`, a table; one line
    otherwise, ending in `expected` ("expected ...")."""
    path = inputs.inside(results, name, what)
    doc = stats.load_json(path, what, limit, expected)
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: {stats.shown(doc)} is not a table; {expected}")
    return doc


def read_runs(results: Path, doc: dict, expected: str) -> dict[str, dict]:
    """The run reports a device-path record (sweep.json, load.json) names in its runs, by name,
    each read as read_results reads a record (inside the directory, bounded, a table)."""
    runs = doc.get("runs")
    if not isinstance(runs, list) or not all(isinstance(r, dict) and isinstance(r.get("report"), str) for r in runs):
        raise UsageError(f"{results}: runs = {stats.shown(runs)}: expected a list of runs, each naming its report; "
                         f"{expected}")
    return {r["report"]: read_results(results, r["report"], "run report", expected, inputs.REPORT_JSON_MAX)
            for r in runs}
