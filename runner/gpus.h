/* This host's NVIDIA GPUs, counted once at start for the registration:
 * `nvidia-smi -L` when it is installed (run with a timeout: a wedged driver
 * must not keep the runner from starting), else the /dev/nvidiaN device
 * files. Instances are given indices 0..count-1, the order CUDA numbers the
 * devices in (runner/resources.h hands them out). */
#ifndef PARSA_RUNNER_GPUS_H
#define PARSA_RUNNER_GPUS_H

/* How long nvidia-smi may take. */
#define GPUS_SMI_TIMEOUT_MS 5000

/* Count the GPUs: smi is the nvidia-smi to run (a name looked up in PATH, or
 * a path; NULL: "nvidia-smi"), dev_dir where the device files are ("/dev").
 * Returns the count (0: none); *how (malloc'ed, may be NULL) says where it
 * came from, for the log. */
int gpus_detect(const char *smi, const char *dev_dir, int timeout_ms, char **how);

/* The /dev/nvidia[0-9]+ files in dev_dir (not nvidiactl, nvidia-uvm...). */
int gpus_count_devices(const char *dev_dir);

/* The "GPU N: ..." lines of nvidia-smi -L output. */
int gpus_parse_smi(const char *text);

#endif
