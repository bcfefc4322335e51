/* datagen_vlm.c: WVLM record files from images + captions, or synthetic
 * shapes (see datagen_vlm.h and runtime/common/data_vlm.h). */
#include "datagen_vlm.h"
#include "data_vlm.h"
#include "image.h"
#include "output.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "err_text.h"

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> 8 * i);
}

static void put_f64(unsigned char *p, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> 8 * i);
}

/* Resolved shapes of one file. */
typedef struct {
    int h, w, seq, vocab, image_token, pad_token, patch, positions;
    long rec_bytes;
} shape;

static int resolve(const wf_vlm_opts *o, int def_image, int def_patch, int def_seq_extra,
                   int def_seq, int def_vocab, int def_image_token, shape *s,
                   char *err, size_t errlen)
{
    wf_vlm_opts d = o ? *o : (wf_vlm_opts){ 0, 0, 0, 0, -1, -1 };
    s->h = s->w = d.image ? d.image : def_image;
    s->patch = d.patch ? d.patch : def_patch;
    if (s->h < 1 || s->h > 4096 || s->patch < 1 || s->h % s->patch) {
        set_err(err, errlen, "--image %d and --patch %d: the image side must be 1..4096 and "
                "a multiple of the patch", s->h, s->patch);
        return -1;
    }
    s->positions = (s->h / s->patch) * (s->w / s->patch);
    s->seq = d.seq ? d.seq : def_seq ? def_seq : s->positions + def_seq_extra;
    s->vocab = d.vocab ? d.vocab : def_vocab;
    s->image_token = d.image_token >= 0 ? d.image_token : def_image_token;
    s->pad_token = d.pad_token >= 0 ? d.pad_token
                 : s->vocab - 1 != s->image_token ? s->vocab - 1 : s->vocab - 2;
    if (s->seq < s->positions || s->seq > (1 << 20)) {
        set_err(err, errlen, "--seq %d must hold the %d image positions ((%d/%d)^2) and at "
                "most 2^20", s->seq, s->positions, s->h, s->patch);
        return -1;
    }
    if (s->vocab < 2 || s->vocab > 65536) {
        set_err(err, errlen, "--vocab %d is out of range (tokens are uint16: 2..65536)", s->vocab);
        return -1;
    }
    if (s->image_token < 0 || s->image_token >= s->vocab || s->pad_token < 0 ||
        s->pad_token >= s->vocab || s->pad_token == s->image_token) {
        set_err(err, errlen, "--image-token %d and pad token %d must be distinct ids below "
                "--vocab %d", s->image_token, s->pad_token, s->vocab);
        return -1;
    }
    s->rec_bytes = wf_vlm_record_bytes(s->h, s->w, 3, s->seq);
    if (s->rec_bytes > INT32_MAX) {
        set_err(err, errlen, "a record of %ld bytes does not fit the header's int32",
                s->rec_bytes);
        return -1;
    }
    return 0;
}

static void header(unsigned char *b, const shape *s, long count, int descriptive,
                   double floor_text, double floor_image)
{
    memset(b, 0, WF_VLM_HEADER_BYTES);
    int32_t v[WF_VLM_H_RESERVED] = {
        [WF_VLM_H_MAGIC] = WF_VLM_MAGIC, [WF_VLM_H_VERSION] = WF_VLM_VERSION,
        [WF_VLM_H_HEIGHT] = s->h, [WF_VLM_H_WIDTH] = s->w, [WF_VLM_H_CHANNELS] = 3,
        [WF_VLM_H_SEQ] = s->seq, [WF_VLM_H_COUNT] = (int32_t)count,
        [WF_VLM_H_VOCAB] = s->vocab, [WF_VLM_H_IMAGE_TOKEN] = s->image_token,
        [WF_VLM_H_IMAGE_POSITIONS] = s->positions, [WF_VLM_H_PAD_TOKEN] = s->pad_token,
        [WF_VLM_H_PATCH] = s->patch, [WF_VLM_H_IMAGE_START] = 0,
        [WF_VLM_H_DESCRIPTIVE] = descriptive, [WF_VLM_H_RECORD_BYTES] = (int32_t)s->rec_bytes,
    };
    for (int i = 0; i < WF_VLM_H_RESERVED; i++)
        put32(b + 4 * i, (uint32_t)v[i]);
    put_f64(b + 4 * WF_VLM_H_FLOOR_TEXT, floor_text);
    put_f64(b + 4 * WF_VLM_H_FLOOR_IMAGE, floor_image);
}

