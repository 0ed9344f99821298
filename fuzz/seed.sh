#!/usr/bin/env bash
# Seed the live fuzz corpus with every Python file of corpus/migrate and corpus/rules (inputs and
# expected outputs), plus the committed minimised corpus and the regression inputs.
set -euo pipefail
cd "$(dirname "$0")"
live=corpus/pipeline-live
mkdir -p "$live"
find ../corpus/migrate ../corpus/rules -name '*.py' | while read -r f; do
  name=$(echo "${f#../corpus/}" | tr '/' '_')
  cp "$f" "$live/seed_$name"
done
cp corpus/pipeline/* regressions/pipeline/* "$live/" 2>/dev/null || true
echo "$(ls "$live" | wc -l) inputs in fuzz/$live"
