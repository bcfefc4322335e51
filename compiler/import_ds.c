/* import_ds.c: a DeepSpeed config JSON to a Weft plan (see import_ds.h).
 *
 * Choices worth knowing:
 *  - DeepSpeed configs carry no tensor or pipeline degrees: they come from the
 *    model plan's mesh (tp, pp, sp; pipeline = { ... } with pp > 1), and
 *    dp = world / (tp * pp), as Megatron-DeepSpeed counts it.
 *  - Batch: DeepSpeed's rule train_batch_size = micro * accumulation * dp;
 *    any two of the three give the third (only train_batch_size: accumulation
 *    1; only micro: accumulation 1), all three must agree.
 *  - reduce_bucket_size counts elements; buckets.mb is MiB of gradients, so
 *    mb = elements * 4 / 2^20 in fp32 and elements * 2 / 2^20 in fp16/bf16.
 *  - fp16 loss scaling becomes the plan's loss_scale field (DeepSpeed's
 *    dynamic scaler, whose semantics weft implements; consecutive_hysteresis
 *    = true is not, and is warned about); the plan check refuses scales that
 *    are not powers of two.
 *  - DeepSpeed defaults are written out where they differ from weft's: betas
 *    (0.9, 0.999), weight_decay 0, clip_grad_norm 0 (no clipping), a
 *    constant lr without a scheduler (min_lr = lr), warmup_num_steps 1000.
 *  - WarmupLR -> min_lr = lr (constant after warmup); WarmupDecayLR ->
 *    min_lr = warmup_min_lr and train.steps = total_num_steps (weft decays
 *    by cosine, DeepSpeed linearly: a warning says so).
 *  - stage3_prefetch_bucket_size (elements) becomes zero_prefetch_mb.
 *  - Other ZeRO knobs (overlap_comm, contiguous_gradients, bucket sizes
 *    other than these two, ...) are accepted and written as comments: weft
 *    plans communication statically.
 */
#define _POSIX_C_SOURCE 200809L
#include "import_ds.h"
#include "escape.h"
#include "output.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Growable strings.                                                         */
/* ------------------------------------------------------------------------ */
typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_vprintf(sbuf *b, const char *fmt, va_list ap) {
    if (b->oom) return;
    va_list ap2;
    va_copy(ap2, ap);
    int k = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (k < 0) { b->oom = 1; return; }
    if (b->n + (size_t)k + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + (size_t)k + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) { b->oom = 1; return; }
        b->p = q;
        b->cap = cap;
    }
    vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
    b->n += (size_t)k;
}

static void sb_printf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------------ */
/* Errors and warnings.                                                      */
/* ------------------------------------------------------------------------ */
typedef struct {
    const char *json_path;
    char *err;
    size_t errlen;
    sbuf warn;
} ctx;

static int fail_at(ctx *c, const char *where, const char *fmt, ...) {
    if (!c->err || !c->errlen) return -1;
    int k = snprintf(c->err, c->errlen, "%s: ", where);
    if (k < 0) k = 0;
    if ((size_t)k < c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + k, c->errlen - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return -1;
}

#define FAIL(c, ...) fail_at((c), (c)->json_path, __VA_ARGS__)

static void warn(ctx *c, const char *key, const char *fmt, ...) {
    sb_printf(&c->warn, "warning: %s: %s: ", c->json_path, key);
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&c->warn, fmt, ap);
    va_end(ap);
    sb_printf(&c->warn, "\n");
}

/* The shortest %g text that reads back as v (a valid Lua numeral). */
static const char *num(double v, char buf[40]) {
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, 40, "%.*g", p, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

/* "number 3", "string \"auto\"", "true", "an object" */
static const char *describe(const cJSON *v, char buf[96]) {
    char nb[40];
    if (!v) snprintf(buf, 96, "nothing");
    else if (cJSON_IsTrue(v)) snprintf(buf, 96, "true");
    else if (cJSON_IsFalse(v)) snprintf(buf, 96, "false");
    else if (cJSON_IsNull(v)) snprintf(buf, 96, "null");
    else if (cJSON_IsNumber(v)) snprintf(buf, 96, "number %s", num(v->valuedouble, nb));
    else if (cJSON_IsString(v)) snprintf(buf, 96, "string \"%.40s\"", v->valuestring);
    else if (cJSON_IsArray(v)) snprintf(buf, 96, "an array");
    else if (cJSON_IsObject(v)) snprintf(buf, 96, "an object");
    else snprintf(buf, 96, "an unknown JSON value");
    return buf;
}

static int is_auto(const cJSON *v) {
    return cJSON_IsString(v) && strcmp(v->valuestring, "auto") == 0;
}

static int type_error(ctx *c, const char *name, const char *want, const cJSON *v, const char *valid) {
    char d[96];
    if (is_auto(v))
        return FAIL(c, "%s: \"auto\" is filled in by the Hugging Face Trainer, not by DeepSpeed; "
                       "write the value (valid: %s)", name, valid);
    return FAIL(c, "%s: expected %s, got %s (valid: %s)", name, want, describe(v, d), valid);
}

/* Getters: 1 when the key is present (and *out set), 0 when absent, -1 on error. */
static int get_int(ctx *c, const cJSON *obj, const char *key, const char *name,
                   long long lo, long long hi, const char *valid, long long *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) return 0;
    double d = v->valuedouble;
    if (!cJSON_IsNumber(v) || !isfinite(d) || d != floor(d))
        return type_error(c, name, "an integer", v, valid);
    if (d < (double)lo || d > (double)hi) {
        char nb[40];
        return FAIL(c, "%s: %s is out of range (valid: %s)", name, num(d, nb), valid);
    }
    *out = (long long)d;
    return 1;
}

static int get_num(ctx *c, const cJSON *obj, const char *key, const char *name,
                   double lo, int lo_exclusive, double hi, const char *valid, double *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) return 0;
    double d = v->valuedouble;
    if (!cJSON_IsNumber(v) || !isfinite(d)) return type_error(c, name, "a number", v, valid);
    if (d < lo || (lo_exclusive && d == lo) || d > hi) {
        char nb[40];
        return FAIL(c, "%s: %s is out of range (valid: %s)", name, num(d, nb), valid);
    }
    *out = d;
    return 1;
}

