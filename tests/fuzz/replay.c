/* Runs a libFuzzer harness without libFuzzer, so that an ordinary gcc build
 * (and ctest) exercises every parser under the sanitizers: first it replays
 * the seed corpus, then it feeds the harness random mutations of it
 * (tests/fuzz/mutate.h) for a bounded time.
 *
 * Usage: fuzz_NAME [-dict=FILE] [-max_len=N] FILE|DIR...
 * Environment: PARSA_FUZZ_SECONDS (how long to mutate, default 3; 0: replay
 * only), PARSA_FUZZ_RUNS (at most this many mutated inputs), PARSA_FUZZ_SEED
 * (the generator's seed, default from the clock; printed first, so a failing
 * run can be repeated with it), PARSA_FUZZ_CRASH_DIR (where the input that
 * failed is left, default the current folder). */
#include "mutate.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Optional, as in libFuzzer: a harness that needs a setting (a time zone)
 * defines it. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

/* Inputs past this size are not read whole: the harness refuses them anyway. */
#define REPLAY_MAX (64 * 1024 * 1024)
#define DEFAULT_SECONDS 3
#define DEFAULT_MAX_LEN 4096

/* Each mutated input is written to its crash file before it runs and the
 * file is removed at the end: whatever kills the harness (a sanitizer, an
 * abort, a timeout), the input that did it is left behind. */
struct keeper {
	int fd;              /* -1: not keeping (replaying the corpus, whose files are known) */
	char path[4096];
};

static void keep(struct keeper *k, const uint8_t *data, size_t len)
{
	if (k->fd < 0)
		return;
	if (pwrite(k->fd, data, len, 0) != (ssize_t)len || ftruncate(k->fd, (off_t)len) < 0) {
		fprintf(stderr, "fuzz: %s: %s\n", k->path, strerror(errno));
		abort();
	}
}

static void run_one(const uint8_t *data, size_t len, const char *name)
{
	/* A copy of exactly len bytes, so ASan sees reads past the input. */
	uint8_t *exact = malloc(len ? len : 1);

	if (!exact)
		abort();
	memcpy(exact, data, len);
	/* Named first: a harness that dies leaves this last. */
	if (name)
		fprintf(stderr, "replay: %s\n", name);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
}

static int read_file(const char *path, struct blob_list *corpus)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len;
	int rc = -1;

	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	buf = malloc(REPLAY_MAX);
	if (!buf)
		goto out;
	len = fread(buf, 1, REPLAY_MAX, f);
	if (ferror(f)) {
		fprintf(stderr, "replay: %s: read error\n", path);
		goto out;
	}
	blob_list_add(corpus, buf, len);
	corpus->items[corpus->n - 1].name = strdup(path);
	rc = 0;
out:
	free(buf);
	fclose(f);
	return rc;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular files of a folder, in name order so runs are repeatable. */
static int read_dir(const char *path, struct blob_list *corpus)
{
	DIR *dir = opendir(path);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0;
	int rc = 0;

	if (!dir) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((de = readdir(dir))) {
		char **more;

		if (de->d_name[0] == '.')
			continue;
		more = realloc(names, (n + 1) * sizeof *names);
		if (!more) {
			rc = -1;
			break;
		}
		names = more;
		if (asprintf(&names[n], "%s/%s", path, de->d_name) < 0) {
			rc = -1;
			break;
		}
		n++;
	}
	closedir(dir);
	qsort(names, n, sizeof *names, name_cmp);
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (rc == 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode) &&
		    read_file(names[i], corpus) < 0)
			rc = -1;
		free(names[i]);
	}
	free(names);
	return rc;
}

static long env_number(const char *name, long dflt)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (!v || !*v)
		return dflt;
	n = strtol(v, &end, 0);
	return *end || n < 0 ? dflt : n;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Random mutations of the corpus until the time or the count is up. */
static void mutate_corpus(const char *prog, const struct blob_list *corpus,
			  const struct blob_list *tokens, size_t max_len)
{
	long seconds = env_number("PARSA_FUZZ_SECONDS", DEFAULT_SECONDS);
	long runs = env_number("PARSA_FUZZ_RUNS", 0);
	const char *dir = getenv("PARSA_FUZZ_CRASH_DIR");
	const char *base = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
	uint64_t seed = (uint64_t)env_number("PARSA_FUZZ_SEED", 0), state;
	struct keeper k = { .fd = -1 };
	double deadline;
	long done = 0;

	if (seconds == 0 || corpus->n == 0)
		return;
	if (!seed)
		seed = ((uint64_t)time(NULL) << 16) ^ (uint64_t)getpid();
	state = seed;
	snprintf(k.path, sizeof k.path, "%s/crash-%s-%" PRIu64, dir && *dir ? dir : ".", base, seed);
	k.fd = open(k.path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (k.fd < 0) {
		fprintf(stderr, "fuzz: %s: %s\n", k.path, strerror(errno));
		abort();
	}
	fprintf(stderr, "mutating for %ld s%s, seed %" PRIu64 " (PARSA_FUZZ_SEED=%" PRIu64
		" repeats it); an input that fails is left in %s\n", seconds,
		runs ? " or until the run limit" : "", seed, seed, k.path);
	deadline = now_s() + (double)seconds;
	while (now_s() < deadline && (!runs || done < runs)) {
		/* The clock is read every 64 inputs: it costs more than a short input. */
		for (int i = 0; i < 64 && (!runs || done < runs); i++, done++) {
			size_t len;
			uint8_t *input = mutate_one(&state, corpus, tokens, max_len, &len);

			keep(&k, input, len);
			run_one(input, len, NULL);
			free(input);
		}
	}
	close(k.fd);
	unlink(k.path);
	fprintf(stderr, "mutated %ld inputs\n", done);
}

int main(int argc, char **argv)
{
	struct blob_list corpus = { 0 }, tokens = { 0 };
	size_t max_len = DEFAULT_MAX_LEN;
	int rc = 0, nfiles = 0;

	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (strncmp(argv[i], "-dict=", 6) == 0) {
			if (dict_load(argv[i] + 6, &tokens) < 0) {
				fprintf(stderr, "replay: %s: %s\n", argv[i] + 6, strerror(errno));
				rc = 1;
			}
		} else if (strncmp(argv[i], "-max_len=", 9) == 0) {
			max_len = (size_t)strtoul(argv[i] + 9, NULL, 10);
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "replay: unknown option %s\n", argv[i]);
			rc = 1;
		} else if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			rc = 1;
		} else if (S_ISDIR(st.st_mode) ? read_dir(argv[i], &corpus) < 0 :
			   read_file(argv[i], &corpus) < 0) {
			rc = 1;
		} else {
			nfiles++;
		}
	}
	if (nfiles == 0 && rc == 0) {
		fprintf(stderr, "usage: %s [-dict=FILE] [-max_len=N] FILE|DIR...\n", argv[0]);
		rc = 2;
		goto out;
	}
	for (size_t i = 0; i < corpus.n; i++)
		run_one(corpus.items[i].data, corpus.items[i].len, corpus.items[i].name);
	fprintf(stderr, "replayed %zu inputs%s\n", corpus.n, rc ? " (with errors)" : "");
	if (rc == 0)
		mutate_corpus(argv[0], &corpus, &tokens, max_len ? max_len : DEFAULT_MAX_LEN);
out:
	blob_list_free(&corpus);
	blob_list_free(&tokens);
	return rc;
}
