/* test_data_vlm.c: WVLM multimodal records -- the synthetic generator
 * (compiler/datagen_vlm.c: floors, determinism, every caption re-derived
 * from its pixels), area resampling (compiler/image.c) and the reader
 * (runtime/common/data_vlm.c: sampling, refusals naming file and field). */
#include "check.h"
#include "data_vlm.h"
#include "datagen_vlm.h"
#include "image.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/weft-vlm-test.XXXXXX";

static unsigned char *slurp(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    rewind(f);
    unsigned char *b = malloc((size_t)*len + 1);
    if (fread(b, 1, (size_t)*len, f) != (size_t)*len)
        *len = -1;
    fclose(f);
    return b;
}

static void spit(const char *path, const unsigned char *b, long len)
{
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, (size_t)len, f);
    fclose(f);
}

/* The attributes read back from the pixels alone: colour = the nearest
 * palette colour to the mean of the non-background pixels; position = the
 * nearest anchor to their centroid; shape = which corners of their bounding
 * box are drawn: all four for a square, the two bottom ones for the
 * upward triangle (its base is its widest row), none for a circle (a corner
 * pixel's centre lies (r - 0.5) sqrt 2 > r from the centre for r >= 2).  The
 * share of the box (fill: 1, pi/4, 1/2 in the continuum) is printed only: at
 * r = 4 pixels a drawn circle fills up to 0.92 of its box. */
static void detect(const uint8_t *rgb, int h, int w, int a[3], double *fill)
{
    double sum[3] = { 0 }, sx = 0, sy = 0;
    long n = 0;
    int x0 = w, x1 = -1, y0 = h, y1 = -1;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const uint8_t *p = rgb + ((size_t)y * w + x) * 3;
            if (!memcmp(p, wf_vlm_synth_background, 3))
                continue;
            for (int c = 0; c < 3; c++)
                sum[c] += p[c];
            sx += x + 0.5, sy += y + 0.5, n++;
            if (x < x0) x0 = x;
            if (x > x1) x1 = x;
            if (y < y0) y0 = y;
            if (y > y1) y1 = y;
        }
    a[0] = a[1] = a[2] = -1;
    if (!n)
        return;
    double best = 1e30;
    for (int k = 0; k < WF_SYNTH_COLOURS; k++) {
        double d = 0;
        for (int c = 0; c < 3; c++)
            d += pow(sum[c] / n - wf_vlm_synth_rgb[k][c], 2);
        if (d < best) best = d, a[0] = k;
    }
    static const double ax[4] = { 0.25, 0.75, 0.5, 0.5 }, ay[4] = { 0.5, 0.5, 0.25, 0.75 };
    best = 1e30;
    for (int k = 0; k < 4; k++) {
        double d = pow(sx / n - ax[k] * w, 2) + pow(sy / n - ay[k] * h, 2);
        if (d < best) best = d, a[2] = k;
    }
    *fill = (double)n / ((double)(x1 - x0 + 1) * (y1 - y0 + 1));
    int corner[4];
    const int cx[4] = { x0, x1, x0, x1 }, cy[4] = { y0, y0, y1, y1 };
    for (int k = 0; k < 4; k++)
        corner[k] = memcmp(rgb + ((size_t)cy[k] * w + cx[k]) * 3, wf_vlm_synth_background, 3) != 0;
    int n_corners = corner[0] + corner[1] + corner[2] + corner[3];
    a[1] = n_corners == 4 ? 1 : n_corners == 0 ? 0 : !corner[0] && !corner[1] && corner[2] && corner[3] ? 2 : -1;
}

static int rd16(const uint8_t *t, int i)
{
    return t[2 * i] | t[2 * i + 1] << 8;
}

