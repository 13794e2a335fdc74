// SPDX-License-Identifier: GPL-2.0-only
/*
 * hil-uverbs: runs guest/kverbs' command language through libibverbs and librdmacm.
 *
 *   hil-uverbs [-s] [-w DRAIN_MS] [-m MAX_WRS] [FILE]
 *
 * Reads commands (one a line, or ';'-separated; blank lines and '#' comments skipped) from FILE
 * or stdin, all of them before anything runs: a line that is malformed, or an operation of the
 * kernel executor that makes no sense here, gets a {"ev":"reject"} record naming its line and
 * nothing runs. Then each command runs in order between a "cmd" and a "done" record; a failed one
 * does not stop the rest. A drain whose marker does not complete in DRAIN_MS (default 10000)
 * writes a "hang" record and ends the run. At the end every object left is destroyed.
 *
 * With -s (streaming) each line runs as soon as it is read, so whoever writes the input can wait
 * for a command's "done" record (every record is flushed as written) and act before sending the
 * next line; a rejected line then ends the run (what ran before it is torn down).
 *
 * Exit status: 0 every command returned 0; 1 a command failed; 2 bad usage or rejected input;
 * 3 a drain hung.
 */
#include <sys/utsname.h>
#include <unistd.h>

#include "uv.h"

struct uv_state uv;

struct uv_script {
	struct hil_cmd *cmds;
	unsigned int n;
	unsigned int rejected;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: hil-uverbs [-s] [-w DRAIN_MS] [-m MAX_WRS] [FILE]\n"
		   "  runs hil_kverbs commands through libibverbs/librdmacm; JSON lines on stdout\n"
		   "  -s: run each line as it is read (the default reads and checks all input first)\n");
}

static char *read_all(FILE *in, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);

	while (buf) {
		size_t got = fread(buf + n, 1, cap - n - 1, in);

		n += got;
		if (got == 0)
			break;
		if (n + 1 == cap) {
			char *bigger = realloc(buf, cap * 2);

			if (!bigger) {
				free(buf);
				return NULL;
			}
			buf = bigger;
			cap *= 2;
		}
	}
	if (!buf || ferror(in)) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

static void trace_reject(const char *line, unsigned int lineno, const char *op, const char *why)
{
	char text[HIL_ERR_LEN + 64];

	if (op)
		snprintf(text, sizeof(text), "line %u: %s: %s", lineno, op, why);
	else
		snprintf(text, sizeof(text), "line %u: %s", lineno, why);
	hil_trace_reject(line, text);
}

static bool skipped(const char *line, size_t len)
{
	size_t i = 0;

	while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
		i++;
	return i == len || line[i] == '#';
}

/* Leading blanks and trailing blanks/CRs off one command's text. */
static void trim(char **p, size_t *len)
{
	while (*len && (**p == ' ' || **p == '\t')) {
		(*p)++;
		(*len)--;
	}
	while (*len && ((*p)[*len - 1] == '\r' || (*p)[*len - 1] == ' ' || (*p)[*len - 1] == '\t'))
		(*len)--;
}

/*
 * One command (`len` bytes at `p`, trimmed, not skipped) into `cmd`; 0, or -1 when it is rejected
 * (traced). `full`: no room for another command.
 */
static int parse_one(char *p, size_t len, unsigned int lineno, struct hil_cmd *cmd, bool full)
{
	const char *why = NULL;
	char saved = p[len];
	int rc = 0;

	p[len] = '\0';
	if (full) {
		trace_reject(p, lineno, NULL, "too many commands");
		rc = -1;
	} else if (uv_parse(p, len, cmd, &why)) {
		trace_reject(p, lineno, cmd->op ? cmd->op->name : NULL, why);
		rc = -1;
	}
	p[len] = saved;
	return rc;
}

/* Parses every command of the text; rejects are traced and counted. */
static int parse_script(char *text, struct uv_script *s)
{
	unsigned int lineno = 1;
	char *p = text;

	s->cmds = calloc(UV_MAX_LINES, sizeof(*s->cmds));
	if (!s->cmds)
		return -ENOMEM;
	while (*p) {
		size_t len = strcspn(p, "\n;");
		char sep = p[len];
		char *c = p;
		size_t clen = len;

		trim(&c, &clen);
		if (!skipped(c, clen)) {
			struct hil_cmd *cmd = &s->cmds[s->n < UV_MAX_LINES ? s->n : 0];

			if (parse_one(c, clen, lineno, cmd, s->n == UV_MAX_LINES)) {
				s->rejected++;
			} else {
				cmd->id = s->n + 1;
				s->n++;
			}
		}
		p += len;
		if (sep == '\n')
			lineno++;
		if (*p)
			p++;
	}
	return 0;
}

