/* SPDX-License-Identifier: MIT */
/*
 * The filter language of `moat audit dump --filter`:
 *
 *   expr  := conj { "or" conj }
 *   conj  := term { "and" term }
 *   term  := FIELD "=" VALUE | FIELD "!=" VALUE | FIELD "~" TEXT
 *
 * Terms are whitespace-separated words; a value may be double-quoted to hold spaces.
 * Fields are looked up in the record's JSON form (audit_rec_to_json), so the names a
 * user sees in `dump --json` are the names a filter takes; schema keys work too.
 * Values compare as text: this keeps one rule for strings and numbers (pid=12).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit-internal.h"

enum op { OP_EQ, OP_NE, OP_HAS };

struct term {
	char *field, *value;
	enum op op;
	bool new_group;                 /* preceded by "or" */
};

struct audit_filter {
	struct term *terms;
	size_t n;
};

void audit_filter_free(struct audit_filter *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++) {
		free(f->terms[i].field);
		free(f->terms[i].value);
	}
	free(f->terms);
	free(f);
}

/* Next word of *p, unquoting "..." anywhere in it; NULL at the end. */
static char *next_word(const char **p, bool *bad_quote)
{
	const char *s = *p;
	char *w, *q;
	bool quoted = false;

	while (*s == ' ' || *s == '\t' || *s == '\n')
		s++;
	if (!*s)
		return NULL;
	w = q = malloc(strlen(s) + 1);
	if (!w)
		return NULL;
	for (; *s && (quoted || (*s != ' ' && *s != '\t' && *s != '\n')); s++) {
		if (*s == '"')
			quoted = !quoted;
		else if (*s == '\\' && quoted && s[1])
			*q++ = *++s;
		else
			*q++ = *s;
	}
	*q = '\0';
	*bad_quote = quoted;
	*p = s;
	return w;
}

int audit_filter_parse(const char *expr, struct audit_filter **ret, struct moat_error *e)
{
	struct audit_filter *f;
	const char *p = expr ? expr : "";
	bool want_term = true, new_group = false;
	char *w;
	int r = 0;

	f = calloc(1, sizeof(*f));
	if (!f)
		return moat_error_errno(e, ENOMEM);
	for (;;) {
		bool bad_quote = false;
		struct term t = { 0 };
		char *op;

		w = next_word(&p, &bad_quote);
		if (!w)
			break;
		if (bad_quote) {
			r = moat_error_set(e, EINVAL, "unterminated quote in '%s'", w);
			break;
		}
		if (!want_term) {
			if (streq(w, "and") || streq(w, "or")) {
				new_group = streq(w, "or");
				want_term = true;
				free(w);
				continue;
			}
			r = moat_error_set(e, EINVAL, "expected 'and' or 'or' before '%s'", w);
			break;
		}
		op = strpbrk(w, "=~!");
		if (!op || op == w) {
			r = moat_error_set(e, EINVAL, "'%s' is not FIELD=VALUE, FIELD!=VALUE or FIELD~TEXT", w);
			break;
		}
		if (op[0] == '!' && op[1] == '=') {
			t.op = OP_NE;
			t.value = strdup(op + 2);
		} else if (op[0] == '=') {
			t.op = OP_EQ;
			t.value = strdup(op + 1);
		} else if (op[0] == '~') {
			t.op = OP_HAS;
			t.value = strdup(op + 1);
		} else {
			r = moat_error_set(e, EINVAL, "'%s': unknown operator", w);
			break;
		}
		*op = '\0';
		t.field = strdup(w);
		t.new_group = new_group && f->n > 0;
		if (!t.field || !t.value) {
			free(t.field);
			free(t.value);
			r = moat_error_errno(e, ENOMEM);
			break;
		}
		{
			struct term *nt = realloc(f->terms, (f->n + 1) * sizeof(*nt));

			if (!nt) {
				free(t.field);
				free(t.value);
				r = moat_error_errno(e, ENOMEM);
				break;
			}
			f->terms = nt;
			f->terms[f->n++] = t;
		}
		free(w);
		w = NULL;
		want_term = false;
		new_group = false;
	}
	if (r == 0 && want_term && f->n > 0)
		r = moat_error_set(e, EINVAL, "expression ends after 'and'/'or'");
	free(w);
	if (r < 0) {
		audit_filter_free(f);
		return r;
	}
	*ret = f;
	return 0;
}

/* The value as the text a user would type. Returns a malloc'd string or NULL. */
static char *value_text(const json_t *v)
{
	char *s = NULL;

	switch (json_typeof(v)) {
	case JSON_STRING:
		return strdup(json_string_value(v));
	case JSON_INTEGER:
		if (asprintf(&s, "%" JSON_INTEGER_FORMAT, json_integer_value(v)) < 0)
			return NULL;
		return s;
	case JSON_TRUE:
		return strdup("true");
	case JSON_FALSE:
		return strdup("false");
	case JSON_NULL:
		return strdup("null");
	case JSON_REAL:
	case JSON_ARRAY:
	case JSON_OBJECT:
	default:
		return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	}
}

static bool text_match(const char *text, const struct term *t)
{
	if (!text)
		return false;
	if (t->op == OP_HAS)
		return strstr(text, t->value) != NULL;
	return streq(text, t->value);
}

static bool term_match(const struct term *t, const json_t *rec)
{
	const char *name = t->field;
	const json_t *v;
	bool m;
	char *text;

	v = json_object_get(rec, name);
	if (!v && (name = audit__long_name(t->field)))
		v = json_object_get(rec, name);
	if (!v)
		return t->op == OP_NE;
	text = value_text(v);
	m = text_match(text, t);
	free(text);
	/* errno=EACCES: the name is what people type; the number is what is stored. */
	if (!m && name && streq(name, "errno")) {
		const json_t *n = json_object_get(rec, "errno_name");

		if (json_is_string(n))
			m = text_match(json_string_value(n), t);
	}
	if (t->op == OP_NE) {
		const struct term eq = { .field = t->field, .value = t->value, .op = OP_EQ };

		return !term_match(&eq, rec);
	}
	return m;
}

bool audit_filter_match(const struct audit_filter *f, const json_t *rec)
{
	bool any = false, cur = true;

	if (!f || f->n == 0)
		return true;
	for (size_t i = 0; i < f->n; i++) {
		if (f->terms[i].new_group) {
			any = any || cur;
			cur = true;
		}
		cur = cur && term_match(&f->terms[i], rec);
	}
	return any || cur;
}

uint64_t audit_percentile(const uint64_t *sorted, size_t n, double pct)
{
	size_t rank;
	double x;

	if (n == 0)
		return 0;
	if (pct <= 0)
		return sorted[0];
	if (pct >= 100)
		return sorted[n - 1];
	/* Nearest rank: the smallest value with at least pct % of the values at or below
	 * it. The epsilon keeps 95 % of 20 at rank 19, not 20 by float rounding. */
	x = pct / 100.0 * (double)n - 1e-9;
	rank = (size_t)x;
	if ((double)rank < x)
		rank++;
	if (rank == 0)
		rank = 1;
	return sorted[MIN(rank, n) - 1];
}