static void test_synth(void)
{
    double ft, fi;
    wf_vlm_synth_floors(&ft, &fi);
    double want = (log(4) + log(3) + log(4)) / 3;
    check(fabs(ft - want) < 1e-12 && fi == 0, "floors: %.9f nats without the image (want "
          "(ln4+ln3+ln4)/3 = %.9f), %.1f with it", ft, want, fi);

    char a[300], b[300], c[300];
    snprintf(a, sizeof a, "%s/a.bin", dir);
    snprintf(b, sizeof b, "%s/b.bin", dir);
    snprintf(c, sizeof c, "%s/c.bin", dir);
    char err[1024] = "";
    const long N = 600;
    wf_vlm_opts o = { 32, 8, 0, 0, -1, -1 }; /* P = 16, seq = 24 */
    int rc = wf_data_vlm_synth(a, N, 7, &o, err, sizeof err);
    check(rc == 0, "vlm-synth writes %ld records (%s)", N, err);
    wf_data_vlm_synth(b, N, 7, &o, err, sizeof err);
    wf_data_vlm_synth(c, N, 8, &o, err, sizeof err);
    long la, lb, lc;
    unsigned char *A = slurp(a, &la), *B = slurp(b, &lb), *C = slurp(c, &lc);
    long rec = wf_vlm_record_bytes(32, 32, 3, 24);
    check(la == WF_VLM_HEADER_BYTES + N * rec, "file size %ld = 1024 + %ld * %ld", la, N, rec);
    check(la == lb && !memcmp(A, B, (size_t)la), "same seed: byte-identical files");
    check(la == lc && memcmp(A + 1024, C + 1024, (size_t)la - 1024),
          "another seed: other records");
    free(A), free(B), free(C);

    wf_vlm *d;
    wf_vlm_shape sh = { 32, 32, 3, 24, 16, 14, 16 };
    rc = wf_vlm_open(&d, a, &sh, err, sizeof err);
    check(rc == 0, "reader opens it with the plan's shapes (%s)", rc ? err : "");
    if (rc)
        return;
    double rt, ri;
    wf_vlm_floors(d, &rt, &ri);
    check(rt == ft && ri == 0, "header floors %.9f / %.1f", rt, ri);

    /* every record: the caption is what the pixels show; layout and mask */
    int mismatch = 0, layout_bad = 0, counts[3][4] = { { 0 } }, combos[48] = { 0 };
    double fill_min[3] = { 9, 9, 9 }, fill_max[3] = { 0, 0, 0 };
    static const int kind[6] = { 1, 2, 2, 1, 1, 2 };
    for (long r = 0; r < N; r++) {
        const uint8_t *img, *t, *m;
        wf_vlm_record(d, r, &img, &t, &m);
        int at[3];
        double fill = 0;
        detect(img, 32, 32, at, &fill);
        int cap[3] = { rd16(t, 17) - WF_SYNTH_COLOUR0, rd16(t, 18) - WF_SYNTH_SHAPE0,
                       rd16(t, 21) - WF_SYNTH_POSITION0 };
        if (at[0] != cap[0] || at[1] != cap[1] || at[2] != cap[2]) {
            if (mismatch++ < 5)
                printf("  record %ld: caption %s %s %s, pixels say %d %d %d (fill %.3f)\n", r,
                       wf_vlm_synth_words[rd16(t, 17)], wf_vlm_synth_words[rd16(t, 18)],
                       wf_vlm_synth_words[rd16(t, 21)], at[0], at[1], at[2], fill);
        }
        if (cap[1] >= 0 && cap[1] < 3) {
            if (fill < fill_min[cap[1]]) fill_min[cap[1]] = fill;
            if (fill > fill_max[cap[1]]) fill_max[cap[1]] = fill;
        }
        for (int i = 0; i < 25; i++) {
            int v = rd16(t, i), mk = m[i];
            int ok = i < 16 ? v == 14 && mk == 0
                   : i < 22 ? mk == kind[i - 16] : v == 15 && mk == 0;
            layout_bad += !ok;
        }
        layout_bad += rd16(t, 16) != 0 || rd16(t, 19) != 1 || rd16(t, 20) != 2;
        for (int k = 0; k < 3; k++)
            if (cap[k] >= 0 && cap[k] < 4)
                counts[k][cap[k]]++;
        if (cap[0] >= 0 && cap[0] < 4 && cap[1] >= 0 && cap[1] < 3 && cap[2] >= 0 && cap[2] < 4)
            combos[(cap[0] * 3 + cap[1]) * 4 + cap[2]]++;
    }
    check(mismatch == 0, "all %ld captions match colour, shape and position re-detected from "
          "the pixels (%d mismatches)", N, mismatch);
    printf("  fill ratios: circle %.3f..%.3f, square %.3f..%.3f, triangle %.3f..%.3f\n",
           fill_min[0], fill_max[0], fill_min[1], fill_max[1], fill_min[2], fill_max[2]);
    check(layout_bad == 0, "16 placeholders (mask 0), 'a C S on the P' with mask 1 2 2 1 1 2, "
          "pads (mask 0): %d bad positions", layout_bad);
    /* uniform: each value's count within 5 standard deviations of N/k */
    int uniform = 1, all_combos = 1;
    int ks[3] = { 4, 3, 4 };
    for (int k = 0; k < 3; k++)
        for (int v = 0; v < ks[k]; v++) {
            double e = (double)N / ks[k], sd = sqrt(N * (1.0 / ks[k]) * (1 - 1.0 / ks[k]));
            if (fabs(counts[k][v] - e) > 5 * sd) uniform = 0;
        }
    for (int i = 0; i < 48; i++)
        if (!combos[i]) all_combos = 0;
    check(uniform, "attribute counts within 5 sd of uniform (colours %d %d %d %d, shapes %d %d "
          "%d, positions %d %d %d %d)", counts[0][0], counts[0][1], counts[0][2], counts[0][3],
          counts[1][0], counts[1][1], counts[1][2], counts[2][0], counts[2][1], counts[2][2],
          counts[2][3]);
    check(all_combos, "all 48 (colour, shape, position) combinations occur in %ld records", N);

    /* sampling: an epoch visits every record once, a pure function of (seed, g) */
    char *seen = calloc((size_t)N, 1);
    int perm = 1, same = 1, differs = 0;
    for (long g = 0; g < N; g++) {
        long r = wf_vlm_index(d, 3, (uint64_t)g);
        if (r < 0 || r >= N || seen[r]++) perm = 0;
        if (r != wf_vlm_index(d, 3, (uint64_t)g)) same = 0;
        differs += wf_vlm_index(d, 3, (uint64_t)(g + N)) != r;
    }
    free(seen);
    check(perm, "samples 0..%ld of seed 3 visit every record exactly once", N - 1);
    check(same, "the record of (seed, g) is the same on every call");
    check(differs > N / 2, "epoch 1 is another order (%d of %ld positions differ)", differs, N);
    uint8_t img[32 * 32 * 3], loss[24];
    int32_t in[24], tg[24];
    wf_vlm_sample(d, 3, 5, img, in, tg, loss, err, sizeof err);
    const uint8_t *ri_, *rt_, *rm_;
    wf_vlm_record(d, wf_vlm_index(d, 3, 5), &ri_, &rt_, &rm_);
    int sample_ok = !memcmp(img, ri_, sizeof img);
    for (int i = 0; i < 24; i++)
        sample_ok &= in[i] == rd16(rt_, i) && tg[i] == rd16(rt_, i + 1) && loss[i] == rm_[i + 1];
    check(sample_ok, "sample = the record's image, tokens[0..24), tokens[1..25], mask[1..25]");
    check(loss[15] == 1 && loss[16] == 2 && loss[20] == 2 && loss[14] == 0 && loss[21] == 0,
          "the last image position predicts 'a' (loss 1), then colour (2) ... position (2)");
    wf_vlm_close(d);
}

