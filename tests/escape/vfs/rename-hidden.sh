#!/usr/bin/env bash
# Invariant 4 (deny by default) against renames: hide rules are by path, so moving a
# directory must not carry a hidden path out from under its rule. The workspace stands
# for a HOME with a hidden ~/.config/gcloud: `mv .config .cfg; cat .cfg/gcloud/...`
# must not read the secret (moat refuses the rename with EXDEV; mv then copies through
# the view, where gcloud is not, or is an empty stub in namespaced mode). Neither may a hidden file be renamed to a visible
# name, nor a file onto a hidden name, in either mode; checked from outside (the host
# tree after the run) and by the output. The same for a glob of two components
# (**/.docker/config.json) when .docker itself is renamed. Controls: a directory holding
# a .env or a .docker/config.json (rules that match wherever the directory is) and one
# with no rule below are renamed as usual.
. "$MOAT_SRC/tests/lib/tap.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "needs $PY"

# A fresh workspace for each case (a refused mv still copies and deletes what it sees).
fresh() {
	make_workspace
	mkdir -p "$W/.config/gcloud" "$W/.config/other" "$W/proj" "$W/env-dir" "$W/app/.docker"
	printf '%s\n' "$SECRET" >"$W/.config/gcloud/credentials.db"
	printf '%s\n' "$SECRET" >"$W/app/.docker/config.json"
	echo keep >"$W/proj/f"
	printf '%s\n' "$SECRET" >"$W/env-dir/.env"
}

plan 18
for mode in unnamespaced namespaced; do
	if ! have_mode "$mode"; then
		for i in 1 2 3 4 5 6 7 8 9; do skip "$mode: case $i" "moat cannot start in $mode mode here"; done
		continue
	fi
	fresh
	out=$(cd "$W" && "$MOAT" run -q --mode "$mode" --hide "$W/.config/gcloud" -- sh -c '
		mv .config .cfg; cat .cfg/gcloud/credentials.db
		mv .cfg/gcloud/credentials.db creds; cat creds' 2>&1)
	# Namespaced, the hidden directory is an empty stub that mv's copy sees and copies
	# as an empty directory: the name, never what is in it.
	if [ "$mode" = namespaced ]; then gone=.cfg/gcloud/credentials.db; else gone=.cfg/gcloud; fi
	no_secret <(echo "$out") "$SECRET" && [ -f "$W/.config/gcloud/credentials.db" ] &&
		[ ! -e "$W/$gone" ] && [ ! -e "$W/creds" ]
	ok $? "$mode: mv .config .cfg does not carry the hidden gcloud out (host: $(cd "$W" && echo .c*))" "$out"

	fresh
	out=$(cd "$W" && "$MOAT" run -q --mode "$mode" --hide "$W/.config/gcloud" -- "$PY" -c "
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
os.mkdir('empty')
# renameat2(AT_FDCWD, '.config', AT_FDCWD, 'empty', RENAME_EXCHANGE)
r = libc.syscall(316, -100, b'.config', -100, b'empty', 2)
print('exchange', r, os.strerror(ctypes.get_errno()))
try:
    print(open('empty/gcloud/credentials.db').read())
except OSError as e:
    print('read', e.strerror)
" 2>&1)
	no_secret <(echo "$out") "$SECRET" && [ -f "$W/.config/gcloud/credentials.db" ] &&
		[ ! -e "$W/empty/gcloud" ]
	ok $? "$mode: RENAME_EXCHANGE of .config with an empty directory is refused" "$out"

	fresh
	out=$(cd "$W" && "$MOAT" run -q --mode "$mode" -- sh -c 'mv .env env.txt; cat env.txt' 2>&1)
	no_secret <(echo "$out") "$SECRET" && [ -f "$W/.env" ] && [ ! -e "$W/env.txt" ]
	ok $? "$mode: a hidden .env cannot be renamed to a visible name" "$out"

	fresh
	out=$(cd "$W" && "$MOAT" run -q --mode "$mode" -- sh -c 'mv a.txt .env' 2>&1)
	grep -qxF "$SECRET" "$W/.env" && [ -f "$W/a.txt" ]
	ok $? "$mode: a file cannot be renamed onto the hidden .env" "$out"

	fresh
	out=$(cd "$W" && "$MOAT" run -q --mode "$mode" --hide "$W/.config/gcloud" -- sh -c '
		mkdir x; echo planted > x/credentials.db; mv x .config/gcloud' 2>&1)
	grep -qxF "$SECRET" "$W/.config/gcloud/credentials.db"
	ok $? "$mode: a directory cannot be renamed onto the hidden gcloud" "$out"

	fresh
	out=$(cd "$W" && "$MOAT" run -q --mode "$mode" -- sh -c 'mv env-dir env-dir2; cat env-dir2/.env' 2>&1)
	[ -f "$W/env-dir2/.env" ] && [ ! -e "$W/env-dir" ] && no_secret <(echo "$out") "$SECRET"
	ok $? "$mode: a directory holding a .env is renamed, and the .env stays hidden (control)" "$out"

	fresh
	out=$(cd "$W" && "$MOAT" run -q --mode "$mode" --hide "$W/.config/gcloud" -- sh -c 'mv proj proj2 && mv .config/other .config/other2' 2>&1)
	[ -f "$W/proj2/f" ] && [ -d "$W/.config/other2" ]
	ok $? "$mode: directories with no rule below are renamed (control)" "$out"

	# a glob of two components: which paths below a directory it matches can depend on
	# the directory's own name (.docker), or not (app)
	fresh
	out=$(cd "$W" && "$MOAT" run -q --mode "$mode" --hide '**/.docker/config.json' -- sh -c '
		mv app/.docker app/dk; cat app/dk/config.json' 2>&1)
	no_secret <(echo "$out") "$SECRET" && [ -f "$W/app/.docker/config.json" ] && [ ! -e "$W/app/dk/config.json" ]
	ok $? "$mode: mv .docker dk does not carry a **/.docker/config.json out" "$out"
	fresh
	out=$(cd "$W" && "$MOAT" run -q --mode "$mode" --hide '**/.docker/config.json' -- sh -c '
		mv app app2; cat app2/.docker/config.json' 2>&1)
	no_secret <(echo "$out") "$SECRET" && [ -f "$W/app2/.docker/config.json" ]
	ok $? "$mode: a directory holding .docker/config.json is renamed, which stays hidden (control)" "$out"
done
finish
