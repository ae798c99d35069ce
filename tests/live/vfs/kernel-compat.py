# Cases where moat once answered differently from the kernel; one line per case,
# "name: result", the same natively and under moat (tests/live/vfs/kernel-compat.sh).
# Run in a directory holding sub/inner.txt and the symlink sub/abs -> /inner.txt.
import ctypes, errno, os, stat, struct

libc = ctypes.CDLL(None, use_errno=True)
SYS_openat2 = 437
RESOLVE_BENEATH, RESOLVE_IN_ROOT = 0x08, 0x10
AT_EMPTY_PATH = 0x1000


def openat2(dirfd, path, flags=os.O_RDONLY, mode=0, resolve=0):
    how = struct.pack('QQQ', flags, mode, resolve)
    fd = libc.syscall(SYS_openat2, dirfd, path.encode(), how, len(how))
    if fd < 0:
        return errno.errorcode[ctypes.get_errno()]
    with os.fdopen(fd) as f:
        return f.read().strip()


def case(name, f):
    try:
        r = f()
    except OSError as e:
        r = errno.errorcode[e.errno]
    print('%s: %s' % (name, r))


def readfd(fd):
    with open('/proc/self/fd/%d' % fd) as f:
        return f.read()


sub = os.open('sub', os.O_RDONLY | os.O_DIRECTORY)
case('openat2 IN_ROOT absolute path', lambda: openat2(sub, '/inner.txt', resolve=RESOLVE_IN_ROOT))
case('openat2 IN_ROOT absolute symlink', lambda: openat2(sub, 'abs', resolve=RESOLVE_IN_ROOT))
case('openat2 IN_ROOT absolute path outside', lambda: openat2(sub, '/a.txt', resolve=RESOLVE_IN_ROOT))
case('openat2 IN_ROOT dot-dot', lambda: openat2(sub, '../../inner.txt', resolve=RESOLVE_IN_ROOT))
case('openat2 BENEATH absolute path', lambda: openat2(sub, '/inner.txt', resolve=RESOLVE_BENEATH))
case('openat2 unknown resolve bit', lambda: openat2(sub, 'inner.txt', resolve=0x40))
case('openat2 every resolve bit', lambda: openat2(sub, 'inner.txt', resolve=(1 << 64) - 1))
case('openat2 BENEATH with IN_ROOT', lambda: openat2(sub, 'inner.txt', resolve=0x18))
case('openat2 mode without O_CREAT', lambda: openat2(sub, 'inner.txt', mode=0o644))
case('openat2 unknown flag', lambda: openat2(sub, 'inner.txt', flags=1 << 30))

m = os.memfd_create('compat')
os.write(m, b'memfd data')
case('/proc/self/fd of a memfd', lambda: readfd(m))
d = os.open('gone', os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(d, b'deleted data')
os.unlink('gone')
case('/proc/self/fd of a deleted file', lambda: readfd(d))
t = os.open('.', os.O_TMPFILE | os.O_RDWR, 0o640)
os.write(t, b'tmpfile data')
case('/proc/self/fd of an O_TMPFILE', lambda: readfd(t))
case('O_TMPFILE mode', lambda: oct(stat.S_IMODE(os.fstat(t).st_mode)))


def link_tmpfile():
    if libc.linkat(t, b'', -100, b'linked', AT_EMPTY_PATH) < 0:
        return errno.errorcode[ctypes.get_errno()]
    with open('linked') as f:
        return f.read() + ' ' + oct(stat.S_IMODE(os.stat('linked').st_mode))


case('linkat AT_EMPTY_PATH of an O_TMPFILE', link_tmpfile)
case('linkat AT_EMPTY_PATH of a directory',
     lambda: 'ok' if libc.linkat(sub, b'', -100, b'dirlink', AT_EMPTY_PATH) == 0
     else errno.errorcode[ctypes.get_errno()])