/* Fills the token and mask parts of a record: placeholders, then n caption
 * tokens with their mask values, then pads.  The caller checked the fit. */
static void fill_tokens(unsigned char *rec, const shape *s, const int *tok,
                        const uint8_t *kind, int n)
{
    unsigned char *t = rec + (long)s->h * s->w * 3, *m = t + 2 * (s->seq + 1);
    for (int i = 0; i <= s->seq; i++) {
        int c = i - s->positions;
        int v = i < s->positions ? s->image_token : c < n ? tok[c] : s->pad_token;
        t[2 * i] = (unsigned char)v;
        t[2 * i + 1] = (unsigned char)(v >> 8);
        m[i] = i < s->positions || c >= n ? WF_VLM_MASK_NONE : kind[c];
    }
}

/* ---- synthetic shapes --------------------------------------------------- */

const char *const wf_vlm_synth_words[WF_SYNTH_WORDS] = {
    "a", "on", "the", "red", "green", "blue", "yellow", "circle", "square", "triangle",
    "left", "right", "top", "bottom",
};
const uint8_t wf_vlm_synth_rgb[WF_SYNTH_COLOURS][3] = {
    { 220, 40, 40 }, { 40, 180, 60 }, { 40, 80, 220 }, { 230, 210, 40 },
};
const uint8_t wf_vlm_synth_background[3] = { 110, 110, 110 };

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Counter-based draws: value k of record index under seed, uniform in [0, n). */
static int draw(uint64_t seed, long index, int k, int n)
{
    uint64_t h = mix64(mix64(seed ^ 0x5EED5EED5EED5EEDULL) + (uint64_t)index * 0x9E3779B97F4A7C15ULL
                       + (uint64_t)k * 0xD1B54A32D192ED03ULL);
    return (int)((h >> 11) % (uint64_t)n);
}

void wf_vlm_synth_draw(uint64_t seed, long index, int h, int w, uint8_t *rgb, int attr[3])
{
    int colour = draw(seed, index, 0, WF_SYNTH_COLOURS);
    int kind = draw(seed, index, 1, WF_SYNTH_SHAPES);
    int pos = draw(seed, index, 2, WF_SYNTH_POSITIONS);
    attr[0] = colour, attr[1] = kind, attr[2] = pos;
    int side = h < w ? h : w;
    /* radius side/8 .. side/6 and a centre within side/16 of the anchor:
     * the shape stays inside the image and nearer its anchor than any other */
    double r = side / 8.0 + draw(seed, index, 3, 1000) / 1000.0 * (side / 6.0 - side / 8.0);
    double jx = (draw(seed, index, 4, 1001) / 500.0 - 1) * side / 16.0;
    double jy = (draw(seed, index, 5, 1001) / 500.0 - 1) * side / 16.0;
    static const double ax[4] = { 0.25, 0.75, 0.5, 0.5 }, ay[4] = { 0.5, 0.5, 0.25, 0.75 };
    double cx = ax[pos] * w + jx, cy = ay[pos] * h + jy;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double px = x + 0.5 - cx, py = y + 0.5 - cy; /* pixel centre */
            int in;
            if (kind == 0)
                in = px * px + py * py <= r * r;
            else if (kind == 1)
                in = fabs(px) <= r && fabs(py) <= r;
            else /* apex (0, -r), base y = +r from -r to r */
                in = py <= r && py >= -r && fabs(px) <= (py + r) / 2;
            const uint8_t *c = in ? wf_vlm_synth_rgb[colour] : wf_vlm_synth_background;
            memcpy(rgb + ((size_t)y * w + x) * 3, c, 3);
        }
}