/* The same re-detection at the encoders' resolutions: 64 and 224 pixels
 * (patch = side / 4, so P = 16 and seq = 24 as above). */
static void test_synth_sizes(void)
{
    static const int sides[2] = { 64, 224 };
    for (int k = 0; k < 2; k++) {
        int H = sides[k];
        char p[300], err[1024] = "";
        snprintf(p, sizeof p, "%s/s%d.bin", dir, H);
        wf_vlm_opts o = { H, H / 4, 0, 0, -1, -1 };
        const long N = 120;
        int rc = wf_data_vlm_synth(p, N, 11, &o, err, sizeof err);
        wf_vlm *d = NULL;
        wf_vlm_shape sh = { H, H, 3, 24, 16, 14, 16 };
        if (rc == 0)
            rc = wf_vlm_open(&d, p, &sh, err, sizeof err);
        int mismatch = 0;
        for (long r = 0; rc == 0 && r < N; r++) {
            const uint8_t *img, *t, *m;
            wf_vlm_record(d, r, &img, &t, &m);
            int at[3];
            double fill;
            detect(img, H, H, at, &fill);
            mismatch += at[0] != rd16(t, 17) - WF_SYNTH_COLOUR0 ||
                        at[1] != rd16(t, 18) - WF_SYNTH_SHAPE0 ||
                        at[2] != rd16(t, 21) - WF_SYNTH_POSITION0;
        }
        check(rc == 0 && mismatch == 0, "%d x %d: all %ld captions match their pixels "
              "(%d mismatches) %s", H, H, N, mismatch, rc ? err : "");
        wf_vlm_close(d);
        unlink(p);
    }
}