static int get_bool(ctx *c, const cJSON *obj, const char *key, const char *name, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) return 0;
    if (!cJSON_IsBool(v)) return type_error(c, name, "a boolean", v, "true or false");
    *out = cJSON_IsTrue(v);
    return 1;
}

static int get_str(ctx *c, const cJSON *obj, const char *key, const char *name,
                   const char *valid, const char **out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) return 0;
    if (!cJSON_IsString(v)) return type_error(c, name, "a string", v, valid);
    *out = v->valuestring;
    return 1;
}

static int get_obj(ctx *c, const cJSON *obj, const char *key, const char *name,
                   const char *valid, const cJSON **out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) return 0;
    if (!cJSON_IsObject(v)) return type_error(c, name, "an object", v, valid);
    *out = v;
    return 1;
}

static int in_list(const char *s, const char *const *list) {
    for (; *list; list++)
        if (strcmp(s, *list) == 0) return 1;
    return 0;
}

/* Warns about each key of obj (named prefix.key) that is not in known. */
static void warn_unknown(ctx *c, const cJSON *obj, const char *prefix, const char *const *known,
                         const char *why) {
    const cJSON *it;
    cJSON_ArrayForEach(it, obj) {
        if (!it->string || in_list(it->string, known)) continue;
        char name[256];
        snprintf(name, sizeof name, "%s%s%s", prefix, *prefix ? "." : "", it->string);
        warn(c, name, "%s", why);
    }
}

/* A JSON value on one line, for a Lua comment. */
static void sb_json(sbuf *b, const cJSON *v) {
    char *t = cJSON_PrintUnformatted(v);
    if (!t) { b->oom = 1; return; }
    for (char *p = t; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    sb_printf(b, "%s", t);
    cJSON_free(t);
}

/* ------------------------------------------------------------------------ */
/* Files.                                                                    */
/* ------------------------------------------------------------------------ */
static char *read_file(const char *path, size_t *len, size_t limit) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    sbuf b = {0};
    char chunk[65536];
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) {
        sb_printf(&b, "%.*s", (int)k, chunk);
        if (b.n > limit) { b.oom = 1; errno = EFBIG; break; }
    }
    int bad = ferror(f) || b.oom;
    fclose(f);
    if (bad) { free(b.p); if (!errno) errno = EIO; return NULL; }
    if (!b.p) { b.p = calloc(1, 1); if (!b.p) return NULL; }
    if (memchr(b.p, '\0', b.n)) b.n = strlen(b.p);  /* a NUL ends the text */
    *len = b.n;
    return b.p;
}

