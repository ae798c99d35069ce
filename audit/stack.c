/* SPDX-License-Identifier: MIT */
/*
 * User stacks of sandboxed threads, for the audit record of a denied call.
 *
 * Two methods; SCHEMA.md ("Stack traces") has the measurements behind this choice.
 *
 * AUDIT_STACK_SCAN (default; no ptrace, no effect on the tracee): the thread is parked
 * in the kernel waiting for our reply, so /proc/<tid>/syscall gives its stack pointer and
 * the notification its instruction pointer. We read up to 64 KiB of stack above sp with
 * process_vm_readv and keep the words that point just behind a call instruction in an
 * executable mapping. Without the frame-pointer chain (rbp is not in /proc/<tid>/syscall)
 * this is a scan, not an unwind: it can report a stale return address left in a frame's
 * unused slots, never a frame that is not a call site.
 *
 * AUDIT_STACK_PTRACE: PTRACE_SEIZE + PTRACE_INTERRUPT, then libunwind-ptrace
 * (_UPT_create, unw_init_remote, unw_step) for an exact DWARF unwind. On Linux 6.x an
 * interrupt aborts a pending user notification: the notification id goes stale (SEND
 * fails with ENOENT) and the kernel restarts the syscall, which is notified again with a
 * new id. With SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV the thread does not stop until it
 * is answered. So this method is for callers that can deny the restarted call again; it
 * gives up after a short wait instead of blocking the supervisor.
 *
 * libunwind is opened on the first ptrace capture, not linked: every cold `moat run`
 * paid for loading it and its three dependencies (the dynamic loader's relocations
 * and page faults) though only this method uses it.
 *
 * Both methods name modules from /proc/<pid>/maps, read the build-id from the ELF
 * note and symbols from .symtab/.dynsym of the mapped file (through
 * /proc/<pid>/map_files, so the tracee's mount namespace is respected), with bounded
 * reads into private memory (see struct elf_mod).
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libunwind-ptrace.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit-internal.h"
#include "cleanup.h"

#define SCAN_BYTES (64 * 1024)
#define INTERRUPT_WAIT_MS 50

struct mapping {
	uint64_t start, end, off;
	bool exec;
	dev_t dev;              /* of the mapped file, from maps */
	ino_t ino;              /* 0 for anonymous mappings */
	char *path;             /* NULL for anonymous mappings */
};

struct maps {
	struct mapping *v;
	size_t n;
};

struct strbuf {
	char *p;
	size_t len, used;
};

static const char *sb_put(struct strbuf *sb, const char *s)
{
	size_t n;
	char *d;

	if (!s)
		return NULL;
	n = strlen(s) + 1;
	if (sb->len - sb->used < n)
		return NULL;
	d = sb->p + sb->used;
	memcpy(d, s, n);
	sb->used += n;
	return d;
}

static void maps_done(struct maps *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

static int maps_read(pid_t pid, struct maps *m)
{
	_cleanup_fclose_ FILE *f = NULL;
	char path[64], line[4096 + 128];
	size_t cap = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct mapping mp = { 0 };
		unsigned maj = 0, min = 0;
		unsigned long ino = 0;
		char perms[8];
		int pos = 0;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %lu %n", &mp.start,
			   &mp.end, perms, &mp.off, &maj, &min, &ino, &pos) < 7)
			continue;
		mp.dev = makedev(maj, min);
		mp.ino = (ino_t)ino;
		mp.exec = perms[2] == 'x';
		line[strcspn(line, "\n")] = '\0';
		if (pos > 0 && line[pos] == '/')
			mp.path = strdup(line + pos);
		if (m->n == cap) {
			struct mapping *nv = realloc(m->v, (cap = cap ? 2 * cap : 64) * sizeof(*nv));

			if (!nv) {
				free(mp.path);
				return -ENOMEM;
			}
			m->v = nv;
		}
		m->v[m->n++] = mp;
	}
	return 0;
}

static const struct mapping *maps_find(const struct maps *m, uint64_t addr)
{
	for (size_t i = 0; i < m->n; i++)
		if (addr >= m->v[i].start && addr < m->v[i].end)
			return &m->v[i];
	return NULL;
}

/* ---- ELF: build-id and symbol of an address in a mapped file ---- */

struct elf_info {
	char build_id[2 * 40 + 1];
	char symbol[256];
	uint64_t sym_off;
	bool have_sym;
	uint64_t vaddr;         /* the address as a virtual address of the file */
};

