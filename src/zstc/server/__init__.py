"""The HTTP service (``zstc serve``)."""
