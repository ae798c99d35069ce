#!/usr/bin/env bash
# The run receipt: --report carries the workspace's git commit (a loose ref, a packed
# one, a detached HEAD) beside run_id, policy_sha256, changes, reason and denials; null
# when the workspace is not a git tree. git is never run for it: a repository whose
# config would run a program when git looks at it (core.fsmonitor) runs nothing.
. "$MOAT_SRC/tests/lib/tap.sh"
MODES="namespaced unnamespaced"
plan 8

command -v git >/dev/null || skip_all "git is needed to make the repositories"
cd "$TMP"
export GIT_CONFIG_NOSYSTEM=1 HOME="$TMP"
git init -q -b main repo && cd repo
git -c user.name=t -c user.email=t@t commit -q --allow-empty -m one
want=$(git rev-parse HEAD)
# Any git that reads this config and looks at the work tree runs the program.
git config core.fsmonitor "touch $TMP/pwned; false"
cd "$TMP"

for m in $MODES; do
	( cd repo && "$MOAT" run -q --mode "$m" --report "$TMP/r.json" -- true )
	ok $(jq -e --arg c "$want" '.workspace_git.commit == $c and .workspace_git.ref == "refs/heads/main"
		and (.run_id | length) > 0 and (.policy_sha256 | length) == 64 and .reason == "exited"
		and (.changes | type) == "array" and (.denials | type) == "object"' r.json >/dev/null \
		&& echo 0 || echo 1) "the report carries the workspace's commit and ref [$m]" \
		"want $want; $(jq -c '{workspace_git, run_id, reason}' r.json 2>&1)"
done

( cd repo && git pack-refs --all && [ ! -e .git/refs/heads/main ] )
( cd repo && "$MOAT" run -q --report "$TMP/r.json" -- true )
ok $(jq -e --arg c "$want" '.workspace_git.commit == $c' r.json >/dev/null && echo 0 || echo 1) \
	"a packed ref is found" "$(jq -c .workspace_git r.json 2>&1)"

( cd repo && git -c core.fsmonitor= checkout -q --detach )
( cd repo && "$MOAT" run -q --report "$TMP/r.json" -- true )
ok $(jq -e --arg c "$want" '.workspace_git.commit == $c and .workspace_git.ref == null' r.json \
	>/dev/null && echo 0 || echo 1) "a detached HEAD is its commit, with no ref" \
	"$(jq -c .workspace_git r.json 2>&1)"
ok $([ ! -e "$TMP/pwned" ] && echo 0 || echo 1) "the repository's core.fsmonitor ran nothing"

# A HEAD that names a ref out of the repository is not followed.
printf 'ref: ../../../etc/passwd\n' > repo/.git/HEAD
( cd repo && "$MOAT" run -q --report "$TMP/r.json" -- true )
ok $(jq -e '.workspace_git == null' r.json >/dev/null && echo 0 || echo 1) \
	"a HEAD naming a path out of refs/ gives no commit" "$(jq -c .workspace_git r.json 2>&1)"

mkdir plain
( cd plain && "$MOAT" run -q --report "$TMP/r.json" -- true )
ok $(jq -e 'has("workspace_git") and .workspace_git == null' r.json >/dev/null && echo 0 || echo 1) \
	"not a git tree: workspace_git is null"

# With --cow, the receipt is the commit the run started from, whatever the run did to .git.
printf "ref: refs/heads/main\n" > repo/.git/HEAD
( cd repo && "$MOAT" run -q --cow --discard --report "$TMP/r.json" -- sh -c 'echo 0000000000000000000000000000000000000000 > .git/refs/heads/main' ) 2>/dev/null
ok $(jq -e --arg c "$want" '.workspace_git.commit == $c' r.json >/dev/null && echo 0 || echo 1) \
	"--cow: the receipt is the commit the run started from" "$(jq -c .workspace_git r.json 2>&1)"
finish