/*
 * Modules are read with bounded pread()s into private memory, never mapped: the sandbox
 * can write some of the files it runs (a copy in the workspace), and a mapping of a file
 * that is truncated afterwards raises SIGBUS in whoever touches it — the supervisor. What
 * a lookup needs (the build-id, the PT_LOAD segments, the function symbols) is copied
 * once; a file changed after that is seen as it was, which is all a stack trace of a
 * call made at that time needs. Every size read from the file is bounded before use.
 */
#define MAX_PHDRS 256
#define MAX_LOADS 32
#define MAX_NOTE_BYTES (64u << 10)
#define MAX_SHDRS 4096
#define MAX_SYM_BYTES (32u << 20)       /* symbol and string tables, per module */

struct elf_sym {
	uint64_t value, size;
	uint32_t name;          /* offset in names */
};

struct elf_mod {
	dev_t dev;
	ino_t ino;              /* 0: empty slot, or not cacheable */
	uint64_t used;
	char build_id[2 * 40 + 1];
	struct { uint64_t off, filesz, vaddr; } load[MAX_LOADS];
	size_t n_load;
	struct elf_sym *syms;
	size_t n_syms, cap_syms;
	char *names;
	size_t names_len, names_cap;
};

static void mod_free(struct elf_mod *m)
{
	free(m->syms);
	free(m->names);
	*m = (struct elf_mod){ 0 };
}

/* Exactly len bytes at off, or an error (a short read is one: the file shrank). */
static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	if (off > (uint64_t)INT64_MAX - len)
		return -EINVAL;
	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		got += (size_t)n;
	}
	return 0;
}

static void *read_alloc(int fd, uint64_t off, uint64_t len)
{
	void *p;

	if (len == 0 || len > MAX_SYM_BYTES)
		return NULL;
	p = malloc((size_t)len);
	if (p && read_at(fd, p, (size_t)len, off) < 0) {
		free(p);
		return NULL;
	}
	return p;
}

static void mod_notes(struct elf_mod *m, int fd, const Elf64_Phdr *ph)
{
	_cleanup_free_ uint8_t *p = NULL;
	uint64_t off = 0, end = ph->p_filesz;

	if (end == 0 || end > MAX_NOTE_BYTES || !(p = malloc((size_t)end)) ||
	    read_at(fd, p, (size_t)end, ph->p_offset) < 0)
		return;
	while (off + sizeof(Elf64_Nhdr) <= end) {
		Elf64_Nhdr nh;
		uint64_t name, desc;

		memcpy(&nh, p + off, sizeof(nh));
		name = off + sizeof(nh);
		desc = name + (((uint64_t)nh.n_namesz + 3) & ~3ull);
		if (desc > end || nh.n_descsz > end - desc)
			break;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp(p + name, "GNU", 4) == 0 && nh.n_descsz <= 40) {
			audit_hex(m->build_id, p + desc, nh.n_descsz);
			return;
		}
		off = desc + (((uint64_t)nh.n_descsz + 3) & ~3ull);
	}
}

