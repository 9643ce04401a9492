/* Counting GPUs: nvidia-smi -L's lines, /dev/nvidiaN files (not nvidiactl or
 * nvidia-uvm), and detection with real stand-ins for nvidia-smi: one that
 * lists two GPUs, one that fails, one that hangs past the timeout. */
#include "gpus.h"
#include "tap.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

static char *dir;

static void touch(const char *name)
{
	char *path = xasprintf("%s/dev/%s", dir, name);
	FILE *f = fopen(path, "w");

	if (f)
		fclose(f);
	free(path);
}

static char *script(const char *name, const char *body)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "w");

	if (f) {
		fprintf(f, "#!/bin/sh\n%s\n", body);
		fclose(f);
	}
	chmod(path, 0755);
	return path;
}

int main(void)
{
	char tmpl[] = "/tmp/parsa-test-gpus.XXXXXX";
	char *dev, *smi, *how = NULL, *cmd;
	int64_t t0;

	dir = mkdtemp(tmpl);
	if (!dir) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	is_int(gpus_parse_smi("GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-1)\n"
			      "  MIG 1g.5gb     Device  0: (UUID: MIG-2)\n"
			      "GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-3)\n"), 2, "two GPUs, a MIG line not counted");
	is_int(gpus_parse_smi("No devices were found\n"), 0, "none");
	dev = xasprintf("%s/dev", dir);
	mkdir(dev, 0755);
	is_int(gpus_count_devices(dev), 0, "no device files");
	touch("nvidia0");
	touch("nvidia1");
	touch("nvidia2");
	touch("nvidiactl");
	touch("nvidia-uvm");
	touch("nvidia-modeset");
	is_int(gpus_count_devices(dev), 3, "nvidia0-2 count; nvidiactl, nvidia-uvm, nvidia-modeset do not");

	smi = script("smi-two", "[ \"$1\" = -L ] || exit 2; echo 'GPU 0: Tesla (UUID: a)'; echo 'GPU 1: Tesla (UUID: b)'");
	is_int(gpus_detect(smi, dev, 2000, &how), 2, "nvidia-smi -L wins over the device files");
	ok(how && strstr(how, "nvidia-smi"), "and says so: %s", how);
	free(how);
	free(smi);
	smi = script("smi-broken", "echo 'NVIDIA-SMI has failed' >&2; exit 9");
	is_int(gpus_detect(smi, dev, 2000, &how), 3, "a failing nvidia-smi: the device files");
	ok(how && strstr(how, "device files") && strstr(how, "failed"), "and why: %s", how);
	free(how);
	free(smi);
	smi = script("smi-hung", "exec sleep 30");
	t0 = time_mono_ms();
	is_int(gpus_detect(smi, dev, 300, &how), 3, "a hung nvidia-smi: the device files");
	ok(time_mono_ms() - t0 < 2000, "after its timeout (%lld ms)", (long long)(time_mono_ms() - t0));
	ok(how && strstr(how, "took more than"), "and why: %s", how);
	free(how);
	free(smi);
	is_int(gpus_detect("/nonexistent/nvidia-smi", dev, 300, &how), 3, "no nvidia-smi: the device files");
	free(how);

	cmd = xasprintf("rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("cannot remove %s", dir);
	free(cmd);
	free(dev);
	return done_testing();
}
