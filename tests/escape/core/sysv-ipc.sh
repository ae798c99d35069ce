#!/usr/bin/env bash
# System V IPC objects live in the IPC namespace. Namespaced mode has its own;
# unnamespaced mode would reach the host's, so its filter refuses SysV IPC (and POSIX
# message queues) with ENOSYS. The host creates a shared memory segment with a known
# key and content; the sandbox looks it up by key, attaches it by its id (ids are
# easy to guess), and tries to overwrite it. From outside: the content, the last
# attaching pid and the attach time of the segment are unchanged.
. "${MOAT_SRC:?}/tests/lib/tap.sh"

plan 6
command -v python3 >/dev/null || skip_all "python3 is needed"
WS="$TMP/ws"
mkdir -p "$WS"
cd "$WS" || exit 1

cat >shm.py <<'PYEOF'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
IPC_CREAT, IPC_EXCL, IPC_RMID, IPC_STAT = 0o1000, 0o2000, 0, 2
def err(what):
    print(what, "failed:", os.strerror(ctypes.get_errno()))
    sys.exit(1)
def attach(shmid):
    a = libc.shmat(shmid, None, 0)
    if a in (None, ctypes.c_void_p(-1).value):
        err("shmat")
    return a
cmd = sys.argv[1]
if cmd == "create":   # create KEY TEXT: prints the id
    shmid = libc.shmget(int(sys.argv[2], 0), 4096, IPC_CREAT | IPC_EXCL | 0o600)
    if shmid < 0:
        err("shmget")
    a = attach(shmid)
    ctypes.memmove(a, sys.argv[3].encode() + b"\0", len(sys.argv[3]) + 1)
    libc.shmdt(ctypes.c_void_p(a))
    print(shmid)
elif cmd == "key":    # key KEY: look it up, attach, read, write
    shmid = libc.shmget(int(sys.argv[2], 0), 0, 0)
    if shmid < 0:
        err("shmget by key")
    a = attach(shmid)
    print("read by key:", ctypes.string_at(a))
    ctypes.memmove(a, b"SANDBOX-WROTE\0", 14)
elif cmd == "id":     # id ID: attach a guessed id, read, write
    a = attach(int(sys.argv[2]))
    print("read by id:", ctypes.string_at(a))
    ctypes.memmove(a, b"SANDBOX-WROTE\0", 14)
elif cmd == "stat":   # stat ID: last attach/detach pid and attach time
    buf = ctypes.create_string_buffer(256)
    if libc.shmctl(int(sys.argv[2]), IPC_STAT, buf) < 0:
        err("shmctl")
    # struct shmid64_ds on 64-bit: ipc_perm (48), segsz, atime, dtime, ctime, cpid, lpid
    print(int.from_bytes(buf.raw[84:88], "little"), int.from_bytes(buf.raw[56:64], "little"))
elif cmd == "read":   # read ID: the content (this attach changes what stat shows)
    print(ctypes.string_at(attach(int(sys.argv[2]))).decode())
elif cmd == "rm":
    libc.shmctl(int(sys.argv[2]), IPC_RMID, None)
PYEOF

for mode in namespaced unnamespaced; do
	key=$((0x6d6f0000 + RANDOM))
	id=$(python3 shm.py create "$key" "HOST-SHM-SECRET") ||
		{ skip_all "cannot create a SysV shared memory segment: $id"; }
	before=$(python3 shm.py stat "$id")
	"$MOAT" run -q --mode "$mode" -- sh -c "python3 shm.py key $key; python3 shm.py id $id" \
		>out.txt 2>&1
	after=$(python3 shm.py stat "$id")
	content=$(python3 shm.py read "$id")
	python3 shm.py rm "$id"

	if ! grep -q HOST-SHM-SECRET out.txt; then
		pass "$mode: the host's segment cannot be read, by key or by id"
	else
		fail "$mode: the host's segment cannot be read, by key or by id" "$(cat out.txt)"
	fi
	if [ "$before" = "$after" ] && [ "$content" = HOST-SHM-SECRET ]; then
		pass "$mode: its content, last attaching pid and attach time are unchanged"
	else
		fail "$mode: its content, last attaching pid and attach time are unchanged" \
			"lpid and atime before: $before; after: $after; content: $content; sandbox: $(cat out.txt)"
	fi
	# control: the sandbox's own segment works in its own IPC namespace; unnamespaced
	# mode refuses SysV IPC altogether (ENOSYS), which is what the case checks there.
	"$MOAT" run -q --mode "$mode" -- python3 shm.py create "$((key + 1))" MINE >out.txt 2>&1
	if [ "$mode" = namespaced ]; then
		grep -qE '^[0-9]+$' out.txt
		ok $? "$mode: a segment of the sandbox's own works (control)" "$(cat out.txt)"
	else
		# one that reached the host's namespace is removed again
		grep -qE '^[0-9]+$' out.txt && python3 shm.py rm "$(cat out.txt)"
		grep -q "shmget failed: Function not implemented" out.txt
		ok $? "$mode: SysV IPC is refused with ENOSYS" "$(cat out.txt)"
	fi
done
finish
