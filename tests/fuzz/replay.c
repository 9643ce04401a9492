/* Runs a libFuzzer harness over files and folders of inputs without
 * libFuzzer, so that an ordinary gcc build (and ctest) replays the seed
 * corpus under the sanitizers. Usage: fuzz_NAME FILE|DIR... */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs past this size are not read whole: the harness refuses them anyway. */
#define REPLAY_MAX (64 * 1024 * 1024)

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0;
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
	/* A copy of exactly len bytes, so ASan sees reads past the input. */
	{
		uint8_t *exact = malloc(len ? len : 1);

		if (!exact)
			goto out;
		memcpy(exact, buf, len);
		LLVMFuzzerTestOneInput(exact, len);
		free(exact);
	}
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
static int replay_dir(const char *path, int *count)
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

		if (rc == 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
			if (replay_file(names[i]) < 0)
				rc = -1;
			(*count)++;
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	int count = 0, rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			rc = 1;
		} else if (S_ISDIR(st.st_mode)) {
			if (replay_dir(argv[i], &count) < 0)
				rc = 1;
		} else {
			if (replay_file(argv[i]) < 0)
				rc = 1;
			count++;
		}
	}
	printf("replayed %d inputs%s\n", count, rc ? " (with errors)" : "");
	return rc;
}
