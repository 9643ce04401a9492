/* What the files of the spec parser share, and no one else: the parser's state
 * (the raw sections and entries of pass 1, the errors, the [vars]) and the
 * functions one pass calls in another. Callers use spec.h only. */
#ifndef PARSA_SPEC_INTERNAL_H
#define PARSA_SPEC_INTERNAL_H

#include "spec.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STAGE_NAME_MAX 64
#define JOB_NAME_MAX 128
/* All expanded values together; ${a}${a} chains could otherwise grow without
 * bound from a small file. */
#define EXPAND_BUDGET (4 * (size_t)SPEC_MAX_BYTES)
/* Sizes and durations must fit the signed 64-bit integers of the JSON form. */
#define VALUE_MAX ((uint64_t)INT64_MAX)
/* Values quoted in messages are cut to this many bytes. */
#define SHOWN_MAX 60

/* What the reader decided about the line it just handed to inih. */
enum line_kind {
	LINE_OTHER,     /* blank, comment, section header or error: no handler call */
	LINE_KEY,       /* KEY = VALUE: one handler call */
	LINE_CONT,      /* indented continuation of the previous key: one call */
};

enum sect_kind { SECT_JOB, SECT_VARS, SECT_STAGE, SECT_IGNORED };

struct entry {
	char *key;
	char *value;      /* continuation lines joined */
	size_t vlen, vcap;
	int line;         /* line of KEY = */
	int ncont;        /* continuation lines joined into value */
	bool dup;         /* set twice: reported, the later one is skipped */
};

struct section {
	enum sect_kind kind;
	char *name;       /* the stage name for SECT_STAGE, else NULL */
	int line;
	struct entry *entries;
	size_t n, cap;
	int lost_key;     /* a key line too long to read: its error says enough */
};

struct error {
	int line;
	size_t seq;       /* report order, to keep the sort stable */
	char *text;
};

enum var_state { VAR_NEW, VAR_BUSY, VAR_DONE, VAR_FAILED };

struct var {
	const char *name;  /* owned by the entry */
	const char *raw;
	int line;
	enum var_state state;
	char *value;       /* expanded, when VAR_DONE */
};

struct parser {
	const char *file;          /* for messages */
	const char *text;
	size_t len, pos;           /* the reader's position in text */
	int lineno;                /* line the reader handed over last */
	enum line_kind kind;
	bool inih_prev;            /* mirrors inih's "a key was seen in this section" */
	char comment[208];         /* the inline comment inih drops from this line, or "" */
	long cur_sect;             /* -1 before any header, -2 after an unreadable one */
	long cur_entry;            /* entry continuation lines extend, -1: drop them */
	struct section *sects;
	size_t nsects, cap_sects;
	size_t stage_sects[SPEC_MAX_STAGES]; /* indexes of the SECT_STAGE sections */
	size_t nstages;
	int job_line, vars_line;   /* header lines, 0 if absent */
	bool stage_limit_reported;
	bool stage_tried;          /* a header meant as [stage NAME] was seen */
	struct error *errs;
	size_t nerrs, cap_errs, dropped;
	size_t seq;                /* errors reported so far, kept or not */
	size_t last;               /* the kept error that sorts last, once errs is full */
	struct var *vars;          /* sorted by name for lookup */
	size_t nvars;
	size_t budget;             /* bytes ${var} expansion may still produce */
	bool budget_reported, depth_reported;
};

/* What a stage's keys say beyond struct spec_stage, for the DAG checks. */
struct stage_build {
	struct spec_stage *st;
	const char *label;       /* "[stage NAME]" */
	bool has_run;
	int after_line, foreach_line, instances_line, matrix_line;
	size_t *after_idx;       /* resolved after, indexes into the file-order stages */
	size_t nafter_idx;
	size_t env_cap;          /* room in st->env */
};

/* ---- spec_errors.c: collecting errors ---- */

/* A growing string (s is NULL until something is added). */
struct spec_buf {
	char *s;
	size_t len, cap;
};

