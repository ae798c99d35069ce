/* SPDX-License-Identifier: MIT */
/*
 * events.c: the lines `moat run --events` writes, read back as JSON from a pipe: their
 * fields, the rate limit (every denial is either a line or counted in a "dropped" line),
 * concurrent writers (no line is torn), and the refusal of an existing file.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "events.h"
#include "log.h"

/* A file to write events to, and everything read back from it as JSON objects. */
struct sink {
	char path[64];
	json_t *lines;
};

static struct events *sink_open(struct sink *s)
{
	struct events *e = NULL;

	snprintf(s->path, sizeof(s->path), "/tmp/moat-events-XXXXXX");
	assert_true(mkdtemp(s->path) != NULL);
	strcat(s->path, "/ev");
	assert_int_equal(events_open(s->path, &e), 0);
	return e;
}

static void sink_read(struct sink *s)
{
	FILE *f = fopen(s->path, "re");
	char line[4096];

	assert_non_null(f);
	s->lines = json_array();
	while (fgets(line, sizeof(line), f)) {
		json_t *j = json_loads(line, 0, NULL);

		assert_non_null(j); /* every line is one whole JSON object */
		json_array_append_new(s->lines, j);
	}
	fclose(f);
	unlink(s->path);
	*strrchr(s->path, '/') = '\0';
	rmdir(s->path);
}

static size_t count(json_t *lines, const char *kind, json_int_t *dropped)
{
	size_t i, n = 0;
	json_t *j;

	if (dropped)
		*dropped = 0;
	json_array_foreach(lines, i, j) {
		const char *k = json_string_value(json_object_get(j, "event"));

		if (k && strcmp(k, kind) == 0)
			n++;
		if (dropped && k && strcmp(k, "dropped") == 0)
			*dropped += json_integer_value(json_object_get(j, "count"));
	}
	return n;
}

static void test_fields(void **state)
{
	struct sink s;
	struct events *e = sink_open(&s);
	json_t *d, *r;

	(void)state;
	events_denial(e, 42, "openat", "/etc/shadow", NULL, "hide /etc/shadow* (default profile)",
		      ENOENT);
	events_denial(e, 43, "connect", NULL, "10.0.0.1:80", "no rule allows it", ECONNREFUSED);
	events_limit(e, "memory", NULL);
	events_result(e, 137, "memory", 2500000000ull, 1000000ull, 2);
	events_close(e);
	sink_read(&s);
	assert_int_equal(json_array_size(s.lines), 4);
	d = json_array_get(s.lines, 0);
	assert_string_equal(json_string_value(json_object_get(d, "syscall")), "openat");
	assert_string_equal(json_string_value(json_object_get(d, "path")), "/etc/shadow");
	assert_string_equal(json_string_value(json_object_get(d, "errno")), "ENOENT");
	assert_int_equal(json_integer_value(json_object_get(d, "pid")), 42);
	assert_non_null(strstr(json_string_value(json_object_get(d, "hint")), "hides"));
	d = json_array_get(s.lines, 1);
	assert_string_equal(json_string_value(json_object_get(d, "addr")), "10.0.0.1:80");
	assert_non_null(strstr(json_string_value(json_object_get(d, "hint")), "--allow-net"));
	assert_null(json_object_get(d, "path"));
	assert_string_equal(json_string_value(json_object_get(json_array_get(s.lines, 2), "limit")),
			    "memory");
	r = json_array_get(s.lines, 3);
	assert_string_equal(json_string_value(json_object_get(r, "event")), "result");
	assert_int_equal(json_integer_value(json_object_get(r, "exit_status")), 137);
	assert_int_equal(json_integer_value(json_object_get(r, "wall_ms")), 2500);
	assert_int_equal(json_integer_value(json_object_get(r, "denials")), 2);
	json_decref(s.lines);
}

/* A flood: lines are bounded, and lines + dropped accounts for every denial. */
static void test_rate_limit(void **state)
{
	struct sink s;
	struct events *e = sink_open(&s);
	json_int_t dropped;
	size_t lines;

	(void)state;
	for (int i = 0; i < 5000; i++)
		events_denial(e, 1, "openat", "/x", NULL, "unmapped", ENOENT);
	events_result(e, 0, "exited", 0, 0, 5000);
	events_close(e);
	sink_read(&s);
	lines = count(s.lines, "denial", &dropped);
	assert_true(lines >= EVENTS_BURST);
	assert_true(lines < EVENTS_BURST + 500); /* 5000 calls take far less than 3 s */
	assert_int_equal((json_int_t)lines + dropped, 5000);
	/* the result is never dropped, and comes after the dropped count */
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(s.lines, json_array_size(s.lines) - 1), "event")),
			    "result");
	json_decref(s.lines);
}

static void *writer(void *arg)
{
	for (int i = 0; i < 100; i++)
		events_denial(arg, 7, "mkdir", "/a/rather/long/path/to/make/lines/longer/than/a/few/bytes",
			      NULL, "ro-bind /usr (default profile)", EROFS);
	return NULL;
}

static void test_threads(void **state)
{
	struct sink s;
	struct events *e = sink_open(&s);
	pthread_t t[4];
	json_int_t dropped;

	(void)state;
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, writer, e), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	events_close(e);
	sink_read(&s); /* asserts every line parses: none was torn */
	assert_int_equal((json_int_t)count(s.lines, "denial", &dropped) + dropped, 400);
	json_decref(s.lines);
}

static void test_refuses_existing(void **state)
{
	char dir[] = "/tmp/moat-events-XXXXXX", path[64], buf[16] = { 0 };
	struct events *e = NULL;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/keep", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "precious", 8), 8);
	close(fd);
	assert_int_equal(events_open(path, &e), -EEXIST);
	assert_null(e);
	fd = open(path, O_RDONLY);
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), 8);
	close(fd);
	assert_string_equal(buf, "precious");
	assert_int_equal(events_open("fd:x", &e), -EINVAL);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_rate_limit),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_refuses_existing),
	};

	moat_log_level = -1; /* the refusals above log errors by design */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