void wf_vlm_synth_floors(double *without_image, double *with_image)
{
    if (without_image)
        *without_image = (log(WF_SYNTH_COLOURS) + log(WF_SYNTH_SHAPES) +
                          log(WF_SYNTH_POSITIONS)) / 3.0;
    if (with_image)
        *with_image = 0.0;
}

int wf_data_vlm_synth(const char *out_path, long count, uint64_t seed,
                      const wf_vlm_opts *opts, char *err, size_t errlen)
{
    shape s;
    char why[PATH_MAX + 256];
    if (resolve(opts, 32, 8, 8, 0, WF_SYNTH_WORDS + 2, WF_SYNTH_WORDS, &s, why, sizeof why)) {
        set_err(err, errlen, "data vlm-synth: %s", why);
        return -1;
    }
    if (s.h < 16 || count < 1 || count > INT32_MAX || s.vocab < WF_SYNTH_WORDS + 2 ||
        s.image_token < WF_SYNTH_WORDS || s.pad_token < WF_SYNTH_WORDS ||
        s.seq + 1 < s.positions + WF_SYNTH_CAPTION) {
        set_err(err, errlen, "data vlm-synth: needs --image >= 16, --count 1..2^31-1, "
                "--vocab >= %d with the image token >= %d (the words take ids 0..%d), and "
                "--seq >= %d (the %d image positions and the %d-word caption)",
                WF_SYNTH_WORDS + 2, WF_SYNTH_WORDS, WF_SYNTH_WORDS - 1,
                s.positions + WF_SYNTH_CAPTION - 1, s.positions, WF_SYNTH_CAPTION);
        return -1;
    }
    unsigned char *rec = malloc((size_t)s.rec_bytes > WF_VLM_HEADER_BYTES
                                ? (size_t)s.rec_bytes : WF_VLM_HEADER_BYTES);
    if (!rec) {
        set_err(err, errlen, "data vlm-synth: out of memory");
        return -1;
    }
    double f_text, f_image;
    wf_vlm_synth_floors(&f_text, &f_image);
    wf_outfile out;
    if (wf_outfile_open(&out, out_path, 0666, why, sizeof why) != 0) {
        set_err(err, errlen, "data vlm-synth: %s", why);
        free(rec);
        return -1;
    }
    header(rec, &s, count, 3, f_text, f_image);
    int ok = fwrite(rec, 1, WF_VLM_HEADER_BYTES, out.f) == WF_VLM_HEADER_BYTES;
    static const uint8_t kind[WF_SYNTH_CAPTION] = { 1, 2, 2, 1, 1, 2 };
    for (long i = 0; ok && i < count; i++) {
        int a[3];
        wf_vlm_synth_draw(seed, i, s.h, s.w, rec, a);
        int tok[WF_SYNTH_CAPTION] = { 0, WF_SYNTH_COLOUR0 + a[0], WF_SYNTH_SHAPE0 + a[1], 1, 2,
                                      WF_SYNTH_POSITION0 + a[2] };
        fill_tokens(rec, &s, tok, kind, WF_SYNTH_CAPTION);
        ok = fwrite(rec, 1, (size_t)s.rec_bytes, out.f) == (size_t)s.rec_bytes;
    }
    free(rec);
    if (!ok) {
        set_err(err, errlen, "data vlm-synth: writing %s failed: %s (any existing %s is "
                "unchanged)", out.tmp, strerror(errno), out_path);
        wf_outfile_abort(&out);
        return -1;
    }
    if (wf_outfile_commit(&out, why, sizeof why) != 0) {
        set_err(err, errlen, "data vlm-synth: %s", why);
        return -1;
    }
    return 0;
}

/* ---- images and captions ------------------------------------------------ */

