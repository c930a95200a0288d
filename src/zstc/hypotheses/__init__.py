"""How labels become hypotheses: the benchmark's verbalizers, templates, WordNet definitions (Yin et al. 2019)."""