static int mod_add_sym(struct elf_mod *m, const Elf64_Sym *sym, const char *strs, size_t strs_len)
{
	size_t len = strnlen(strs + sym->st_name, strs_len - sym->st_name);

	len = MIN(len, (size_t)255);
	if (m->n_syms == m->cap_syms) {
		size_t cap = m->cap_syms ? 2 * m->cap_syms : 256;
		struct elf_sym *n = realloc(m->syms, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		m->syms = n;
		m->cap_syms = cap;
	}
	if (m->names_cap - m->names_len < len + 1) {
		size_t cap = MAX(2 * m->names_cap, m->names_len + len + 1 + 4096);
		char *n = realloc(m->names, cap);

		if (!n)
			return -ENOMEM;
		m->names = n;
		m->names_cap = cap;
	}
	memcpy(m->names + m->names_len, strs + sym->st_name, len);
	m->names[m->names_len + len] = '\0';
	m->syms[m->n_syms++] = (struct elf_sym){ .value = sym->st_value, .size = sym->st_size,
						 .name = (uint32_t)m->names_len };
	m->names_len += len + 1;
	return 0;
}

/* .symtab when the file is not stripped, else .dynsym: both, the lookup keeps the
 * closest. Only defined functions are kept. */
static void mod_symbols(struct elf_mod *m, int fd, const Elf64_Ehdr *eh)
{
	_cleanup_free_ Elf64_Shdr *sh = NULL;
	uint64_t budget = MAX_SYM_BYTES;

	if (!eh->e_shoff || eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shnum == 0 ||
	    eh->e_shnum > MAX_SHDRS)
		return;
	sh = malloc(eh->e_shnum * sizeof(*sh));
	if (!sh || read_at(fd, sh, eh->e_shnum * sizeof(*sh), eh->e_shoff) < 0)
		return;
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		_cleanup_free_ Elf64_Sym *sym = NULL;
		_cleanup_free_ char *strs = NULL;
		const Elf64_Shdr *s = &sh[i], *st;
		size_t n;

		if (s->sh_type != SHT_SYMTAB && s->sh_type != SHT_DYNSYM)
			continue;
		if (s->sh_link >= eh->e_shnum)
			continue;
		st = &sh[s->sh_link];
		if (s->sh_size > budget || st->sh_size > budget - s->sh_size)
			continue;
		budget -= s->sh_size + st->sh_size;
		n = (size_t)(s->sh_size / sizeof(Elf64_Sym));
		sym = read_alloc(fd, s->sh_offset, n * sizeof(Elf64_Sym));
		strs = read_alloc(fd, st->sh_offset, st->sh_size);
		if (!sym || !strs)
			continue;
		for (size_t j = 0; j < n; j++) {
			if (ELF64_ST_TYPE(sym[j].st_info) != STT_FUNC || sym[j].st_shndx == SHN_UNDEF ||
			    sym[j].st_name >= st->sh_size)
				continue;
			if (mod_add_sym(m, &sym[j], strs, (size_t)st->sh_size) < 0)
				return;
		}
	}
}

/* Read what lookups need from an open ELF file. */
static int mod_read(struct elf_mod *m, int fd)
{
	_cleanup_free_ Elf64_Phdr *ph = NULL;
	Elf64_Ehdr eh;

	if (read_at(fd, &eh, sizeof(eh), 0) < 0 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64)
		return -ENOEXEC;
	if (eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum > 0 && eh.e_phnum <= MAX_PHDRS) {
		ph = malloc(eh.e_phnum * sizeof(*ph));
		if (ph && read_at(fd, ph, eh.e_phnum * sizeof(*ph), eh.e_phoff) == 0) {
			for (unsigned i = 0; i < eh.e_phnum; i++) {
				if (ph[i].p_type == PT_LOAD && m->n_load < MAX_LOADS)
					m->load[m->n_load++] = (typeof(m->load[0])){
						ph[i].p_offset, ph[i].p_filesz, ph[i].p_vaddr };
				else if (ph[i].p_type == PT_NOTE && !m->build_id[0])
					mod_notes(m, fd, &ph[i]);
			}
		}
	}
	mod_symbols(m, fd, &eh);
	return 0;
}

/*
 * Modules read so far, kept between captures: a capture looks up ~45 candidate frames in
 * a handful of modules, and reading the module again for each frame was most of its
 * cost. Keyed by the device and inode /proc/<pid>/maps gives (and checked against fstat
 * when first read); a file replaced under the same name is another inode. Bounded, least
 * recently used first out; one lock, held for a whole lookup (captures are rare and the
 * notifier threads may capture at once).
 */
#define ELF_CACHE 16
static struct elf_mod elf_cache[ELF_CACHE];
static uint64_t elf_clock;
static pthread_mutex_t elf_lock = PTHREAD_MUTEX_INITIALIZER;

/* The module behind mp, from the cache or read into it; into *tmp when the file is not
 * the one the maps line names (the caller frees it). Called with elf_lock held. */
