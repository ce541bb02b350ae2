#!/usr/bin/env bash
# Re-download every vendored upstream file listed in schemas/sources.tsv (file, repo, tag, path in repo)
# from raw.githubusercontent.com. Needs network access; the tests never do this.
set -euo pipefail
cd "$(dirname "$0")"
grep -v '^#' sources.tsv | while IFS=$'\t' read -r file repo tag path; do
  [ -n "$file" ] || continue
  case "$file" in charts/*) dest="$file" ;; *) dest="crds/$file" ;; esac
  mkdir -p "$(dirname "$dest")"
  curl -fsSL "https://raw.githubusercontent.com/$repo/$tag/$path" -o "$dest.tmp"
  mv "$dest.tmp" "$dest"
  echo "$dest <- $repo@$tag:$path"
done
