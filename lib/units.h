/* Sizes and durations as people write them in specs and flags: "32G", "3T",
 * "512M", "1.5T"; "12h", "90m", "1h30m", "2d", "45s". Sizes use binary units
 * (K = 1024). Plain numbers are bytes and seconds. */
#ifndef PARSA_UNITS_H
#define PARSA_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* 0 on success; -1 with errno EINVAL (not a size) or ERANGE (overflows). */
int parse_size(const char *text, uint64_t *bytes);
int parse_duration(const char *text, uint64_t *seconds);

/* Shortest exact-or-one-decimal human form: 34359738368 -> "32G", 1536 -> "1.5K". */
void format_size(uint64_t bytes, char *buf, size_t len);
/* 5400 -> "1h30m", 0 -> "0s". */
void format_duration(uint64_t seconds, char *buf, size_t len);

#endif