/* A temporary sibling renamed over out_path once complete (output.h). */
static int write_atomically(ctx *c, const char *out_path, const char *text, size_t n) {
    wf_outfile out;
    char why[PATH_MAX + 200];
    if (wf_outfile_open(&out, out_path, 0666, why, sizeof why) != 0) return fail_at(c, out_path, "%s", why);
    if (fwrite(text, 1, n, out.f) != n) {
        int e = errno;
        wf_outfile_abort(&out);
        return fail_at(c, out_path, "cannot write: %s", strerror(e));
    }
    if (wf_outfile_commit(&out, why, sizeof why) != 0) return fail_at(c, out_path, "%s", why);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Copying `key = expression` out of a Lua plan.                             */
/* ------------------------------------------------------------------------ */
/* s[i] == '[': the level of a long bracket [==[ , or -1. */
static int long_level(const char *s, size_t n, size_t i) {
    size_t j = i + 1;
    int lv = 0;
    while (j < n && s[j] == '=') { j++; lv++; }
    return j < n && s[j] == '[' ? lv : -1;
}

/* Index just past the long bracket that opens at i with level lv. */
static size_t skip_long(const char *s, size_t n, size_t i, int lv) {
    for (size_t j = i + (size_t)lv + 2; j < n; j++) {
        if (s[j] != ']') continue;
        size_t k = j + 1;
        int m = 0;
        while (k < n && s[k] == '=') { k++; m++; }
        if (m == lv && k < n && s[k] == ']') return k + 1;
    }
    return n;
}

static size_t skip_comment(const char *s, size_t n, size_t i) {  /* s+i is "--" */
    i += 2;
    if (i < n && s[i] == '[') {
        int lv = long_level(s, n, i);
        if (lv >= 0) return skip_long(s, n, i, lv);
    }
    while (i < n && s[i] != '\n') i++;
    return i;
}

static size_t skip_string(const char *s, size_t n, size_t i) {  /* s[i] is a quote */
    char q = s[i++];
    while (i < n) {
        if (s[i] == '\\') i += 2;
        else if (s[i] == q) return i + 1;
        else if (s[i] == '\n') return i;
        else i++;
    }
    return n;
}

/* Skips whitespace and comments. */
static size_t skip_space(const char *s, size_t n, size_t i) {
    for (;;) {
        while (i < n && isspace((unsigned char)s[i])) i++;
        if (i + 1 < n && s[i] == '-' && s[i + 1] == '-') i = skip_comment(s, n, i);
        else return i;
    }
}

/* The end of the expression that starts at i: a ',' ';' or unmatched
 * closing bracket at depth 0, or, after a bracketed constructor closes at
 * depth 0, anything that cannot continue it (a new statement).  *end is
 * the end of its last significant character; returns -1 when unbalanced. */
static int scan_expr(const char *s, size_t n, size_t i, size_t *end) {
    int depth = 0;
    size_t last = i;
    while (i < n) {
        char ch = s[i];
        if (isspace((unsigned char)ch)) { i++; continue; }
        if (ch == '-' && i + 1 < n && s[i + 1] == '-') { i = skip_comment(s, n, i); continue; }
        if (ch == '"' || ch == '\'') { i = last = skip_string(s, n, i); continue; }
        if (ch == '[' && long_level(s, n, i) >= 0) {
            i = last = skip_long(s, n, i, long_level(s, n, i));
            continue;
        }
        if (ch == '(' || ch == '{' || ch == '[') { depth++; i = last = i + 1; continue; }
        if (ch == ')' || ch == '}' || ch == ']') {
            if (depth == 0) break;
            depth--;
            i = last = i + 1;
            if (depth == 0) {
                size_t k = skip_space(s, n, i);
                if (k < n && !strchr(".:({[\"'+-*/^%<>=~", s[k]) && s[k] != ',' && s[k] != ';' &&
                    s[k] != ')' && s[k] != '}' && s[k] != ']')
                    break;  /* a new statement */
            }
            continue;
        }
        if (depth == 0 && (ch == ',' || ch == ';')) break;
        i = last = i + 1;
    }
    if (depth != 0) return -1;
    *end = last;
    return 0;
}

/* Finds `key = EXPR` (key a whole name, not a field access like a.key)
 * whose EXPR starts with one of prefixes.  Returns 1 and the span, 0 when
 * there is none (*other = the first such expression with another start, or
 * NULL), -1 when the brackets after it do not balance. */
static int find_field(const char *s, size_t n, const char *key, const char *const *prefixes,
                      size_t *begin, size_t *end, const char **other) {
    size_t klen = strlen(key);
    char prev = 0;
    *other = NULL;
    size_t i = 0;
    while (i < n) {
        char ch = s[i];
        if (ch == '-' && i + 1 < n && s[i + 1] == '-') { i = skip_comment(s, n, i); continue; }
        if (ch == '"' || ch == '\'') { i = skip_string(s, n, i); prev = ch; continue; }
        if (ch == '[' && long_level(s, n, i) >= 0) {
            i = skip_long(s, n, i, long_level(s, n, i));
            prev = ']';
            continue;
        }
        if (isalpha((unsigned char)ch) || ch == '_') {
            size_t j = i;
            while (j < n && (isalnum((unsigned char)s[j]) || s[j] == '_')) j++;
            if (j - i == klen && memcmp(s + i, key, klen) == 0 && prev != '.' && prev != ':') {
                size_t k = j;
                while (k < n && isspace((unsigned char)s[k])) k++;
                if (k < n && s[k] == '=' && (k + 1 >= n || s[k + 1] != '=')) {
                    size_t e = skip_space(s, n, k + 1), stop;
                    int matches = 0;
                    for (const char *const *p = prefixes; *p; p++)
                        if (strncmp(s + e, *p, strlen(*p)) == 0) matches = 1;
                    if (matches) {
                        if (scan_expr(s, n, e, &stop) < 0) return -1;
                        *begin = e;
                        *end = stop;
                        return 1;
                    }
                    if (!*other) *other = s + e;
                }
            }
            prev = s[j - 1];
            i = j;
            continue;
        }
        if (!isspace((unsigned char)ch)) prev = ch;
        i++;
    }
    return 0;
}

/* A path or JSON key name in the plan, as escape.h writes it for Lua: a
 * newline in it cannot end a comment and start a plan line. */
static void sb_lua(sbuf *b, const char *s) {
    size_t n = 4 * strlen(s) + 1;
    char *t = malloc(n);
    if (!t || wf_escape_lua(s, t, n) < 0) b->oom = 1;
    else sb_printf(b, "%s", t);
    free(t);
}

/* ------------------------------------------------------------------------ */
/* The import.                                                               */
/* ------------------------------------------------------------------------ */
typedef struct {
    long long micro, global, accum;
    const char *precision;
    long long zero;
    int offload_any;
    const char *off_opt, *off_params;
    int have_bucket;
    long long bucket_elems;
    int have_prefetch;      /* stage3_prefetch_bucket_size -> zero_prefetch_mb */
    long long prefetch_elems;
    double clip;
    double lr, min_lr, beta1, beta2, eps, wd;
    int optimizer_from_plan; /* no "optimizer": the training script passes its own */
    long long warmup, steps;
    int have_steps;
    int recompute_full;
    sbuf zero_comments;  /* lines "  --   key = value" */
    sbuf loss_comment;
} ds_plan;

static const char *const TOP_KEYS[] = {
    "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
    "zero_optimization", "fp16", "bf16", "bfloat16", "gradient_clipping", "optimizer",
    "scheduler", "activation_checkpointing", NULL};

static int parse_precision(ctx *c, const cJSON *root, ds_plan *p) {
    const cJSON *fp16 = NULL, *bf16 = NULL, *bf16b = NULL;
    int fp16_on = 0, bf16_on = 0;
    const char *objv = "an object { \"enabled\": true|false, ... }";
    if (get_obj(c, root, "fp16", "fp16", objv, &fp16) < 0) return -1;
    if (get_obj(c, root, "bf16", "bf16", objv, &bf16) < 0) return -1;
    if (get_obj(c, root, "bfloat16", "bfloat16", objv, &bf16b) < 0) return -1;
    if (fp16 && get_bool(c, fp16, "enabled", "fp16.enabled", &fp16_on) < 0) return -1;
    if (bf16 && get_bool(c, bf16, "enabled", "bf16.enabled", &bf16_on) < 0) return -1;
    if (bf16b) {
        int on = 0;
        if (get_bool(c, bf16b, "enabled", "bfloat16.enabled", &on) < 0) return -1;
        bf16_on |= on;
    }
    if (fp16_on && bf16_on)
        return FAIL(c, "fp16.enabled and bf16.enabled are both true (valid: at most one of them)");
    p->precision = fp16_on ? "fp16" : bf16_on ? "bf16" : "fp32";
    if (bf16) {
        static const char *const known[] = {"enabled", NULL};
        warn_unknown(c, bf16, "bf16", known, "has no meaning here; ignored");
    }
    if (!fp16 || !fp16_on) return 0;

    static const char *const known[] = {"enabled", "loss_scale", "initial_scale_power",
                                        "loss_scale_window", "hysteresis", "min_loss_scale",
                                        "consecutive_hysteresis", "auto_cast", NULL};
    warn_unknown(c, fp16, "fp16", known, "has no meaning here; ignored");
    double scale = 0, min_scale = 1;
    long long power = 16, window = 1000, hyst = 2;
    /* weft scales by powers of two only (exact), up to 2^24 */
    if (get_num(c, fp16, "loss_scale", "fp16.loss_scale", 0, 0, 16777216.0,
                "0 for dynamic loss scaling, or a static power of two in 2^-24 .. 2^24", &scale) < 0 ||
        get_int(c, fp16, "initial_scale_power", "fp16.initial_scale_power", 0, 24,
                "an integer in 0 .. 24", &power) < 0 ||
        get_int(c, fp16, "loss_scale_window", "fp16.loss_scale_window", 1, INT_MAX,
                "an integer >= 1", &window) < 0 ||
        get_int(c, fp16, "hysteresis", "fp16.hysteresis", 1, INT_MAX, "an integer >= 1", &hyst) < 0 ||
        get_num(c, fp16, "min_loss_scale", "fp16.min_loss_scale", 0, 1, 1e38, "a number > 0",
                &min_scale) < 0)
        return -1;
    int exponent;
    if (scale > 0 && (frexp(scale, &exponent) != 0.5 || scale < 0x1p-24))
        return FAIL(c, "fp16.loss_scale = %g is not a power of two (valid: 0 for dynamic loss scaling, "
                       "or a static power of two in 2^-24 .. 2^24)", scale);
    if (min_scale > 0 && frexp(min_scale, &exponent) != 0.5)
        return FAIL(c, "fp16.min_loss_scale = %g is not a power of two (valid: 1, 2, 4, ...)", min_scale);
    char a[40], b[40];
    sbuf *s = &p->loss_comment;
    if (scale > 0) {
        sb_printf(s, "  loss_scale = %s,  -- static (DeepSpeed fp16.loss_scale)\n", num(scale, a));
    } else {
        sb_printf(s, "  loss_scale = { initial_scale_power = %lld, window = %lld, hysteresis = %lld, min = %s },\n",
                  power, window, hyst, num(min_scale, b));
    }
    int consecutive = 0;
    if (get_bool(c, fp16, "consecutive_hysteresis", "fp16.consecutive_hysteresis", &consecutive) < 0) return -1;
    if (consecutive)
        warn(c, "fp16.consecutive_hysteresis", "true is not implemented; weft restores the hysteresis "
             "budget only when the scale grows (DeepSpeed's default)");
    return 0;
}

/* `world` is the data-parallel size; `who` names it in messages: "world"
 * without model parallelism, else "dp" (world / (tp * pp)). */
static int parse_batch(ctx *c, const cJSON *root, int world, const char *who, ds_plan *p) {
    long long tbs = 0, mb = 0, gas = 0;
    int htbs, hmb, hgas;
    const long long MAX = INT_MAX;
    if ((htbs = get_int(c, root, "train_batch_size", "train_batch_size", 1, MAX,
                        "an integer >= 1", &tbs)) < 0 ||
        (hmb = get_int(c, root, "train_micro_batch_size_per_gpu", "train_micro_batch_size_per_gpu", 1,
                       MAX, "an integer >= 1", &mb)) < 0 ||
        (hgas = get_int(c, root, "gradient_accumulation_steps", "gradient_accumulation_steps", 1, MAX,
                        "an integer >= 1", &gas)) < 0)
        return -1;
    char rule[160];
    snprintf(rule, sizeof rule, "train_batch_size = train_micro_batch_size_per_gpu * "
             "gradient_accumulation_steps * %s", who);
    if (htbs && hmb && hgas) {
        if (tbs != mb * gas * world)
            return FAIL(c, "train_batch_size = %lld, but train_micro_batch_size_per_gpu * "
                           "gradient_accumulation_steps * %s = %lld * %lld * %d = %lld "
                           "(valid: %s)", tbs, who, mb, gas, world, mb * gas * world, rule);
    } else if (htbs && hmb) {
        if (tbs % (mb * world) != 0)
            return FAIL(c, "train_batch_size = %lld is not a multiple of "
                           "train_micro_batch_size_per_gpu * %s = %lld * %d = %lld (valid: %s)",
                        tbs, who, mb, world, mb * world, rule);
        gas = tbs / (mb * world);
    } else if (htbs && hgas) {
        if (tbs % (gas * world) != 0)
            return FAIL(c, "train_batch_size = %lld is not a multiple of "
                           "gradient_accumulation_steps * %s = %lld * %d = %lld (valid: %s)",
                        tbs, who, gas, world, gas * world, rule);
        mb = tbs / (gas * world);
    } else if (hmb && hgas) {
        tbs = mb * gas * world;
    } else if (htbs) {
        gas = 1;
        if (tbs % world != 0)
            return FAIL(c, "train_batch_size = %lld is not a multiple of %s = %d (valid: %s, "
                           "with gradient_accumulation_steps = 1)", tbs, who, world, rule);
        mb = tbs / world;
    } else if (hmb) {
        gas = 1;
        tbs = mb * world;
    } else {
        return FAIL(c, "train_batch_size and train_micro_batch_size_per_gpu are both missing "
                       "(valid: at least one of them; %s)", rule);
    }
    if (tbs > MAX)
        return FAIL(c, "the global batch %lld * %lld * %d = %lld is too large (valid: <= %lld)",
                    mb, gas, world, tbs, MAX);
    p->micro = mb;
    p->global = tbs;
    p->accum = gas;
    return 0;
}

static int parse_offload(ctx *c, const cJSON *zero, const char *key, const char **out, ds_plan *p) {
    const cJSON *o = NULL;
    char name[64], dname[80];
    snprintf(name, sizeof name, "zero_optimization.%s", key);
    snprintf(dname, sizeof dname, "%s.device", name);
    int r = get_obj(c, zero, key, name, "an object { \"device\": \"cpu\"|\"none\", ... }", &o);
    if (r <= 0) return r;
    const char *dev = "none";
    const char *valid = "\"cpu\" or \"none\"";
    if (get_str(c, o, "device", dname, valid, &dev) < 0) return -1;
    if (strcmp(dev, "nvme") == 0)
        return FAIL(c, "%s: \"nvme\" (ZeRO-Infinity) is not supported by weft (valid: %s)", dname, valid);
    if (strcmp(dev, "cpu") != 0 && strcmp(dev, "none") != 0)
        return FAIL(c, "%s: \"%.40s\" is not a known device (valid: %s)", dname, dev, valid);
    *out = dev;
    p->offload_any = 1;
    const cJSON *it;
    cJSON_ArrayForEach(it, o) {
        if (!it->string || strcmp(it->string, "device") == 0) continue;
        sb_printf(&p->zero_comments, "  --   %s.", key);
        sb_lua(&p->zero_comments, it->string);
        sb_printf(&p->zero_comments, " = ");
        sb_json(&p->zero_comments, it);
        sb_printf(&p->zero_comments, "\n");
        char wn[256];
        snprintf(wn, sizeof wn, "%s.%s", name, it->string);
        warn(c, wn, "accepted and written as a comment; weft plans offloading statically");
    }
    return 0;
}

static int parse_zero(ctx *c, const cJSON *root, ds_plan *p) {
    const cJSON *z = NULL;
    p->zero = 0;
    p->off_opt = p->off_params = "none";
    int r = get_obj(c, root, "zero_optimization", "zero_optimization",
                    "an object { \"stage\": 0..3, ... }", &z);
    if (r <= 0) return r;
    if (get_int(c, z, "stage", "zero_optimization.stage", 0, 3, "0, 1, 2 or 3", &p->zero) < 0)
        return -1;
    if (parse_offload(c, z, "offload_optimizer", &p->off_opt, p) < 0) return -1;
    if (parse_offload(c, z, "offload_param", &p->off_params, p) < 0) return -1;
    int hb = get_int(c, z, "reduce_bucket_size", "zero_optimization.reduce_bucket_size", 1,
                     (long long)1 << 50, "an integer number of elements >= 1", &p->bucket_elems);
    if (hb < 0) return -1;
    p->have_bucket = hb;
    int hp = get_int(c, z, "stage3_prefetch_bucket_size", "zero_optimization.stage3_prefetch_bucket_size", 0,
                     (long long)1 << 50, "an integer number of elements >= 0", &p->prefetch_elems);
    if (hp < 0) return -1;
    p->have_prefetch = hp && p->zero == 3;
    const cJSON *it;
    cJSON_ArrayForEach(it, z) {
        static const char *const handled[] = {"stage", "offload_optimizer", "offload_param",
                                              "reduce_bucket_size", "stage3_prefetch_bucket_size", NULL};
        if (!it->string || in_list(it->string, handled)) continue;
        sb_printf(&p->zero_comments, "  --   ");
        sb_lua(&p->zero_comments, it->string);
        sb_printf(&p->zero_comments, " = ");
        sb_json(&p->zero_comments, it);
        sb_printf(&p->zero_comments, "\n");
        char wn[256];
        snprintf(wn, sizeof wn, "zero_optimization.%s", it->string);
        warn(c, wn, "accepted and written as a comment; weft plans communication and memory statically");
    }
    return 0;
}

static int parse_optimizer(ctx *c, const cJSON *root, ds_plan *p) {
    const cJSON *o = NULL, *params = NULL;
    const char *type = NULL;
    const char *ov = "an object { \"type\": \"AdamW\", \"params\": { \"lr\": 3e-4, ... } }";
    int r = get_obj(c, root, "optimizer", "optimizer", ov, &o);
    if (r < 0) return -1;
    if (r == 0) {
        /* DeepSpeed allows this when the script hands deepspeed.initialize its
         * own optimizer; the --model plan's w.adamw stands in for it */
        p->optimizer_from_plan = 1;
        warn(c, "optimizer", "missing (the training script passes its own): the --model plan's "
                             "optimizer is used");
        return 0;
    }
    const char *tv = "\"Adam\" or \"AdamW\"";
    r = get_str(c, o, "type", "optimizer.type", tv, &type);
    if (r < 0) return -1;
    if (r == 0) return FAIL(c, "optimizer.type: missing (valid: %s)", tv);
    char low[16] = {0};
    size_t tl = strlen(type);
    for (size_t i = 0; i < tl && i < sizeof low - 1; i++) low[i] = (char)tolower((unsigned char)type[i]);
    if (tl >= sizeof low || (strcmp(low, "adam") != 0 && strcmp(low, "adamw") != 0))
        return FAIL(c, "optimizer.type: \"%.40s\" is not supported (valid: %s)", type, tv);
    static const char *const known_o[] = {"type", "params", NULL};
    warn_unknown(c, o, "optimizer", known_o, "has no meaning here; ignored");
    if (get_obj(c, o, "params", "optimizer.params", "an object { \"lr\": 3e-4, ... }", &params) < 0)
        return -1;

    p->lr = -1;  /* DeepSpeed's defaults otherwise: */
    p->beta1 = 0.9, p->beta2 = 0.999, p->eps = 1e-8, p->wd = 0;
    if (!params) return 0;
    static const char *const known_p[] = {"lr", "betas", "eps", "weight_decay", "adam_w_mode",
                                          "torch_adam", "bias_correction", NULL};
    warn_unknown(c, params, "optimizer.params", known_p, "has no meaning here; ignored");
    if (get_num(c, params, "lr", "optimizer.params.lr", 0, 1, 10, "a number > 0 and <= 10", &p->lr) < 0 ||
        get_num(c, params, "eps", "optimizer.params.eps", 0, 0, 1, "a number in 0 .. 1", &p->eps) < 0 ||
        get_num(c, params, "weight_decay", "optimizer.params.weight_decay", 0, 0, 10,
                "a number in 0 .. 10", &p->wd) < 0)
        return -1;
    const cJSON *betas = cJSON_GetObjectItemCaseSensitive(params, "betas");
    if (betas) {
        const char *bv = "two numbers in 0 .. 0.999999, e.g. [0.9, 0.999]";
        const cJSON *b0 = cJSON_GetArrayItem(betas, 0), *b1 = cJSON_GetArrayItem(betas, 1);
        if (!cJSON_IsArray(betas) || cJSON_GetArraySize(betas) != 2 || !cJSON_IsNumber(b0) ||
            !cJSON_IsNumber(b1))
            return type_error(c, "optimizer.params.betas", "an array of two numbers", betas, bv);
        for (int i = 0; i < 2; i++) {
            double v = (i ? b1 : b0)->valuedouble;
            char nb[40];
            if (!isfinite(v) || v < 0 || v > 0.999999)
                return FAIL(c, "optimizer.params.betas[%d]: %s is out of range (valid: %s)", i,
                            num(v, nb), bv);
        }
        p->beta1 = b0->valuedouble;
        p->beta2 = b1->valuedouble;
    }
    int adam_w = 1;
    if (get_bool(c, params, "adam_w_mode", "optimizer.params.adam_w_mode", &adam_w) < 0) return -1;
    if (!adam_w && p->wd > 0)
        warn(c, "optimizer.params.adam_w_mode", "false (L2 weight decay) becomes AdamW's decoupled "
                                                "weight decay in weft");
    return 0;
}

static int parse_scheduler(ctx *c, const cJSON *root, ds_plan *p) {
    const cJSON *s = NULL, *params = NULL;
    const char *type = NULL;
    const char *tv = "\"WarmupLR\" or \"WarmupDecayLR\"; or leave the scheduler out for a constant lr";
    p->warmup = 0;
    p->have_steps = 0;
    int r = get_obj(c, root, "scheduler", "scheduler", "an object { \"type\": \"WarmupDecayLR\", ... }", &s);
    if (r < 0) return -1;
    if (p->optimizer_from_plan) {  /* its lr and warmup come with it */
        if (r > 0) warn(c, "scheduler", "ignored: the --model plan's optimizer sets lr and warmup");
        return 0;
    }
    if (r == 0) {
        if (p->lr < 0) return FAIL(c, "optimizer.params.lr: missing (valid: a number > 0 and <= 10)");
        p->min_lr = p->lr;  /* constant */
        warn(c, "scheduler", "missing: constant lr; train.steps left at weft's default (set it in the plan)");
        return 0;
    }
    r = get_str(c, s, "type", "scheduler.type", tv, &type);
    if (r < 0) return -1;
    if (r == 0) return FAIL(c, "scheduler.type: missing (valid: %s)", tv);
    int decay = strcmp(type, "WarmupDecayLR") == 0;
    if (!decay && strcmp(type, "WarmupLR") != 0)
        return FAIL(c, "scheduler.type: \"%.40s\" is not supported (valid: %s)", type, tv);
    static const char *const known_s[] = {"type", "params", NULL};
    warn_unknown(c, s, "scheduler", known_s, "has no meaning here; ignored");
    if (get_obj(c, s, "params", "scheduler.params", "an object { \"warmup_num_steps\": 100, ... }",
                &params) < 0)
        return -1;
    cJSON empty = {0};
    empty.type = cJSON_Object;
    if (!params) params = &empty;
    const char *const known_wl[] = {"warmup_min_lr", "warmup_max_lr", "warmup_num_steps",
                                    "warmup_type", NULL};
    const char *const known_wd[] = {"warmup_min_lr", "warmup_max_lr", "warmup_num_steps",
                                    "warmup_type", "total_num_steps", NULL};
    warn_unknown(c, params, "scheduler.params", decay ? known_wd : known_wl, "has no meaning here; ignored");

    double min_lr = 0, max_lr = 0;
    long long warm = 1000, total = 0;
    const char *wtype = "log";
    int hmax;
    if (get_num(c, params, "warmup_min_lr", "scheduler.params.warmup_min_lr", 0, 0, 10,
                "a number in 0 .. 10", &min_lr) < 0 ||
        (hmax = get_num(c, params, "warmup_max_lr", "scheduler.params.warmup_max_lr", 0, 1, 10,
                        "a number > 0 and <= 10", &max_lr)) < 0 ||
        get_int(c, params, "warmup_num_steps", "scheduler.params.warmup_num_steps", 0, INT_MAX,
                "an integer >= 0", &warm) < 0 ||
        get_str(c, params, "warmup_type", "scheduler.params.warmup_type", "\"linear\" or \"log\"",
                &wtype) < 0)
        return -1;
    if (decay) {
        r = get_int(c, params, "total_num_steps", "scheduler.params.total_num_steps", 1, 1 << 30,
                    "an integer in 1 .. 1073741824", &total);
        if (r < 0) return -1;
        if (r == 0)
            return FAIL(c, "scheduler.params.total_num_steps: missing; WarmupDecayLR needs it "
                           "(valid: an integer in 1 .. 1073741824)");
        p->steps = total;
        p->have_steps = 1;
    } else {
        warn(c, "scheduler", "WarmupLR has no total_num_steps: train.steps left at weft's default "
                             "(set it in the plan)");
    }
    if (strcmp(wtype, "linear") != 0 && strcmp(wtype, "log") != 0)
        return FAIL(c, "scheduler.params.warmup_type: \"%.40s\" is not known (valid: \"linear\" or \"log\")", wtype);
    if (strcmp(wtype, "linear") != 0)
        warn(c, "scheduler.params.warmup_type", "\"%s\" becomes weft's linear warmup", wtype);

    char a[40], b[40];
    if (hmax) {
        if (p->lr > 0 && p->lr != max_lr)
            warn(c, "scheduler.params.warmup_max_lr", "%s is the peak lr, as in DeepSpeed "
                 "(optimizer.params.lr = %s is not used)", num(max_lr, a), num(p->lr, b));
        p->lr = max_lr;
    } else if (p->lr > 0) {
        warn(c, "scheduler.params.warmup_max_lr", "missing: DeepSpeed would peak at its default "
             "0.001; weft uses optimizer.params.lr = %s", num(p->lr, a));
    } else {
        p->lr = 0.001;  /* DeepSpeed's default warmup_max_lr */
        warn(c, "optimizer.params.lr", "missing: using DeepSpeed's default warmup_max_lr = 0.001");
    }
    if (min_lr > p->lr)
        return FAIL(c, "scheduler.params.warmup_min_lr: %s exceeds the peak lr %s (valid: 0 .. %s)",
                    num(min_lr, a), num(p->lr, b), b);
    p->warmup = warm;
    if (decay) {
        p->min_lr = min_lr;
        warn(c, "scheduler", "WarmupDecayLR decays linearly to warmup_min_lr; weft decays by cosine "
                             "to min_lr over the same steps");
    } else {
        p->min_lr = p->lr;  /* constant after warmup */
        if (min_lr > 0)
            warn(c, "scheduler.params.warmup_min_lr", "weft's warmup starts from its own value, not %s",
                 num(min_lr, a));
    }
    return 0;
}

static int parse_activation_ckpt(ctx *c, const cJSON *root, ds_plan *p) {
    const cJSON *a = NULL;
    int r = get_obj(c, root, "activation_checkpointing", "activation_checkpointing",
                    "an object { \"partition_activations\": true|false, ... }", &a);
    if (r <= 0) return r;
    int part = 0;
    if (get_bool(c, a, "partition_activations", "activation_checkpointing.partition_activations",
                 &part) < 0)
        return -1;
    if (part) {
        p->recompute_full = 1;
        warn(c, "activation_checkpointing.partition_activations",
             "mapped to recompute = \"full\" (weft recomputes every block's activations in backward)");
    }
    static const char *const known[] = {"partition_activations", NULL};
    warn_unknown(c, a, "activation_checkpointing", known, "has no meaning here; ignored");
    return 0;
}

/* A degree from the model plan's `mesh = { ... }` text: `key = N`, else 1
 * (or, for a boolean, 1 when `key = true`). */
static long mesh_value(const char *s, size_t n, const char *key) {
    size_t klen = strlen(key);
    for (size_t i = 0; i + klen < n; i++) {
        if (memcmp(s + i, key, klen) != 0) continue;
        if (i > 0 && (isalnum((unsigned char)s[i - 1]) || s[i - 1] == '_')) continue;
        if (isalnum((unsigned char)s[i + klen]) || s[i + klen] == '_') continue;
        size_t k = skip_space(s, n, i + klen);
        if (k >= n || s[k] != '=') continue;
        k = skip_space(s, n, k + 1);
        if (k + 4 <= n && memcmp(s + k, "true", 4) == 0) return 1;
        if (k < n && isdigit((unsigned char)s[k])) return strtol(s + k, NULL, 10);
        return 0;
    }
    return key[0] == 's' ? 0 : 1;  /* sp defaults to off, degrees to 1 */
}

int import_deepspeed(const char *ds_json_path, const char *model_plan_path, int world,
                     const char *out_path, FILE *warnings, char *err, size_t errlen) {
    ctx c = {ds_json_path ? ds_json_path : "(null)", err, errlen, {0}};
    ds_plan p;
    memset(&p, 0, sizeof p);
    char *json_text = NULL, *plan_text = NULL;
    cJSON *root = NULL;
    sbuf out = {0};
    int rc = -1;
    if (err && errlen) err[0] = '\0';

    if (!ds_json_path || !model_plan_path || !out_path) {
        fail_at(&c, "import-deepspeed", "missing path (valid: a DeepSpeed JSON, a model plan and an output path)");
        goto done;
    }
    if (world < 1 || world > 65536) {
        fail_at(&c, "import-deepspeed", "world = %d (valid: an integer in 1 .. 65536)", world);
        goto done;
    }

    size_t jlen = 0, plen = 0;
    json_text = read_file(ds_json_path, &jlen, (size_t)64 << 20);
    if (!json_text) {
        fail_at(&c, ds_json_path, "cannot read: %s", strerror(errno));
        goto done;
    }
    const char *endp = NULL;
    root = cJSON_ParseWithOpts(json_text, &endp, 1);
    if (!root) {
        const char *at = endp ? endp : cJSON_GetErrorPtr();
        if (!at || at < json_text || at > json_text + jlen) at = json_text + jlen;
        int line = 1, col = 1;
        for (const char *q = json_text; q < at; q++) {
            if (*q == '\n') { line++; col = 1; } else col++;
        }
        fail_at(&c, ds_json_path, "malformed JSON at line %d, column %d (valid: a JSON object)", line, col);
        goto done;
    }
    if (!cJSON_IsObject(root)) {
        char d[96];
        FAIL(&c, "expected a JSON object at the top level, got %s (valid: { \"train_batch_size\": ..., ... })",
             describe(root, d));
        goto done;
    }

    /* Top-level keys weft has no use for. */
    const cJSON *it;
    cJSON_ArrayForEach(it, root) {
        if (!it->string || in_list(it->string, TOP_KEYS)) continue;
        warn(&c, it->string, "has no meaning in a weft plan; ignored");
    }

    /* The model (and data, cluster, model-parallel degrees) from the existing plan. */
    plan_text = read_file(model_plan_path, &plen, (size_t)16 << 20);
    if (!plan_text) {
        fail_at(&c, model_plan_path, "cannot read the model plan: %s", strerror(errno));
        goto done;
    }
    static const char *const mesh_prefix[] = {"{", NULL};
    size_t xb = 0, xe = 0, pb = 0, pe = 0;
    const char *unused;
    int rx = find_field(plan_text, plen, "mesh", mesh_prefix, &xb, &xe, &unused);
    int rp = find_field(plan_text, plen, "pipeline", mesh_prefix, &pb, &pe, &unused);
    long tp = rx > 0 ? mesh_value(plan_text + xb, xe - xb, "tp") : 1;
    long pp = rx > 0 ? mesh_value(plan_text + xb, xe - xb, "pp") : 1;
    int sp = rx > 0 && mesh_value(plan_text + xb, xe - xb, "sp") == 1;
    if (rx < 0 || rp < 0) {
        fail_at(&c, model_plan_path, "the brackets after `%s =` do not balance", rx < 0 ? "mesh" : "pipeline");
        goto done;
    }
    if (tp < 1 || pp < 1 || world % (tp * pp) != 0) {
        fail_at(&c, "import-deepspeed", "world = %d is not a multiple of the model plan's tp * pp = %ld * %ld "
                "(valid: world = dp * tp * pp)", world, tp, pp);
        goto done;
    }
    int dp = (int)(world / (tp * pp));
    if (parse_precision(&c, root, &p) < 0 || parse_batch(&c, root, dp, tp * pp > 1 ? "dp" : "world", &p) < 0 ||
        parse_zero(&c, root, &p) < 0 || parse_optimizer(&c, root, &p) < 0 ||
        parse_scheduler(&c, root, &p) < 0 || parse_activation_ckpt(&c, root, &p) < 0)
        goto done;
    p.clip = 0;  /* DeepSpeed's default: no clipping */
    if (get_num(&c, root, "gradient_clipping", "gradient_clipping", 0, 0, 1e6,
                "a number in 0 .. 1000000 (0: no clipping)", &p.clip) < 0)
        goto done;

    static const char *const ctor_prefix[] = {"w.", "weft.", NULL};
    static const char *const table_prefix[] = {"{", NULL};
    size_t mb, me, cb = 0, ce = 0, db = 0, de = 0;
    const char *other;
    int rm = find_field(plan_text, plen, "model", ctor_prefix, &mb, &me, &other);
    if (rm <= 0) {
        if (rm < 0)
            fail_at(&c, model_plan_path, "the brackets after `model =` do not balance");
        else if (other) {
            int k = 0;  /* the expression's first line, up to 30 characters */
            while (k < 30 && other[k] && other[k] != '\n' && other[k] != '\r' && other[k] != ',') k++;
            fail_at(&c, model_plan_path, "model = %.*s: the importer copies the model's constructor, "
                    "so it must be written inline (valid: model = w.gpt2 { ... } or weft.gpt2 { ... })",
                    k, other);
        }
        else
            fail_at(&c, model_plan_path, "no `model = ...` found (valid: a plan with model = w.gpt2 { ... })");
        goto done;
    }
    int rcl = find_field(plan_text, plen, "cluster", ctor_prefix, &cb, &ce, &other);
    int rd = find_field(plan_text, plen, "data", table_prefix, &db, &de, &other);
    if (rcl < 0 || rd < 0) {
        fail_at(&c, model_plan_path, "the brackets after `%s =` do not balance", rcl < 0 ? "cluster" : "data");
        goto done;
    }
    size_t ob = 0, oe = 0;
    if (p.optimizer_from_plan) {
        int ro = find_field(plan_text, plen, "optimizer", ctor_prefix, &ob, &oe, &other);
        if (ro <= 0) {
            fail_at(&c, model_plan_path, ro < 0 ? "the brackets after `optimizer =` do not balance"
                    : "the DeepSpeed config has no \"optimizer\" and the model plan no inline "
                      "`optimizer = w.adamw { ... }` to take instead (valid: either of them)");
            goto done;
        }
    }
    if (rd == 0)
        warn(&c, model_plan_path, "has no data = { ... }; the plan reads data/train.bin (set data.train)");

    /* The plan. */
    char a[40], b[40];
    sb_printf(&out, "-- Generated by weft import-deepspeed from ");
    sb_lua(&out, ds_json_path);
    sb_printf(&out, " (world = %d),\n-- with the model of ", world);
    sb_lua(&out, model_plan_path);
    sb_printf(&out, ".  DeepSpeed's rule: train_batch_size =\n"
                    "-- train_micro_batch_size_per_gpu * gradient_accumulation_steps * dp, dp = world / (tp * pp).\n"
                    "local w = weft\n\nreturn w.plan {\n");
    sb_printf(&out, "  model = %.*s,\n", (int)(me - mb), plan_text + mb);
    if (rcl > 0) sb_printf(&out, "  cluster = %.*s,\n", (int)(ce - cb), plan_text + cb);
    if (tp == 1 && pp == 1 && !sp) sb_printf(&out, "  mesh = { dp = %d },\n", dp);
    else
        sb_printf(&out, "  mesh = { dp = %d, tp = %ld, pp = %ld%s },  -- tp, pp from the model plan\n", dp, tp, pp,
                  sp ? ", sp = true" : "");
    if (pp > 1 && rp > 0) sb_printf(&out, "  pipeline = %.*s,\n", (int)(pe - pb), plan_text + pb);
    sb_printf(&out, "  batch = { micro = %lld, global = %lld },  -- gradient_accumulation_steps = %lld\n",
              p.micro, p.global, p.accum);
    if (p.have_prefetch) {
        int bytes = strcmp(p.precision, "fp32") == 0 ? 4 : 2;
        snprintf(a, sizeof a, "%.6g", (double)p.prefetch_elems * bytes / (1024.0 * 1024.0));
        sb_printf(&out, "  zero_prefetch_mb = %s,  -- stage3_prefetch_bucket_size = %lld elements x %d bytes\n",
                  a, p.prefetch_elems, bytes);
    }
    if (p.have_bucket) {
        int bytes = strcmp(p.precision, "fp32") == 0 ? 4 : 2;
        double mib = (double)p.bucket_elems * bytes / (1024.0 * 1024.0);
        snprintf(a, sizeof a, "%.6g", mib);
        sb_printf(&out, "  buckets = { mb = %s },  -- reduce_bucket_size = %lld elements x %d bytes (%s)\n",
                  a, p.bucket_elems, bytes, p.precision);
    }
    if (p.optimizer_from_plan) {
        sb_printf(&out, "  optimizer = %.*s,  -- from the model plan (no \"optimizer\" in the config)\n",
                  (int)(oe - ob), plan_text + ob);
    } else {
        sb_printf(&out, "  optimizer = w.adamw { lr = %s, ", num(p.lr, a));
        sb_printf(&out, "min_lr = %s, ", num(p.min_lr, a));
        sb_printf(&out, "betas = { %s, ", num(p.beta1, a));
        sb_printf(&out, "%s }, ", num(p.beta2, a));
        sb_printf(&out, "eps = %s, ", num(p.eps, a));
        sb_printf(&out, "weight_decay = %s, warmup = %lld },\n", num(p.wd, a), p.warmup);
    }
    sb_printf(&out, "  clip_grad_norm = %s,\n", num(p.clip, a));
    if (p.have_steps) sb_printf(&out, "  train = { steps = %lld },\n", p.steps);
    if (rd > 0) sb_printf(&out, "  data = %.*s,\n", (int)(de - db), plan_text + db);
    else sb_printf(&out, "  data = { train = \"data/train.bin\" },\n");
    sb_printf(&out, "  precision = \"%s\",\n", p.precision);
    sb_printf(&out, "  zero = %lld,\n", p.zero);
    if (p.offload_any)
        sb_printf(&out, "  offload = { optimizer = \"%s\", params = \"%s\" },\n", p.off_opt, p.off_params);
    if (p.recompute_full) sb_printf(&out, "  recompute = \"full\",  -- activation_checkpointing.partition_activations\n");
    if (p.zero_comments.n)
        sb_printf(&out, "  -- DeepSpeed ZeRO settings that weft plans statically (accepted, not used):\n%s",
                  p.zero_comments.p);
    if (p.loss_comment.n) sb_printf(&out, "%s", p.loss_comment.p);
    sb_printf(&out, "}\n");
    (void)b;
    if (out.oom || p.zero_comments.oom || p.loss_comment.oom || c.warn.oom) {
        fail_at(&c, out_path, "out of memory");
        goto done;
    }
    if (write_atomically(&c, out_path, out.p, out.n) < 0) goto done;
    if (warnings && c.warn.n) {
        fputs(c.warn.p, warnings);
        fflush(warnings);
    }
    rc = 0;

done:
    cJSON_Delete(root);
    free(json_text);
    free(plan_text);
    free(out.p);
    free(c.warn.p);
    free(p.zero_comments.p);
    free(p.loss_comment.p);
    return rc;
}