/* One caption line: its image name and tokens.  0, or -1 with why set. */
static int parse_line(const char *line, const shape *s, char *name, size_t name_len,
                      int *tok, int *n, char *why, size_t whylen)
{
    cJSON *j = cJSON_Parse(line);
    int rc = -1;
    if (!j || !cJSON_IsObject(j)) {
        set_err(why, whylen, "not a JSON object (expected {\"image\": NAME, \"text\": ...} "
                "or {\"image\": NAME, \"ids\": [...]})");
        goto done;
    }
    const cJSON *img = cJSON_GetObjectItemCaseSensitive(j, "image");
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(j, "text");
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(j, "ids");
    if (!cJSON_IsString(img) || !*img->valuestring) {
        set_err(why, whylen, "field 'image' must be a non-empty file name");
        goto done;
    }
    if (strlen(img->valuestring) >= name_len) {
        set_err(why, whylen, "field 'image' is too long");
        goto done;
    }
    strcpy(name, img->valuestring);
    int room = s->seq + 1 - s->positions;
    if (!!cJSON_IsString(text) == !!ids) {
        set_err(why, whylen, "needs exactly one of 'text' (a string) and 'ids' (an array)");
        goto done;
    }
    if (text) {
        if (s->image_token < 256 || s->pad_token < 256) {
            set_err(why, whylen, "field 'text' is byte-level (ids 0..255), so the image token "
                    "%d and pad token %d must be >= 256 (use --vocab 258 or more)",
                    s->image_token, s->pad_token);
            goto done;
        }
        size_t len = strlen(text->valuestring);
        if ((long)len > room) {
            set_err(why, whylen, "field 'text' has %zu bytes, but --seq %d leaves room for %d "
                    "after the %d image positions (use --seq %zu or more)",
                    len, s->seq, room, s->positions, (size_t)s->positions + len - 1);
            goto done;
        }
        for (size_t i = 0; i < len; i++)
            tok[i] = (unsigned char)text->valuestring[i];
        *n = (int)len;
    } else {
        if (!cJSON_IsArray(ids)) {
            set_err(why, whylen, "field 'ids' must be an array of token ids");
            goto done;
        }
        int len = cJSON_GetArraySize(ids), i = 0;
        if (len > room) {
            set_err(why, whylen, "field 'ids' has %d tokens, but --seq %d leaves room for %d "
                    "after the %d image positions", len, s->seq, room, s->positions);
            goto done;
        }
        const cJSON *e;
        cJSON_ArrayForEach(e, ids) {
            double v = cJSON_IsNumber(e) ? e->valuedouble : -1;
            if (v != floor(v) || v < 0 || v >= s->vocab || v == s->image_token ||
                v == s->pad_token) {
                set_err(why, whylen, "field 'ids'[%d] is not a token id below --vocab %d "
                        "other than the image token %d and the pad token %d",
                        i, s->vocab, s->image_token, s->pad_token);
                goto done;
            }
            tok[i++] = (int)v;
        }
        *n = len;
    }
    rc = 0;
done:
    cJSON_Delete(j);
    return rc;
}

