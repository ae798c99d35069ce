/* SPDX-License-Identifier: MIT */
/*
 * The monotonic clock in nanoseconds, for latencies, deadlines and the time stamps of
 * audit records and events (which compare against each other, never against the wall
 * clock). Safe from any thread; CLOCK_MONOTONIC cannot fail on Linux.
 */
#pragma once

#include <stdint.h>
#include <time.h>

static inline uint64_t now_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
