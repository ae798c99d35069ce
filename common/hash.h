/* SPDX-License-Identifier: MIT */
/*
 * FNV-1a, for the in-memory tables keyed by names the sandbox chooses (directory cache,
 * change set, DNS pins, audit totals). Not collision resistant: every such table is
 * bounded or chained, so a crafted collision costs the sandbox time, never a wrong answer.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

static inline uint32_t fnv1a(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 16777619u;
	return h;
}

/* The 64-bit FNV-1a, from h (FNV1A64_INIT, or another start for a second hash of the same
 * bytes): where 32 bits name too few things (a file name, a table of millions). */
#define FNV1A64_INIT 1469598103934665603ull

static inline uint64_t fnv1a64(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ull;
	return h;
}