static void test_refusals(void)
{
    char a[300], p[300], err[1024];
    snprintf(a, sizeof a, "%s/a.bin", dir);
    wf_vlm *d;
    wf_vlm_shape sh = { 32, 32, 3, 24, 16, 14, 16 };

    int rc = wf_vlm_open(&d, dir, &sh, err, sizeof err);
    check(rc && strstr(err, dir) && strstr(err, "not a regular file"), "a folder: %s", err);

    const char *field[] = { "image height", "image width", "channels", "seq", "vocab",
                            "image token", "image positions" };
    for (int f = 0; f < 7; f++) {
        wf_vlm_shape w = sh;
        ((int *)&w)[f] += 1;
        rc = wf_vlm_open(&d, a, &w, err, sizeof err);
        char q[64];
        snprintf(q, sizeof q, "'%s'", field[f]);
        check(rc && strstr(err, a) && strstr(err, q) && strstr(err, "plan expects"),
              "plan %s differs: %s", field[f], err);
    }

    long len;
    unsigned char *b = slurp(a, &len);
    snprintf(p, sizeof p, "%s/bad.bin", dir);
    spit(p, b, len - 1);
    rc = wf_vlm_open(&d, p, &sh, err, sizeof err);
    check(rc && strstr(err, p) && strstr(err, "truncated"), "one byte short: %s", err);
    b[0] ^= 1;
    spit(p, b, len);
    rc = wf_vlm_open(&d, p, &sh, err, sizeof err);
    check(rc && strstr(err, "magic"), "wrong magic: %s", err);
    b[0] ^= 1;
    long rec = wf_vlm_record_bytes(32, 32, 3, 24), tok = 1024 + 3 * rec + 32 * 32 * 3;
    b[tok + 2 * 20] = 14; /* record 3 token 20 ("the") becomes the image token */
    spit(p, b, len);
    rc = wf_vlm_open(&d, p, &sh, err, sizeof err);
    check(rc && strstr(err, "record 3, token 20") && strstr(err, "image token"),
          "an image token outside the placeholders: %s", err);
    b[tok + 2 * 20] = 2;
    b[tok + 2 * 25 + 21] = 3; /* mask of token 21 */
    spit(p, b, len);
    rc = wf_vlm_open(&d, p, &sh, err, sizeof err);
    check(rc && strstr(err, "record 3, token 21") && strstr(err, "mask"), "mask value 3: %s",
          err);
    free(b);
    unlink(p);

    /* a failed write leaves nothing */
    snprintf(p, sizeof p, "%s/no/such/dir.bin", dir);
    rc = wf_data_vlm_synth(p, 4, 1, NULL, err, sizeof err);
    check(rc != 0, "vlm-synth into a missing folder fails: %s", err);
    wf_vlm_opts o = { 32, 8, 20, 0, -1, -1 };
    snprintf(p, sizeof p, "%s/short.bin", dir);
    rc = wf_data_vlm_synth(p, 4, 1, &o, err, sizeof err);
    check(rc != 0 && access(p, F_OK) != 0 && strstr(err, "--seq"),
          "seq 20 < 16 + 6 - 1 refused, no file: %s", err);
}

static void test_fit(void)
{
    /* 4 x 2 source: columns 0..3 with values 0, 40, 80, 120 in every channel.
     * To 1 x 1: the short side (2) fills it, the centre 2 x 2 (columns 1, 2)
     * is kept, so the pixel is (40 + 80) / 2 = 60. */
    uint8_t px[2 * 4 * 3];
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 4; x++)
            memset(px + (y * 4 + x) * 3, 40 * x, 3);
    wf_image src = { 4, 2, px };
    uint8_t out[3];
    wf_image_fit(&src, 1, 1, out);
    check(out[0] == 60 && out[2] == 60, "area fit of a 4x2 to 1x1 keeps the centre: %d (want 60)",
          out[0]);
    /* a 3 x 3 to 2 x 2: each output covers 1.5 x 1.5 source pixels; the top
     * left one weights source (0,0) by 1 * 1, (1,0) and (0,1) by 0.5 * 1 and
     * (1,1) by 0.25, over 2.25 */
    uint8_t q[9 * 3] = { 0 };
    q[0] = 90, q[3] = 0, q[9] = 0, q[12] = 180;
    wf_image s3 = { 3, 3, q };
    uint8_t o4[12];
    wf_image_fit(&s3, 2, 2, o4);
    check(o4[0] == 60, "area weights 1, 1/2, 1/2, 1/4 over 2.25: (90 + 45) / 2.25 = 60, got %d",
          o4[0]);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_synth();
    test_synth_sizes();
    test_refusals();
    test_fit();
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        printf("note: could not remove %s\n", dir);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
