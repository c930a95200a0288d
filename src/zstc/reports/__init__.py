"""Reports people read: the paper's tables and figures for one's own runs, beside the published numbers.

``zstc report RESULTS... --out DIR`` (:func:`zstc.reports.build.build_report`) reads bench result files,
puts them among the paper's 38 models and writes Markdown/CSV tables (:mod:`~zstc.reports.tables`),
PNG/SVG figures (:mod:`~zstc.reports.figures`), statistics (:mod:`~zstc.reports.stats`) and one
self-contained ``index.html`` (:mod:`~zstc.reports.html`). What is compared is decided in
:mod:`~zstc.reports.rows`. matplotlib is needed for figures: ``pip install 'zstc[reports]'``.
"""
