"""The BTZSC benchmark: the dataset catalog, task loading, the runner, metrics, the result store, provenance,
the paper's published scores, the leaderboard schema and the NLI probe."""
