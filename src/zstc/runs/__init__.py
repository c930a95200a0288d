"""What a run is and how its records are kept: its identity, its provenance and its JSON files.

Every command that records where its numbers came from (``bench``, ``sweep``, ``classify``'s resume marker, the Yin
experiments, ``train``) reads these from here, below the benchmark and the outputs, so none of them imports the bench
runner for them. :mod:`zstc.runs.identity` says what determines a number (a changed setting changes a fingerprint);
:mod:`zstc.runs.provenance` records what does not but traces it (code, weights, data, machine);
:mod:`zstc.runs.files` writes a record so that an interrupted run never leaves half of one.
"""