static void trace_hello(void)
{
	struct utsname u;

	if (uname(&u))
		strcpy(u.release, "unknown");
	hil_trace_hello(UV_VERSION, u.release, getpid());
}

/* The devices librdmacm knows, as the kernel executor's ib_client reports them. */
static void list_devices(void)
{
	int n = 0;

	uv.devs = rdma_get_devices(&n);
	for (int i = 0; uv.devs && i < n; i++)
		hil_trace_ibdev(ibv_get_device_name(uv.devs[i]->device), "add");
}

/*
 * -s: each line is parsed and run as soon as it is read. Returns the exit status (without the
 * hang, which hil.hung says): 0, 1 a command failed, 2 a rejected command ended the run.
 */
static int run_stream(FILE *in)
{
	struct hil_cmd *cmd = calloc(1, sizeof(*cmd));
	unsigned int lineno = 0;
	uint64_t ids = 0;
	size_t cap = 0;
	char *line = NULL;
	int status = 0;

	if (!cmd) {
		fprintf(stderr, "hil-uverbs: out of memory\n");
		return 2;
	}
	list_devices();
	while (!hil.hung && status != 2 && getline(&line, &cap, in) != -1) {
		char *p = line;

		lineno++;
		while (*p && !hil.hung) {
			size_t len = strcspn(p, "\n;");
			char *c = p;
			size_t clen = len;

			trim(&c, &clen);
			if (!skipped(c, clen)) {
				if (parse_one(c, clen, lineno, cmd, false)) {
					status = 2;
					break;
				}
				cmd->id = ++ids;
				if (hil_execute(cmd))
					status = 1;
			}
			p += len;
			if (*p)
				p++;
		}
	}
	free(line);
	free(cmd);
	return status;
}

static int parse_opt_u32(const char *v, uint32_t *out)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(v, &end, 0);
	if (errno || *end || end == v || *v == '-' || n == 0 || n > UINT32_MAX)
		return -1;
	*out = (uint32_t)n;
	return 0;
}

int main(int argc, char **argv)
{
	struct uv_script script = { 0 };
	bool stream = false;
	FILE *in = stdin;
	size_t len = 0;
	char *text;
	int opt, status = 0;

	uv.drain_timeout_ms = 10000;
	hil.max_wrs = 65536;
	while ((opt = getopt(argc, argv, "sw:m:h")) != -1) {
		if (opt == 's') {
			stream = true;
			continue;
		}
		if (opt == 'w' && !parse_opt_u32(optarg, &uv.drain_timeout_ms))
			continue;
		if (opt == 'm' && !parse_opt_u32(optarg, &hil.max_wrs))
			continue;
		usage(opt == 'h' ? stdout : stderr);
		return opt == 'h' ? 0 : 2;
	}
	if (argc - optind > 1) {
		usage(stderr);
		return 2;
	}
	if (optind < argc) {
		in = fopen(argv[optind], "r");
		if (!in) {
			fprintf(stderr, "hil-uverbs: %s: %s\n", argv[optind], strerror(errno));
			return 2;
		}
	}
	if (stream) {
		uv_trace_init();
		trace_hello();
		status = run_stream(in);
		if (in != stdin)
			fclose(in);
		goto out;
	}
	text = read_all(in, &len);
	if (in != stdin)
		fclose(in);
	if (!text) {
		fprintf(stderr, "hil-uverbs: cannot read the commands\n");
		return 2;
	}

	uv_trace_init();
	trace_hello();
	if (parse_script(text, &script)) {
		fprintf(stderr, "hil-uverbs: out of memory\n");
		free(text);
		return 2;
	}
	free(text);
	if (script.rejected) {
		free(script.cmds);
		return 2;
	}
	list_devices();
	for (unsigned int i = 0; i < script.n && !hil.hung; i++)
		if (hil_execute(&script.cmds[i]))
			status = 1;
out:
	hil_teardown_all(hil.hung ? "exit after a hang" : "exit");
	if (uv.devs)
		rdma_free_devices(uv.devs);
	free(script.cmds);
	return hil.hung ? 3 : status;
}
