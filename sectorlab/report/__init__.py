"""The text of results: every report the project writes, through one renderer.

- render.py: the one renderer (one_line, cell, table, report.md and report.html together through
  one autoescaping page, the results directory a command names, the page drawn to PNG);
- kinds.py: every kind of report in one table (KINDS: the record file a results directory holds,
  the module that writes its report) and `sectorlab report DIR` for all of them;
- one module a kind, each with `write(results)`: redo.py (bench.json, the redo bench: with
  document.py, the report's Markdown, and findings.py, its statistical text), appliance.py
  (appliance.json), sweep.py (sweep.json, `sectorlab bench-sweep`), load.py (load.json,
  `sectorlab bench-load`), crash.py (crash.json, `sectorlab crash`) and crashdb.py (crash-db.json,
  `sectorlab crash-db`).
"""