static const struct elf_mod *elf_get(pid_t pid, const struct mapping *mp, struct elf_mod *tmp)
{
	struct elf_mod *slot = &elf_cache[0], m = { 0 };
	_cleanup_close_ int fd = -1;
	char path[4200];
	struct stat st;

	for (size_t i = 0; i < ELF_CACHE; i++) {
		struct elf_mod *e = &elf_cache[i];

		if (mp->ino && e->ino == mp->ino && e->dev == mp->dev) {
			e->used = ++elf_clock;
			return e;
		}
		if (e->used < slot->used)
			slot = e;
	}
	/* O_NONBLOCK: a FIFO put at the path in place of the module must not block us. */
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, mp->start,
		 mp->end);
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(path, sizeof(path), "/proc/%d/root%s", pid, mp->path);
		fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	}
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || mod_read(&m, fd) < 0) {
		mod_free(&m);
		return NULL;
	}
	if (!mp->ino || st.st_ino != mp->ino || st.st_dev != mp->dev) {
		*tmp = m; /* not cacheable under the maps line's numbers */
		return tmp;
	}
	mod_free(slot);
	*slot = m;
	slot->dev = st.st_dev;
	slot->ino = st.st_ino;
	slot->used = ++elf_clock;
	return slot;
}

static int elf_lookup(pid_t pid, const struct mapping *mp, uint64_t addr, bool want_sym,
		      struct elf_info *ei)
{
	struct elf_mod tmp = { 0 };
	const struct elf_mod *m;
	uint64_t best = 0;
	bool found = false;

	memset(ei, 0, sizeof(*ei));
	ei->vaddr = addr - mp->start + mp->off;
	pthread_mutex_lock(&elf_lock);
	m = elf_get(pid, mp, &tmp);
	if (!m) {
		pthread_mutex_unlock(&elf_lock);
		return -ENOENT;
	}
	for (size_t i = 0; i < m->n_load; i++) {
		/* File offset -> virtual address through the segment that maps it. */
		if (ei->vaddr >= m->load[i].off && ei->vaddr - m->load[i].off < m->load[i].filesz) {
			ei->vaddr = ei->vaddr - m->load[i].off + m->load[i].vaddr;
			break;
		}
	}
	memcpy(ei->build_id, m->build_id, sizeof(ei->build_id));
	for (size_t j = 0; want_sym && j < m->n_syms; j++) {
		const struct elf_sym *s = &m->syms[j];

		if (s->value > ei->vaddr)
			continue;
		if (s->size && ei->vaddr - s->value >= s->size)
			continue;
		if (found && s->value <= best)
			continue;
		best = s->value;
		found = true;
		snprintf(ei->symbol, sizeof(ei->symbol), "%s", m->names + s->name);
	}
	if (found) {
		ei->have_sym = true;
		ei->sym_off = ei->vaddr - best;
	}
	mod_free(&tmp);
	pthread_mutex_unlock(&elf_lock);
	return 0;
}

static void fill_frame(pid_t pid, const struct maps *m, uint64_t ip, const char *sym,
		       uint64_t sym_off, struct strbuf *sb, struct audit_frame *f)
{
	const struct mapping *mp = maps_find(m, ip);
	struct elf_info ei;

	*f = (struct audit_frame){ .ip = ip };
	if (!mp || !mp->path)
		return;
	f->module = sb_put(sb, mp->path);
	/* A return address is one past the call: look it up at ip - 1 so a call that is
	 * the last instruction of a function is not attributed to the next one. */
	if (elf_lookup(pid, mp, ip - 1, !sym, &ei) < 0) {
		f->offset = ip - mp->start + mp->off;
		return;
	}
	if (ei.build_id[0])
		f->build_id = sb_put(sb, ei.build_id);
	if (sym) {
		f->symbol = sb_put(sb, sym);
		f->offset = sym_off;
	} else if (ei.have_sym) {
		f->symbol = sb_put(sb, ei.symbol);
		f->offset = ei.sym_off + 1;
	} else {
		f->offset = ei.vaddr + 1;
	}
}

/* ---- scan ---- */

static ssize_t peek(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0);
}

/* Is the instruction that ends at ret a call? */
static bool after_call(pid_t pid, uint64_t ret)
{
#if defined(__x86_64__)
	uint8_t b[7];

	if (peek(pid, ret - sizeof(b), b, sizeof(b)) != (ssize_t)sizeof(b))
		return false;
	if (b[2] == 0xE8) /* call rel32 */
		return true;
	/* call r/m64 is FF /2; its length follows from ModRM (+SIB) and displacement. */
	for (unsigned k = 2; k <= 7; k++) {
		uint8_t modrm, mod, rm;
		unsigned len = 2;

		if (b[7 - k] != 0xFF)
			continue;
		modrm = b[7 - k + 1];
		mod = modrm >> 6;
		rm = modrm & 7;
		if (((modrm >> 3) & 7) != 2)
			continue;
		if (mod != 3 && rm == 4) {
			len++;
			if (mod == 0 && k >= 3 && (b[7 - k + 2] & 7) == 5)
				len += 4;
		}
		if (mod == 1)
			len += 1;
		else if (mod == 2 || (mod == 0 && rm == 5))
			len += 4;
		if (len == k)
			return true;
	}
	return false;
#elif defined(__aarch64__)
	uint32_t insn;

	if (peek(pid, ret - 4, &insn, 4) != 4)
		return false;
	return (insn & 0xFC000000u) == 0x94000000u ||     /* BL */
	       (insn & 0xFFFFFC1Fu) == 0xD63F0000u;       /* BLR */
#else
	return true;
#endif
}

