#!/usr/bin/env bash
# What user-project.yml does, in a fresh folder outside this repo, timed: a project with benchmax installed from the
# packed tarballs (npm ci on its lockfile), a stored baseline, then eval + compare + report. No monorepo build.
# Usage (repo root, after `npm run pack`): bash examples/ci-regression/user-project.sh [TARBALL_DIR]
set -euo pipefail
tarballs="$(cd "${1:-dist-tarballs}" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
# the user's project, made once (not timed): package.json + lockfile pointing at the vendored tarballs, a baseline
mkdir -p vendor/benchmax && cp "$tarballs"/*.tgz vendor/benchmax/
npm init -y >/dev/null && npm pkg set type=module
npm i -D --no-audit --no-fund --loglevel=error ./vendor/benchmax/*.tgz
npx benchmax eval math --limit 12 --out benchmarks/baseline/math --quiet >/dev/null
rm -rf node_modules
# the CI job, timed
start=$(date +%s)
npm ci --no-audit --no-fund --loglevel=error
npx benchmax eval math --limit 12 --out runs/candidate/math --quiet >/dev/null
npx benchmax compare benchmarks/baseline/math runs/candidate/math --max-drop 0.02
npx benchmax report runs/candidate/math --baseline benchmarks/baseline/math --max-drop 0.02 >/dev/null
echo "user-project CI job: $(($(date +%s) - start)) s (npm ci + eval + compare + report)"
