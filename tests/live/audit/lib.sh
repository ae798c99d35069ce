#!/usr/bin/env bash
# Shared setup of the audit live tests: the TAP helper, the tools the checks read the
# stream with, and a python3 to run under moat.
. "${MOAT_SRC:-$(dirname "$0")/../../..}/tests/lib/tap.sh"
for tool in jq zstd python3; do
	command -v "$tool" >/dev/null || skip_all "$tool is not installed"
done
# A system interpreter: one under $HOME (pyenv) is hidden by the default profile.
PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "no /usr/bin/python3"
# The default profile maps the working directory: every run happens in its own.
WORK="$TMP/work"
mkdir -p "$WORK"
cd "$WORK" || exit 1
