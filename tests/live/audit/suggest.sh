#!/usr/bin/env bash
# `audit suggest` grants least privilege by construction. A learning run under
# --profile none --ro-bind / (everything readable) with one file hidden reads its input,
# every secret of the default profile and the hidden file; the policy suggested from it
# must not map / and, under it, the same program must read its input again but none of
# the secrets nor the file denied in the learning run (checked on what it printed).
. "$(dirname "$0")/lib.sh"
. "$MOAT_SRC/tests/live/vfs/lib.sh"
plan 12

# Secrets of every kind the default profile hides, each with a marker of its own: in
# the home (the test's, inside the workspace, so the workspace mapping covers it) and in
# the workspace at two depths.
H="$WORK/home"
mkdir -p "$H/.ssh" "$H/.aws" "$H/.config/gcloud" "$H/.gnupg" "$WORK/sub"
n=0
secret() { n=$((n + 1)); printf 'moat-secret-%s-%s\n' "$n" "$RANDOM$RANDOM" > "$1"; echo "$1" >> targets.txt; }
: > targets.txt
secret "$H/.ssh/id_test"; secret "$H/.aws/credentials"; secret "$H/.config/gcloud/creds.json"
secret "$H/.netrc"; secret "$H/.gnupg/private.gpg"
for f in .env server-key.pem tls.key store.p12 store.pfx id_rsa id_dsa id_ecdsa id_ed25519 sub/.env; do
	secret "$WORK/$f"
done
secret "$WORK/private.txt"          # hidden in the learning run: denied there
echo "input-$RANDOM" > data.txt
# The host's own: their content must never be printed.
for f in /etc/shadow* /etc/gshadow* /etc/sudoers* /etc/ssh/ssh_host_* /root /proc/kcore \
	/proc/kmsg /proc/keys /proc/sysrq-trigger; do
	[ -e "$f" ] && echo "$f" >> targets.txt
done
shadow_line=$(head -1 /etc/shadow 2>/dev/null)

cat > probe.py <<'PYEOF'
import os
print("DATA", open("data.txt").read().strip(), len(os.listdir("/")))
for p in open("targets.txt").read().split():
    try:
        if os.path.isdir(p) and not p.startswith("/proc"):
            print("OPENED", p, os.listdir(p))
        elif p.startswith("/proc/"):
            # opened only: reading kmsg blocks, sysrq-trigger is never written
            os.close(os.open(p, os.O_RDONLY | os.O_NONBLOCK))
            print("OPENED", p)
        else:
            print("OPENED", p, open(p, errors="replace").read(200))
    except OSError as e:
        print("FAILED", p, e.errno)
PYEOF

for mode in namespaced unnamespaced; do
	if ! have_mode "$mode"; then
		skip "$mode: learning run reads the secrets" "mode not available"
		skip "$mode: suggest" "mode not available"
		skip "$mode: no ro-bind /" "mode not available"
		skip "$mode: the program runs under the suggestion" "mode not available"
		skip "$mode: no secret or denied path readable" "mode not available"
		continue
	fi
	rm -f learn.moat
	HOME="$H" "$MOAT" run -q --mode "$mode" --profile none --ro-bind / --bind "$WORK" \
		--hide "$WORK/private.txt" --audit learn.moat -- "$PY" probe.py > learn.out 2>&1
	opened=$(grep -c '^OPENED' learn.out)
	if grep -q "^DATA input" learn.out && [ "$opened" -ge 15 ] && grep -q "FAILED $WORK/private.txt" learn.out; then
		pass "$mode: the learning run read its input and $opened secrets, and was denied private.txt"
	else
		fail "$mode: the learning run read its input and the secrets" "$(cat learn.out)"
	fi

	HOME="$H" "$MOAT" audit suggest learn.moat -o "$TMP/S-$mode" 2> s.err
	ok $? "$mode: suggest writes a policy" "$(cat s.err)"
	if ! grep -Eq '^(ro-)?bind /$' "$TMP/S-$mode"; then
		pass "$mode: the suggestion does not map / (the learning run did)"
	else
		fail "$mode: the suggestion does not map /" "$(cat "$TMP/S-$mode")"
	fi

	HOME="$H" "$MOAT" run -q --mode "$mode" --policy "$TMP/S-$mode" --audit again.moat -- \
		"$PY" probe.py > run.out 2>&1
	rc=$?
	if [ $rc -eq 0 ] && grep -qF "DATA $(cat data.txt)" run.out; then
		pass "$mode: under the suggestion the program runs and reads its input"
	else
		fail "$mode: under the suggestion the program runs and reads its input" "exit $rc: $(cat run.out)
policy:
$(cat "$TMP/S-$mode")"
	fi
	leaked=""
	while read -r t; do
		if [ -f "$t" ] && [ "${t#/proc/}" = "$t" ] && ! no_secret run.out "$(head -c 40 "$t" 2>/dev/null)"; then
			leaked="$leaked $t"
		fi
		grep -q "^OPENED $t\\b" run.out && leaked="$leaked $t(opened)"
	done < targets.txt
	[ -n "$shadow_line" ] && ! no_secret run.out "$shadow_line" && leaked="$leaked /etc/shadow(content)"
	if [ -z "$leaked" ] && [ "$(grep -c '^FAILED' run.out)" -eq "$(wc -l < targets.txt)" ]; then
		pass "$mode: every secret and the denied file stay out of reach ($(wc -l < targets.txt) paths)"
	else
		fail "$mode: every secret and the denied file stay out of reach" "leaked:$leaked
$(cat run.out)
policy:
$(cat "$TMP/S-$mode")"
	fi
	# `ro-bind /` only when asked for and the run had it.
	if [ "$mode" = namespaced ]; then
		"$MOAT" audit suggest --keep-ro-bind-root learn.moat > keep.txt 2>&1
		if grep -qx 'ro-bind /' keep.txt; then
			pass "--keep-ro-bind-root keeps ro-bind / of a run that had it"
		else
			fail "--keep-ro-bind-root keeps ro-bind / of a run that had it" "$(cat keep.txt)"
		fi
		"$MOAT" audit suggest --keep-ro-bind-root again.moat > keep2.txt 2>&1
		if [ -s keep2.txt ] && ! grep -Eq '^(ro-)?bind /$' keep2.txt; then
			pass "and adds none to a run that had not"
		else
			fail "and adds none to a run that had not" "$(cat keep2.txt)"
		fi
	fi
done
finish
