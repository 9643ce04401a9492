/* Hands out a host's numbered units to the instances running on it: its CPU
 * cores, each instance pinned to `cpus` of them (distinct from its
 * neighbours' while free ones exist, else the least shared), and its GPUs,
 * which are never shared (an instance gets distinct ones or does not start).
 * A struct cores knows only how many instances hold each unit; which units an
 * instance holds is the caller's to remember (runner/resources.h keeps it, in
 * assignment.json too, for a runner restarted). */
#ifndef PARSA_RUNNER_CORES_H
#define PARSA_RUNNER_CORES_H

#include <stdbool.h>
#include <stddef.h>

struct cores;

/* The units ids[0..n) (kept in ascending order). share: a unit may be given
 * to several instances when too few are free (CPU cores), else not (GPUs). */
struct cores *cores_create(const int *ids, size_t n, bool share);
void cores_destroy(struct cores *c);

/* How many units there are; how many nobody holds. */
size_t cores_total(const struct cores *c);
size_t cores_free(const struct cores *c);

/* How busy each unit was lately (0..1, by id; ids not known are ignored):
 * among free units the least busy are given first. */
void cores_set_busy(struct cores *c, const int *ids, const double *busy, size_t n);

/* Hold want units for one instance and write their ids to out (ascending).
 * Free units first, least busy first, then (share) the least shared. Returns
 * how many: want, or every unit when want is more than there are (share); -1
 * with errno EBUSY when fewer than want are free (not share), nothing held. */
int cores_take(struct cores *c, int want, int *out);

/* Hold exactly these units (what a reattached instance had); ids not in the
 * set are ignored. */
void cores_hold(struct cores *c, const int *ids, size_t n);
/* Give back what cores_take() or cores_hold() held. */
void cores_release(struct cores *c, const int *ids, size_t n);

#endif
