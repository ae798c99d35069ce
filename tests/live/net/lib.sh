# Shared by tests/live/net and tests/escape/net. Source after tests/lib/tap.sh.
# All traffic stays on 127.0.0.0/8 of the host or inside the sandbox's namespace.
NETDIR="$MOAT_SRC/tests/live/net"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
mkdir -p "$TMP/w"
cp "$NETDIR/client.py" "$TMP/w/client.py"

# have_mode MODE: can moat start a sandbox in this mode here?
have_mode() { (cd "$TMP/w" && "$MOAT" run -q --mode "$1" -- true) >/dev/null 2>&1; }

# start_server KIND NAME [ARGS]: sets PORT_<NAME>; LOG is $TMP/NAME.log
start_server() {
	local kind=$1 name=$2 i
	shift 2
	"$PY" "$NETDIR/servers.py" "$kind" "$TMP/$name.port" "$TMP/$name.log" "$@" &
	track_pid $!
	for i in $(seq 100); do
		[ -s "$TMP/$name.port" ] && break
		sleep 0.05
	done
	[ -s "$TMP/$name.port" ] || return 1
	printf -v "PORT_$name" '%s' "$(cat "$TMP/$name.port")"
}

# sandbox MODE ARGS... -- CMD: runs in $TMP/w (the sandbox's workspace). stdout is the
# command's; stderr (moat's denial lines with -v, and the command's) goes to $TMP/err,
# which diag shows with the output.
sandbox() {
	local mode=$1
	shift
	(cd "$TMP/w" && timeout 60 "$MOAT" run -v --mode "$mode" "$@") 2>"$TMP/err"
}
denied() { grep -qF "$1" "$TMP/err"; }
diag() { printf '%s\n--- stderr:\n%s' "$1" "$(cat "$TMP/err")"; }
accepts() { cat "$TMP/$1.log"; }
