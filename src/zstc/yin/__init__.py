"""Yin et al. (2019)'s experiments: label-partially-unseen, calibration and template robustness."""
