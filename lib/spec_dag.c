/* The stage DAG of a spec: after and foreach names resolved to stages, unknown
 * names, self references and cycles reported, and a stable topological order
 * (the earliest stage in the file that can go next goes next). */
#include "spec_internal.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

struct dag {
	struct stage_build *sb;   /* file order */
	size_t n;
	size_t by_name[SPEC_MAX_STAGES]; /* indexes into sb, sorted by stage name */
};

/* Sorts by_name: insertion sort, as there are at most SPEC_MAX_STAGES. */
static void dag_index(struct dag *g)
{
	for (size_t i = 0; i < g->n; i++) {
		size_t k = i;

		while (k > 0 && strcmp(g->sb[g->by_name[k - 1]].st->name, g->sb[i].st->name) > 0) {
			g->by_name[k] = g->by_name[k - 1];
			k--;
		}
		g->by_name[k] = i;
	}
}

/* The file-order index of a stage, or -1. A binary search: an after list
 * may name stages hundreds of thousands of times. */
static int stage_by_name(const struct dag *g, const char *name)
{
	size_t lo = 0, hi = g->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(g->sb[g->by_name[mid]].st->name, name);

		if (c == 0)
			return (int)g->by_name[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static void unknown_stage(struct parser *p, const struct dag *g, int line, const char *what,
			  const char *name)
{
	const char **names;
	char cut[SHOWN_MAX + 4];
	const char *near;

	if (!spec_error_wanted(p, line))
		return;
	names = xcalloc(g->n, sizeof *names);
	for (size_t i = 0; i < g->n; i++)
		names[i] = g->sb[i].st->name;
	near = spec_nearest(name, names, g->n);
	if (near) {
		spec_report(p, line, "%s: unknown stage '%s' (did you mean '%s'?)", what, spec_shown(name, cut), near);
	} else {
		struct spec_buf list = { 0 };

		for (size_t i = 0; i < g->n && i < 8; i++)
			spec_buf_addf(&list, "%s%s", i ? ", " : "", names[i]);
		if (g->n > 8)
			spec_buf_add(&list, ", ...", 5);
		spec_report(p, line, "%s: unknown stage '%s' (stages are: %s)", what, spec_shown(name, cut), list.s);
		free(list.s);
	}
	free(names);
}

/* Turn after names into indexes: unknown names and self references are
 * reported and left out, repeats are dropped. */
static void resolve_after(struct parser *p, struct dag *g)
{
	for (size_t i = 0; i < g->n; i++) {
		struct stage_build *sb = &g->sb[i];
		bool seen[SPEC_MAX_STAGES] = { false };
		size_t kept = 0;

		sb->after_idx = xcalloc(sb->st->nafter ? sb->st->nafter : 1, sizeof *sb->after_idx);
		for (size_t a = 0; a < sb->st->nafter; a++) {
			char *name = sb->st->after[a];
			int j = stage_by_name(g, name);

			if (j < 0) {
				unknown_stage(p, g, sb->after_line, "after", name);
				free(name);
			} else if ((size_t)j == i) {
				spec_report(p, sb->after_line, "stage '%s' cannot come after itself: remove it from after",
				            name);
				free(name);
			} else if (seen[j]) {
				free(name);
			} else {
				seen[j] = true;
				sb->after_idx[sb->nafter_idx++] = (size_t)j;
				sb->st->after[kept++] = name;
			}
		}
		sb->st->nafter = kept;
	}
}

/* Report each cycle among the stages Kahn's algorithm could not place, as
 * "cycle: a -> b -> a" in the order the stages would run. */
static void report_cycles(struct parser *p, const struct dag *g, const bool *placed)
{
	int mark[SPEC_MAX_STAGES]; /* 0 unvisited, walk number while walking */
	size_t walk[SPEC_MAX_STAGES + 1];
	int walks = 0;

	memset(mark, 0, sizeof mark);
	for (size_t start = 0; start < g->n; start++) {
		size_t len = 0, cur = start, first, best;
		struct spec_buf path = { 0 };

		if (placed[start] || mark[start])
			continue;
		walks++;
		/* Every unplaced stage waits for an unplaced one: follow after
		 * edges until a stage repeats. */
		while (!mark[cur]) {
			mark[cur] = walks;
			walk[len++] = cur;
			for (size_t a = 0; a < g->sb[cur].nafter_idx; a++) {
				if (!placed[g->sb[cur].after_idx[a]]) {
					cur = g->sb[cur].after_idx[a];
					break;
				}
			}
		}
		if (mark[cur] != walks)
			continue; /* ran into a cycle already reported */
		for (first = 0; walk[first] != cur; first++)
			;
		/* walk[first..len) is the cycle, each waiting for the next;
		 * start the message at its first stage in the file. */
		best = first;
		for (size_t k = first; k < len; k++)
			if (walk[k] < walk[best])
				best = k;
		for (size_t k = 0, idx = best; k <= len - first; k++) {
			spec_buf_addf(&path, "%s%s", k ? " -> " : "", g->sb[walk[idx]].st->name);
			idx = idx == first ? len - 1 : idx - 1;
		}
		spec_report(p, g->sb[walk[best]].after_line, "cycle: %s; remove one of these after = entries", path.s);
		free(path.s);
	}
}

/* A topological order of the stages, stable: the earliest stage in the file
 * whose upstream stages are all placed goes next. Returns false on a cycle
 * (reported). */
static bool topo_order(struct parser *p, const struct dag *g, size_t *order)
{
	bool placed[SPEC_MAX_STAGES] = { false };
	size_t done = 0;

	while (done < g->n) {
		size_t i;

		for (i = 0; i < g->n; i++) {
			bool ready = !placed[i];

			for (size_t a = 0; ready && a < g->sb[i].nafter_idx; a++)
				ready = placed[g->sb[i].after_idx[a]];
			if (ready)
				break;
		}
		if (i == g->n) {
			report_cycles(p, g, placed);
			return false;
		}
		placed[i] = true;
		order[done++] = i;
	}
	return true;
}

/* Is stage up reachable from stage from through after, transitively? */
static bool is_upstream(const struct dag *g, size_t from, size_t up)
{
	bool seen[SPEC_MAX_STAGES] = { false };
	size_t stack[SPEC_MAX_STAGES], n = 0;

	stack[n++] = from;
	seen[from] = true;
	while (n > 0) {
		size_t cur = stack[--n];

		for (size_t a = 0; a < g->sb[cur].nafter_idx; a++) {
			size_t next = g->sb[cur].after_idx[a];

			if (next == up)
				return true;
			if (!seen[next]) {
				seen[next] = true;
				stack[n++] = next;
			}
		}
	}
	return false;
}

static void check_foreach(struct parser *p, const struct dag *g)
{
	for (size_t i = 0; i < g->n; i++) {
		const struct stage_build *sb = &g->sb[i];
		const char *f = sb->st->foreach_stage;
		int j;

		if (!f)
			continue;
		if (sb->instances_line)
			spec_report(p, sb->instances_line, "instances cannot be used with foreach "
			            "(foreach makes one instance per entry): remove instances");
		j = stage_by_name(g, f);
		if (j < 0)
			unknown_stage(p, g, sb->foreach_line, "foreach", f);
		else if ((size_t)j == i)
			spec_report(p, sb->foreach_line, "foreach: stage '%s' cannot go over its own output", f);
		else if (!is_upstream(g, i, (size_t)j))
			spec_report(p, sb->foreach_line, "foreach: stage '%s' is not upstream of '%s': add after = %s",
			            f, sb->st->name, f);
	}
}

bool spec_dag_order(struct parser *p, struct stage_build *sb, size_t n, size_t *order)
{
	struct dag g = { .sb = sb, .n = n };

	dag_index(&g);
	resolve_after(p, &g);
	check_foreach(p, &g);
	return topo_order(p, &g, order);
}