int audit_thread_syscall(pid_t tid, long *ret_nr, uint64_t *ret_sp, uint64_t *ret_pc)
{
	char path[64], line[512], *last, *prev;
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/syscall", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, line, sizeof(line) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	line[n] = '\0';
	/* "nr a0 .. a5 sp pc" while blocked in a syscall; "-1 sp pc" blocked elsewhere;
	 * "running" while not blocked */
	if (line[0] != '-' && (line[0] < '0' || line[0] > '9'))
		return -EAGAIN;
	line[strcspn(line, "\n")] = '\0';
	last = strrchr(line, ' ');
	if (!last)
		return -EIO;
	*last = '\0';
	prev = strrchr(line, ' ');
	if (!prev)
		return -EIO;
	if (ret_nr)
		*ret_nr = strtol(line, NULL, 10);
	if (ret_sp)
		*ret_sp = strtoull(prev + 1, NULL, 16);
	if (ret_pc)
		*ret_pc = strtoull(last + 1, NULL, 16);
	return 0;
}

static int read_sp(pid_t tid, uint64_t *sp)
{
	int r = audit_thread_syscall(tid, NULL, sp, NULL);

	if (r == -EIO)
		return -EAGAIN;
	return r < 0 ? r : *sp ? 0 : -EAGAIN;
}

static int capture_scan(pid_t pid, pid_t tid, uint64_t ip, uint64_t sp, const struct maps *m,
			struct audit_frame *frames, size_t max, struct strbuf *sb)
{
	const struct mapping *stack;
	_cleanup_free_ uint64_t *words = NULL;
	size_t n = 0, len;
	ssize_t got;
	int r;

	if (sp == 0 && (r = read_sp(tid, &sp)) < 0)
		return r;
	if (max == 0)
		return 0;
	fill_frame(pid, m, ip, NULL, 0, sb, &frames[n++]);
	stack = maps_find(m, sp);
	if (!stack)
		return (int)n;
	len = MIN((size_t)(stack->end - sp), (size_t)SCAN_BYTES) & ~(size_t)7;
	words = malloc(len);
	if (!words)
		return -ENOMEM;
	got = peek(pid, sp, words, len);
	if (got < 0)
		return n > 0 ? (int)n : -errno;
	for (size_t i = 0; i < (size_t)got / 8 && n < max; i++) {
		const struct mapping *mp = maps_find(m, words[i]);

		if (!mp || !mp->exec || !after_call(pid, words[i]))
			continue;
		fill_frame(pid, m, words[i], NULL, 0, sb, &frames[n++]);
	}
	return (int)n;
}

/* ---- ptrace + libunwind ---- */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* libunwind's entry points are macros naming its per-architecture symbols
 * (unw_step is _Ux86_64_step): the macro's expansion is the name to look up. */
#define UNW_NAME_(f) #f
#define UNW_NAME(f) UNW_NAME_(f)

static struct {
	__typeof__(unw_create_addr_space) *create_addr_space;
	__typeof__(unw_destroy_addr_space) *destroy_addr_space;
	__typeof__(unw_init_remote) *init_remote;
	__typeof__(unw_get_reg) *get_reg;
	__typeof__(unw_get_proc_name) *get_proc_name;
	__typeof__(unw_step) *step;
	__typeof__(_UPT_create) *upt_create;
	__typeof__(_UPT_destroy) *upt_destroy;
	unw_accessors_t *upt_accessors;
	bool ok;
} unw;
static pthread_once_t unw_once = PTHREAD_ONCE_INIT;

