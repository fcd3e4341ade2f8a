#!/usr/bin/env bash
# Fails on a tracked file over 1 MB that is not test data, so a build
# output or a dump committed by mistake (a 45 MB `makespan` binary once
# was) is caught by `make vet` before it reaches main.
#
# Test data is what lies under a `testdata/` folder anywhere in the tree:
# the Go tool's own convention for files only tests read (fuzz corpora,
# Ganeti's documents). Sizes are the staged blobs', so a file added with
# `git add` is caught before it is committed.
set -euo pipefail
cd "$(dirname "$0")/../.."
limit=$((1000 * 1000))
big=$(git ls-files -s | sed 's/^[0-7]* \([0-9a-f]*\) [0-9]\t/\1 /' |
	git cat-file --batch-check='%(objectsize) %(rest)' |
	awk -v limit="$limit" '$1 > limit && $2 !~ /(^|\/)testdata\// { print "  " $2 " (" $1 " bytes)" }')
if [ -n "$big" ]; then
	echo "tracked files over 1 MB that are not test data (under testdata/):"
	echo "$big"
	echo "untrack them (git rm --cached FILE) and ignore build outputs in .gitignore"
	exit 1
fi
