/* Fair share between teams: each team's usage in cpu-seconds (an instance's
 * cpus times the seconds it ran), decayed with a half-life so that what a
 * team used long ago counts less than what it used lately. When the cluster is
 * full, the team with the least usage gets the next free slot. Usage is
 * charged when an instance ends; instances still running count with what they
 * have used so far. Not persisted: the scheduler rebuilds it at start from the
 * instances in its database. The engine's lock guards it. */
#ifndef PARSA_FAIRSHARE_H
#define PARSA_FAIRSHARE_H

#include <stddef.h>
#include <stdint.h>

struct fairshare;

#define FAIRSHARE_HALF_LIFE_MS (24LL * 3600 * 1000)

/* half_life_ms <= 0 means the default (24 hours). */
struct fairshare *fairshare_create(int64_t half_life_ms);
void fairshare_destroy(struct fairshare *f);
int64_t fairshare_half_life_ms(const struct fairshare *f);

/* Add cpu_seconds of usage by team, used up to at_ms (epoch milliseconds). */
void fairshare_charge(struct fairshare *f, const char *team, double cpu_seconds, int64_t at_ms);

/* What running instances have used so far: reset at the start of a pass, then
 * add each running instance's share. */
void fairshare_clear_running(struct fairshare *f);
void fairshare_add_running(struct fairshare *f, const char *team, double cpu_seconds);

/* The team's decayed usage at now_ms plus its running usage, in cpu-seconds. */
double fairshare_usage(struct fairshare *f, const char *team, int64_t now_ms);

/* "fair share: half-life 24h" and one "team NAME: usage N cpu-s" line per team,
 * least used first (malloc'ed). */
char *fairshare_text(struct fairshare *f, int64_t now_ms);

#endif