static void unw_load(void)
{
	/* Never closed: the process keeps them until it exits. Debian's libunwind-ptrace
	 * does not name the library it needs (the architecture's, which brings libunwind
	 * and liblzma): that one first, global, for the second to bind to. */
	void *arch = dlopen("libunwind-" UNW_NAME(UNW_TARGET) ".so.8", RTLD_NOW | RTLD_GLOBAL);
	void *upt = arch ? dlopen("libunwind-ptrace.so.0", RTLD_NOW | RTLD_LOCAL) : NULL;

	if (!upt)
		return;
	unw.create_addr_space = dlsym(arch, UNW_NAME(unw_create_addr_space));
	unw.destroy_addr_space = dlsym(arch, UNW_NAME(unw_destroy_addr_space));
	unw.init_remote = dlsym(arch, UNW_NAME(unw_init_remote));
	unw.get_reg = dlsym(arch, UNW_NAME(unw_get_reg));
	unw.get_proc_name = dlsym(arch, UNW_NAME(unw_get_proc_name));
	unw.step = dlsym(arch, UNW_NAME(unw_step));
	unw.upt_create = dlsym(upt, "_UPT_create");
	unw.upt_destroy = dlsym(upt, "_UPT_destroy");
	unw.upt_accessors = dlsym(upt, "_UPT_accessors");
	unw.ok = unw.create_addr_space && unw.destroy_addr_space && unw.init_remote &&
		 unw.get_reg && unw.get_proc_name && unw.step && unw.upt_create &&
		 unw.upt_destroy && unw.upt_accessors;
}

static int capture_ptrace(pid_t pid, pid_t tid, const struct maps *m, struct audit_frame *frames,
			  size_t max, struct strbuf *sb)
{
	unw_addr_space_t as = NULL;
	void *upt = NULL;
	unw_cursor_t c;
	uint64_t deadline;
	int st, w = 0, n = 0, r;

	pthread_once(&unw_once, unw_load);
	if (!unw.ok)
		return -ENOSYS; /* no libunwind-ptrace on this host */
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0)
		return -errno;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0) {
		r = -errno;
		ptrace(PTRACE_DETACH, tid, 0, 0);
		return r;
	}
	/* A thread in a killable seccomp wait stops only once answered: never wait for it
	 * here, the answer is ours to give. It stays seized and stops after the reply;
	 * the kernel drops the trace when we detach or exit. */
	deadline = now_ms() + INTERRUPT_WAIT_MS;
	while ((w = waitpid(tid, &st, __WALL | WNOHANG)) == 0 && now_ms() < deadline) {
		struct timespec ts = { 0, 200000 };

		nanosleep(&ts, NULL);
	}
	if (w <= 0 || !WIFSTOPPED(st))
		return -ETIMEDOUT;

	as = unw.create_addr_space(unw.upt_accessors, 0);
	upt = as ? unw.upt_create(tid) : NULL;
	r = upt ? unw.init_remote(&c, as, upt) : -1;
	while (r >= 0 && (size_t)n < max) {
		unw_word_t ip, off = 0;
		char name[256];

		if (unw.get_reg(&c, UNW_REG_IP, &ip) < 0)
			break;
		if (unw.get_proc_name(&c, name, sizeof(name), &off) == 0)
			fill_frame(pid, m, ip, name, off, sb, &frames[n]);
		else
			fill_frame(pid, m, ip, NULL, 0, sb, &frames[n]);
		n++;
		if (unw.step(&c) <= 0)
			break;
	}
	if (upt)
		unw.upt_destroy(upt);
	if (as)
		unw.destroy_addr_space(as);
	ptrace(PTRACE_DETACH, tid, 0, 0);
	return n > 0 ? n : -EIO;
}

int audit_stack_capture(pid_t pid, pid_t tid, uint64_t ip, uint64_t sp,
			enum audit_stack_method method, struct audit_frame *frames, size_t max,
			char *strbuf, size_t strbuf_len)
{
	struct strbuf sb = { strbuf, strbuf_len, 0 };
	struct maps m = { 0 };
	int r;

	if (!frames || (!strbuf && strbuf_len))
		return -EINVAL;
	if (tid <= 0)
		tid = pid;
	r = maps_read(pid, &m);
	if (r < 0)
		return r;
	if (method == AUDIT_STACK_PTRACE)
		r = capture_ptrace(pid, tid, &m, frames, max, &sb);
	else
		r = capture_scan(pid, tid, ip, sp, &m, frames, max, &sb);
	maps_done(&m);
	return r;
}