int wf_data_vlm(const char *images_dir, const char *captions, const char *out_path,
                const wf_vlm_opts *opts, long *count_out, FILE *diag,
                char *err, size_t errlen)
{
    shape s;
    char why[PATH_MAX + 256];
    if (resolve(opts, 224, 16, 0, 512, 258, 256, &s, why, sizeof why)) {
        set_err(err, errlen, "data vlm: %s", why);
        return -1;
    }
    FILE *in = fopen(captions, "r");
    if (!in) {
        set_err(err, errlen, "data vlm: cannot open captions %s: %s", captions, strerror(errno));
        return -1;
    }
    unsigned char *rec = malloc((size_t)s.rec_bytes > WF_VLM_HEADER_BYTES
                                ? (size_t)s.rec_bytes : WF_VLM_HEADER_BYTES);
    int *tok = malloc(sizeof(int) * (size_t)(s.seq + 1));
    uint8_t *kind = malloc((size_t)s.seq + 1);
    if (!rec || !tok || !kind) {
        set_err(err, errlen, "data vlm: out of memory");
        fclose(in);
        free(rec), free(tok), free(kind);
        return -1;
    }
    memset(kind, WF_VLM_MASK_TEXT, (size_t)s.seq + 1);
    wf_outfile out;
    int opened = wf_outfile_open(&out, out_path, 0666, why, sizeof why) == 0;
    if (!opened)
        set_err(err, errlen, "data vlm: %s", why);
    long count = 0, bad = 0, lineno = 0;
    char *line = NULL;
    size_t cap = 0;
    int io_ok = 1;
    if (opened) {
        header(rec, &s, 0, 0, -1, -1); /* rewritten with the count at the end */
        io_ok = fwrite(rec, 1, WF_VLM_HEADER_BYTES, out.f) == WF_VLM_HEADER_BYTES;
    }
    while (opened && io_ok && getline(&line, &cap, in) >= 0) {
        lineno++;
        if (strspn(line, " \t\r\n") == strlen(line))
            continue;
        char name[PATH_MAX], path[PATH_MAX];
        int n = 0;
        if (parse_line(line, &s, name, sizeof name, tok, &n, why, sizeof why) != 0) {
            fprintf(diag, "weft: error: %s:%ld: %s\n", captions, lineno, why);
            bad++;
            continue;
        }
        if (wf_path(path, sizeof path, why, sizeof why, "%s/%s", images_dir, name) != 0) {
            fprintf(diag, "weft: error: %s:%ld: %s\n", captions, lineno, why);
            bad++;
            continue;
        }
        wf_image img;
        if (wf_image_read(path, &img, why, sizeof why) != 0) {
            fprintf(diag, "weft: error: %s: %s (%s:%ld)\n", path, why, captions, lineno);
            bad++;
            continue;
        }
        wf_image_fit(&img, s.h, s.w, rec);
        wf_image_free(&img);
        fill_tokens(rec, &s, tok, kind, n);
        io_ok = fwrite(rec, 1, (size_t)s.rec_bytes, out.f) == (size_t)s.rec_bytes;
        count++;
        if (count >= INT32_MAX) {
            fprintf(diag, "weft: error: %s:%ld: more than 2^31-1 records\n", captions, lineno);
            bad++;
            break;
        }
    }
    int read_failed = ferror(in);
    free(line);
    fclose(in);
    free(tok), free(kind);
    if (!opened) {
        free(rec);
        return -1;
    }
    if (io_ok && !bad && !read_failed && count > 0) {
        header(rec, &s, count, 0, -1, -1);
        io_ok = fseek(out.f, 0, SEEK_SET) == 0 &&
                fwrite(rec, 1, WF_VLM_HEADER_BYTES, out.f) == WF_VLM_HEADER_BYTES;
    }
    free(rec);
    if (!io_ok || read_failed || bad || count == 0) {
        char what[PATH_MAX + 128];
        if (!io_ok)
            set_err(what, sizeof what, "writing %s failed: %s", out.tmp, strerror(errno));
        else if (read_failed)
            set_err(what, sizeof what, "reading captions %s failed", captions);
        else if (bad)
            set_err(what, sizeof what, "%ld bad image%s or caption line%s (listed above)",
                    bad, bad == 1 ? "" : "s", bad == 1 ? "" : "s");
        else
            set_err(what, sizeof what, "captions %s has no records", captions);
        wf_outfile_abort(&out);
        set_err(err, errlen, "data vlm: %s; nothing written (any existing %s is unchanged)",
                what, out_path);
        return -1;
    }
    if (wf_outfile_commit(&out, why, sizeof why) != 0) {
        set_err(err, errlen, "data vlm: %s", why);
        return -1;
    }
    if (count_out)
        *count_out = count;
    return 0;
}
