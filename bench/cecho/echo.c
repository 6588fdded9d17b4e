/*
 * cecho is bench/jsonecho written in C: a one-shot capability runtime of the
 * neuron/capability-runtime-v1-json protocol (doc/capabilityruntime.md, "The
 * one-shot JSON protocol"). It reads one Request, {"params":{...}}, from
 * stdin to its end, checks that it is one JSON object, and writes one
 * Response, {"result":<the params>}, and a newline to stdout. The same
 * source builds natively (the process backend's one-shot runtime) and for
 * wasm32-wasi (the wasm backend's module), so that the wasm benchmarks can
 * compare the two backends on a guest that has no language runtime to start.
 *
 * It does what jsonecho does with encoding/json, within the Requests a
 * backend writes: the whole first JSON value on stdin is checked (strings,
 * escapes, numbers, literals, nesting at most MAX_DEPTH deep); a member
 * named exactly "params" whose value is an object is the result, copied as
 * its bytes (the backend parses them again); an absent or null "params" is
 * the result null; anything else is an error on stderr and exit status 1.
 * Unlike encoding/json it matches the key "params" exactly (not ignoring
 * case, not decoding escapes in it) and does not reorder the params' keys;
 * the last "params" member wins.
 *
 * Only read(2), write(2) and the C library's allocator are used: under WASI
 * preview 1 that is fd_read, fd_write and proc_exit.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>

#define MAX_DEPTH 1000

static const char *src;  /* the request */
static size_t len;        /* its length */

static void die(const char *msg) {
	const char *p = "cecho: ";
	(void)!write(2, p, strlen(p));
	(void)!write(2, msg, strlen(msg));
	(void)!write(2, "\n", 1);
	exit(1);
}

static void write_all(const char *p, size_t n) {
	while (n > 0) {
		ssize_t w = write(1, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			die("writing stdout failed");
		}
		p += w;
		n -= (size_t)w;
	}
}

static size_t skip_ws(size_t i) {
	while (i < len && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r'))
		i++;
	return i;
}

static int is_hex(char c) {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* string checks the string starting at src[i] == '"' and returns the index
 * after its closing quote. */
static size_t string(size_t i) {
	i++;
	while (i < len) {
		unsigned char c = (unsigned char)src[i];
		if (c == '"')
			return i + 1;
		if (c < 0x20)
			die("control character in a string");
		if (c == '\\') {
			if (++i >= len)
				break;
			switch (src[i]) {
			case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
				i++;
				break;
			case 'u':
				if (i + 4 >= len || !is_hex(src[i + 1]) || !is_hex(src[i + 2]) || !is_hex(src[i + 3]) || !is_hex(src[i + 4]))
					die("bad \\u escape");
				i += 5;
				break;
			default:
				die("bad escape in a string");
			}
			continue;
		}
		i++;
	}
	die("unterminated string");
	return 0;
}

static size_t digits(size_t i) {
	size_t start = i;
	while (i < len && src[i] >= '0' && src[i] <= '9')
		i++;
	if (i == start)
		die("bad number");
	return i;
}

static size_t number(size_t i) {
	if (src[i] == '-')
		i++;
	if (i < len && src[i] == '0')
		i++;
	else
		i = digits(i);
	if (i < len && src[i] == '.')
		i = digits(i + 1);
	if (i < len && (src[i] == 'e' || src[i] == 'E')) {
		i++;
		if (i < len && (src[i] == '+' || src[i] == '-'))
			i++;
		i = digits(i);
	}
	return i;
}

static size_t literal(size_t i, const char *word) {
	size_t n = strlen(word);
	if (len - i < n || memcmp(src + i, word, n) != 0)
		die("bad literal");
	return i + n;
}

static size_t value(size_t i, int depth);

/* object checks the object at src[i] == '{' and returns the index after it.
 * At the top level (depth 0) it records the last "params" member's value. */
static size_t object(size_t i, int depth, size_t *pstart, size_t *pend) {
	i = skip_ws(i + 1);
	if (i < len && src[i] == '}')
		return i + 1;
	for (;;) {
		if (i >= len || src[i] != '"')
			die("expected a member name");
		size_t k = i, kend = string(i);
		i = skip_ws(kend);
		if (i >= len || src[i] != ':')
			die("expected ':'");
		size_t v = skip_ws(i + 1);
		i = value(v, depth + 1);
		if (pstart != NULL && kend - k == 8 && memcmp(src + k, "\"params\"", 8) == 0) {
			*pstart = v;
			*pend = i;
		}
		i = skip_ws(i);
		if (i < len && src[i] == ',') {
			i = skip_ws(i + 1);
			continue;
		}
		if (i < len && src[i] == '}')
			return i + 1;
		die("expected ',' or '}'");
	}
}

static size_t array(size_t i, int depth) {
	i = skip_ws(i + 1);
	if (i < len && src[i] == ']')
		return i + 1;
	for (;;) {
		i = skip_ws(value(i, depth + 1));
		if (i < len && src[i] == ',') {
			i = skip_ws(i + 1);
			continue;
		}
		if (i < len && src[i] == ']')
			return i + 1;
		die("expected ',' or ']'");
	}
}

/* value checks the value at src[i] and returns the index after it. */
static size_t value(size_t i, int depth) {
	if (depth > MAX_DEPTH)
		die("nested too deep");
	if (i >= len)
		die("unexpected end of input");
	switch (src[i]) {
	case '{': return object(i, depth, NULL, NULL);
	case '[': return array(i, depth);
	case '"': return string(i);
	case 't': return literal(i, "true");
	case 'f': return literal(i, "false");
	case 'n': return literal(i, "null");
	default:
		if (src[i] == '-' || (src[i] >= '0' && src[i] <= '9'))
			return number(i);
		die("unexpected character");
	}
	return 0;
}

int main(void) {
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	if (buf == NULL)
		die("out of memory");
	for (;;) {
		if (n == cap) {
			cap *= 2;
			char *grown = realloc(buf, cap);
			if (grown == NULL)
				die("out of memory");
			buf = grown;
		}
		ssize_t r = read(0, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			die("reading stdin failed");
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	src = buf;
	len = n;

	size_t i = skip_ws(0);
	if (i >= len || src[i] != '{')
		die("the request is not a JSON object");
	size_t ps = 0, pe = 0;
	object(i, 0, &ps, &pe);

	if (pe == 0 || src[ps] == 'n') {
		ps = 0;
		pe = 4;
		src = "null";
	} else if (src[ps] != '{') {
		die("params is not an object");
	}
	static const char head[] = "{\"result\":";
	static const char tail[] = "}\n";
	write_all(head, sizeof head - 1);
	write_all(src + ps, pe - ps);
	write_all(tail, sizeof tail - 1);
	return 0;
}
