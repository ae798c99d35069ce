/* SPDX-License-Identifier: MIT */
/*
 * syscall-table internals shared between sc.c and the generated sc-table.c. Not for
 * other modules: they use sc.h.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "sc.h"

/* One tabulated ABI: its entries sorted by number and two dense maps into them. */
struct sc__abi {
	uint32_t audit_arch;          /* AUDIT_ARCH_* */
	const char *name;             /* "x86_64" */
	const struct sc_entry *table; /* sorted by nr, strictly ascending */
	size_t count;
	const int16_t *by_nr;         /* nr -> index into table, -1 for a hole */
	size_t nr_count;              /* highest nr + 1 */
	const int16_t *by_id;         /* enum sc_id -> index into table, -1 if not on this ABI */
};

extern const struct sc__abi sc__abis[];
extern const size_t sc__n_abis;
extern const char *const sc__id_names[_SC_ID_MAX];
