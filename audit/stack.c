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
 * Both methods name modules from /proc/<pid>/maps, read the build-id from the ELF
 * note and symbols from .symtab/.dynsym of the mapped file (through
 * /proc/<pid>/map_files, so the tracee's mount namespace is respected).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libunwind-ptrace.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

static bool in_file(size_t size, uint64_t off, uint64_t len)
{
	return off <= size && len <= size - off;
}

static void elf_symbol(const uint8_t *p, size_t size, const Elf64_Ehdr *eh, struct elf_info *ei)
{
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(p + eh->e_shoff);
	uint64_t best = 0;
	bool found = false;

	if (!eh->e_shoff || eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    !in_file(size, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
		return;
	/* .symtab when the file is not stripped, else .dynsym: try both, keep the closest. */
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *s = &sh[i], *strs;
		const Elf64_Sym *sym;
		size_t n;

		if (s->sh_type != SHT_SYMTAB && s->sh_type != SHT_DYNSYM)
			continue;
		if (s->sh_link >= eh->e_shnum || !in_file(size, s->sh_offset, s->sh_size))
			continue;
		strs = &sh[s->sh_link];
		if (!in_file(size, strs->sh_offset, strs->sh_size))
			continue;
		sym = (const Elf64_Sym *)(p + s->sh_offset);
		n = s->sh_size / sizeof(Elf64_Sym);
		for (size_t j = 0; j < n; j++) {
			if (ELF64_ST_TYPE(sym[j].st_info) != STT_FUNC || sym[j].st_shndx == SHN_UNDEF)
				continue;
			if (sym[j].st_value > ei->vaddr || sym[j].st_name >= strs->sh_size)
				continue;
			if (sym[j].st_size && ei->vaddr >= sym[j].st_value + sym[j].st_size)
				continue;
			if (found && sym[j].st_value <= best)
				continue;
			best = sym[j].st_value;
			found = true;
			snprintf(ei->symbol, sizeof(ei->symbol), "%.*s",
				 (int)strnlen((const char *)p + strs->sh_offset + sym[j].st_name,
					      strs->sh_size - sym[j].st_name),
				 (const char *)p + strs->sh_offset + sym[j].st_name);
		}
	}
	if (found) {
		ei->have_sym = true;
		ei->sym_off = ei->vaddr - best;
	}
}

/*
 * Mapped ELF files, kept between captures: a capture looks up ~45 candidate frames in a
 * handful of modules, and opening and mapping the module again for each frame was most
 * of its 4-7 ms. Keyed by the device and inode /proc/<pid>/maps gives (and checked
 * against fstat when first mapped); a file replaced under the same name is another
 * inode, one rewritten in place is seen through the shared page cache. Bounded, least
 * recently used first out; one lock, held for a whole lookup (captures are rare and the
 * notifier threads may capture at once).
 */
#define ELF_CACHE 16
static struct elf_file {
	dev_t dev;
	ino_t ino;              /* 0: empty */
	uint8_t *p;
	size_t size;
	uint64_t used;
} elf_cache[ELF_CACHE];
static uint64_t elf_clock;
static pthread_mutex_t elf_lock = PTHREAD_MUTEX_INITIALIZER;

/* The module behind mp, mapped, into *ret: from the cache, or opened, mapped and cached.
 * A file that is not the one the maps line names (the fs reports other numbers, or it
 * was replaced meanwhile) is mapped for this lookup only: ret->ino is 0 and the caller
 * unmaps it. Called with elf_lock held; a cached mapping stays valid until the lock is
 * released. */
static int elf_get(pid_t pid, const struct mapping *mp, struct elf_file *ret)
{
	struct elf_file *slot = &elf_cache[0];
	_cleanup_close_ int fd = -1;
	char path[4200];
	struct stat st;
	void *p;

	for (size_t i = 0; i < ELF_CACHE; i++) {
		struct elf_file *e = &elf_cache[i];

		if (mp->ino && e->ino == mp->ino && e->dev == mp->dev) {
			e->used = ++elf_clock;
			*ret = *e;
			return 0;
		}
		if (e->used < slot->used)
			slot = e;
	}
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, mp->start,
		 mp->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(path, sizeof(path), "/proc/%d/root%s", pid, mp->path);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0 || fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(Elf64_Ehdr))
		return -ENOENT;
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	*ret = (struct elf_file){ .p = p, .size = (size_t)st.st_size };
	if (!mp->ino || st.st_ino != mp->ino || st.st_dev != mp->dev)
		return 0; /* not cacheable under the maps line's numbers */
	if (slot->ino)
		munmap(slot->p, slot->size);
	*slot = (struct elf_file){ .dev = st.st_dev, .ino = st.st_ino, .p = p,
				   .size = (size_t)st.st_size, .used = ++elf_clock };
	*ret = *slot;
	return 0;
}

static int elf_lookup(pid_t pid, const struct mapping *mp, uint64_t addr, bool want_sym,
		      struct elf_info *ei)
{
	struct elf_file ef;
	const Elf64_Ehdr *eh;
	const Elf64_Phdr *ph;
	const uint8_t *p;
	size_t size;
	int r;

	memset(ei, 0, sizeof(*ei));
	ei->vaddr = addr - mp->start + mp->off;
	pthread_mutex_lock(&elf_lock);
	r = elf_get(pid, mp, &ef);
	if (r < 0) {
		pthread_mutex_unlock(&elf_lock);
		return r;
	}
	p = ef.p;
	size = ef.size;
	eh = (const Elf64_Ehdr *)p;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    !in_file(size, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)))
		goto out;
	ph = (const Elf64_Phdr *)(p + eh->e_phoff);
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		/* File offset -> virtual address through the segment that maps it. */
		if (ph[i].p_type == PT_LOAD && ei->vaddr >= ph[i].p_offset &&
		    ei->vaddr < ph[i].p_offset + ph[i].p_filesz) {
			ei->vaddr = ei->vaddr - ph[i].p_offset + ph[i].p_vaddr;
			break;
		}
	}
	for (unsigned i = 0; i < eh->e_phnum && !ei->build_id[0]; i++) {
		uint64_t off = ph[i].p_offset, end = ph[i].p_offset + ph[i].p_filesz;

		if (ph[i].p_type != PT_NOTE || !in_file(size, off, ph[i].p_filesz))
			continue;
		while (off + sizeof(Elf64_Nhdr) <= end) {
			const Elf64_Nhdr *nh = (const Elf64_Nhdr *)(p + off);
			uint64_t name = off + sizeof(*nh), desc = name + ((nh->n_namesz + 3) & ~3u);

			if (desc + nh->n_descsz > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(p + name, "GNU", 4) == 0 && nh->n_descsz <= 40) {
				audit__hex(ei->build_id, p + desc, nh->n_descsz);
				break;
			}
			off = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	if (want_sym)
		elf_symbol(p, size, eh, ei);
out:
	if (!ef.ino)
		munmap(ef.p, ef.size);
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

static int read_sp(pid_t tid, uint64_t *sp)
{
	_cleanup_fclose_ FILE *f = NULL;
	char path[64], line[512], *last, *prev;

	snprintf(path, sizeof(path), "/proc/%d/syscall", tid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(line, sizeof(line), f))
		return -EIO;
	/* "nr a0 .. a5 sp pc" while blocked in a syscall; "running" or "-1 sp pc" else. */
	line[strcspn(line, "\n")] = '\0';
	last = strrchr(line, ' ');
	if (!last)
		return -EAGAIN;
	*last = '\0';
	prev = strrchr(line, ' ');
	if (!prev)
		return -EAGAIN;
	*sp = strtoull(prev + 1, NULL, 16);
	return *sp ? 0 : -EAGAIN;
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

static int capture_ptrace(pid_t pid, pid_t tid, const struct maps *m, struct audit_frame *frames,
			  size_t max, struct strbuf *sb)
{
	unw_addr_space_t as = NULL;
	void *upt = NULL;
	unw_cursor_t c;
	uint64_t deadline;
	int st, w = 0, n = 0, r;

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

	as = unw_create_addr_space(&_UPT_accessors, 0);
	upt = as ? _UPT_create(tid) : NULL;
	r = upt ? unw_init_remote(&c, as, upt) : -1;
	while (r >= 0 && (size_t)n < max) {
		unw_word_t ip, off = 0;
		char name[256];

		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0)
			break;
		if (unw_get_proc_name(&c, name, sizeof(name), &off) == 0)
			fill_frame(pid, m, ip, name, off, sb, &frames[n]);
		else
			fill_frame(pid, m, ip, NULL, 0, sb, &frames[n]);
		n++;
		if (unw_step(&c) <= 0)
			break;
	}
	if (upt)
		_UPT_destroy(upt);
	if (as)
		unw_destroy_addr_space(as);
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
