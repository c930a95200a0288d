#!/bin/sh
# Regenerates docs/schemas/ from the pydantic models (tests/test_records.py fails when they are stale).
set -e
for name in result summary leaderboard; do
    zstc schema "$name" --out "docs/schemas/$name.schema.json"
done