void spec_buf_add(struct spec_buf *b, const char *s, size_t n);
void spec_buf_addf(struct spec_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Keep "file:line: message" for the end. Only the errors of the first lines
 * are kept; the others are counted. */
void spec_report(struct parser *p, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Would an error at this line be kept? Callers with costly messages
 * (suggestions) ask first; a false answer counts the error as dropped. */
bool spec_error_wanted(struct parser *p, int line);
/* All errors, sorted by line, one per line: a malloc'ed string. */
char *spec_errors_text(struct parser *p);
/* A value as quoted in a message: cut at SHOWN_MAX bytes on a character
 * boundary. Writes into out (SHOWN_MAX + 4 bytes). */
const char *spec_shown(const char *value, char *out);

/* ---- spec_names.c: names and "did you mean" ---- */

/* Case-insensitive Levenshtein distance; b is a short candidate. */
size_t spec_edit_distance(const char *a, const char *b);
/* The candidate nearest to word, if it is close enough to be a typo, or NULL. */
const char *spec_nearest(const char *word, const char *const *cands, size_t n);
/* A [vars] or env. name: letters, digits and '_', not starting with a digit. */
bool spec_is_identifier(const char *s);
/* 1 to STAGE_NAME_MAX letters, digits, '_', '.' or '-'; not "." or "..". */
bool spec_is_stage_name(const char *s);

/* ---- spec_words.c: other schedulers' words ---- */

/* If key is another scheduler's word for a parsa key (memory, cpus-per-task,
 * time, array, depends_on, ...): true, with "parsa calls it 'mem': mem = 4G,
 * ..." in out (saying which section it belongs to when in_stage is wrong). */
bool spec_foreign_word(const char *key, bool in_stage, char *out, size_t len);

/* ---- spec_read.c: pass 1, the INI reader ---- */

/* Run inih over p->text, filling p->sects (every raw value) and reporting
 * every line it cannot read. */
void spec_read(struct parser *p);
/* "[job]", "[vars]" or "[stage NAME]" (written into out). */
const char *spec_section_label(const struct section *s, char *out, size_t len);
/* Report keys given twice in a section, and mark the later ones. */
void spec_find_duplicates(struct parser *p, struct section *s);

/* ---- spec_vars.c: ${var} expansion ---- */

/* Index the [vars] section and expand every var once, reporting broken ones. */
void spec_collect_vars(struct parser *p);
/* The expanded form of a value (malloc'ed), or NULL if it cannot be (reported). */
char *spec_expand(struct parser *p, const char *text, int line);
/* Whether [vars] defines name (after spec_collect_vars). */
bool spec_is_var(struct parser *p, const char *name);

/* ---- spec_values.c: value parsers ---- */

/* Extra words for a value error, when the value looks like a layout mistake. */
const char *spec_value_hint(const struct entry *e, const char *value);
/* A whole decimal number in [min, max]: 0, or -1 if it is not one. */
int spec_parse_int(const char *s, long long min, long long max, long long *out);
/* max_failed = N (0 to SPEC_MAX_INSTANCES) or P% (0 to 100, *pct set): 0,
 * or -1 if it is neither. The JSON form reads it back the same way. */
int spec_parse_max_failed(const char *s, long long *n, bool *pct);
/* Split a list on commas and white space; empty items are skipped. Freed
 * with spec_free_list(). */
char **spec_split_list(const char *value, size_t *n);
void spec_free_list(char **items, size_t n);
/* KEY = SIZE into *out, or an error reported at e's line. */
void spec_set_size(struct parser *p, const struct entry *e, const char *v, uint64_t *out);
/* window = WHEN into *text and *win (replacing them), or an error reported. */
void spec_set_window(struct parser *p, const struct entry *e, const char *v, char **text,
		     struct timewin **win);

/* ---- spec_keys.c: the keys of [job] and [stage NAME] ---- */

/* Apply one key of a section (unknown keys are reported with a suggestion). */
void spec_apply_stage_key(struct parser *p, const struct section *s, struct stage_build *sb,
			  const struct entry *e);
void spec_apply_job_key(struct parser *p, const struct section *s, struct spec *spec,
			const struct entry *e);

/* ---- spec_slurm.c, spec_slurm_key.c: the slurm.* keys of a stage ---- */

/* slurm.partition, slurm.account or slurm.qos = v into sb's stage, or an
 * error (an unknown slurm.KEY, a value sbatch would not read as one name). */
/* Slurm's own limit on a partition, account or QOS name is larger; a name
 * past this is a mistake, not a site's choice. */
#define SLURM_NAME_MAX 64
/* The keys after "slurm." and the field of each (spec_slurm.c). */
enum { SPEC_SLURM_KEYS = 3 };
extern const char *const spec_slurm_keys[SPEC_SLURM_KEYS];
char **spec_slurm_field(struct spec_slurm *s, size_t i);
void spec_stage_slurm_key(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v);

/* ---- spec_matrix.c: matrix.NAME = v1, v2, ... ---- */

/* One axis into sb's stage, or an error (a bad name, an empty or duplicate
 * value, a value that cannot be part of a folder name). */
void spec_stage_matrix_key(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v);
/* After all of a stage's keys: the product within the instances limit, no
 * axis named as a [vars] entry. */
void spec_check_matrix(struct parser *p, const struct stage_build *sb);

/* ---- spec_dag.c: the stage DAG ---- */

/* Resolve the after and foreach names of the n stages of sb (file order),
 * reporting unknown stages, self references and cycles, and fill order with a
 * stable topological order. Returns false on a cycle. sb[i].after_idx is
 * allocated for the caller to free. */
bool spec_dag_order(struct parser *p, struct stage_build *sb, size_t n, size_t *order);

#endif
