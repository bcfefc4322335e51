/* image.c: PNG / JPEG decoding and area resampling (see image.h). */
#include "image.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE */

#include <jpeglib.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include "err_text.h"

#define MAX_PIXELS (1L << 28) /* refuse absurd sizes before allocating */

static int read_png(const char *path, wf_image *img, char *err, size_t errlen)
{
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&im, path)) {
        set_err(err, errlen, "unreadable PNG: %s", im.message);
        png_image_free(&im);
        return -1;
    }
    if ((long)im.width * im.height > MAX_PIXELS) {
        set_err(err, errlen, "PNG of %u x %u pixels is too large", im.width, im.height);
        png_image_free(&im);
        return -1;
    }
    img->width = (int)im.width;
    img->height = (int)im.height;
    img->rgb = malloc((size_t)im.width * im.height * 3);
    if (!img->rgb) {
        set_err(err, errlen, "out of memory for a %u x %u PNG", im.width, im.height);
        png_image_free(&im);
        return -1;
    }
    if (im.format & PNG_FORMAT_FLAG_LINEAR) {
        /* 16-bit: libpng's simplified API takes such samples as linear light
         * and would gamma-encode them (0xC8C8 -> 228, not 200).  Photos'
         * 16-bit samples are sRGB-encoded like 8-bit ones, and PIL and
         * OpenCV, which the reference preprocessors use, scale them to 8
         * bits; so: read them untouched (linear in, linear out) and scale
         * (v / 257), compositing alpha over white in the same domain. */
        im.format = PNG_FORMAT_LINEAR_RGB_ALPHA;
        uint16_t *wide = malloc(PNG_IMAGE_SIZE(im));
        if (!wide) {
            set_err(err, errlen, "out of memory for a %u x %u PNG", im.width, im.height);
            png_image_free(&im);
            wf_image_free(img);
            return -1;
        }
        if (!png_image_finish_read(&im, NULL, wide, 0, NULL)) {
            set_err(err, errlen, "corrupt or truncated PNG: %s", im.message);
            free(wide);
            png_image_free(&im);
            wf_image_free(img);
            return -1;
        }
        for (size_t i = 0; i < (size_t)im.width * im.height; i++) {
            double a = wide[4 * i + 3] / 65535.0;
            for (int c = 0; c < 3; c++) {
                double v = (wide[4 * i + c] * a + 65535.0 * (1 - a)) / 257.0;
                img->rgb[3 * i + c] = (uint8_t)(v + 0.5);
            }
        }
        free(wide);
        png_image_free(&im);
        return 0;
    }
    /* 8-bit: gray and palette converted, alpha kept and composited here as
     * for 16 bits (libpng's own compositing works in linear light, which
     * no reference preprocessor does) */
    im.format = PNG_FORMAT_RGBA;
    uint8_t *rgba = malloc(PNG_IMAGE_SIZE(im));
    if (!rgba || !png_image_finish_read(&im, NULL, rgba, 0, NULL)) {
        set_err(err, errlen, rgba ? "corrupt or truncated PNG: %s" : "out of memory%.0s",
                im.message);
        free(rgba);
        png_image_free(&im);
        wf_image_free(img);
        return -1;
    }
    for (size_t i = 0; i < (size_t)im.width * im.height; i++) {
        unsigned a = rgba[4 * i + 3];
        for (int c = 0; c < 3; c++)  /* (v a + 255 (255 - a)) / 255, rounded */
            img->rgb[3 * i + c] = (uint8_t)((rgba[4 * i + c] * a + 255u * (255 - a) + 127) / 255);
    }
    free(rgba);
    png_image_free(&im);
    return 0;
}

/* libjpeg reports through these: errors longjmp out, warnings (a truncated
 * file among them) are kept and made errors afterwards. */
struct jpeg_fail {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX];
    int warned;
};

static void jpeg_fail_exit(j_common_ptr c)
{
    struct jpeg_fail *f = (struct jpeg_fail *)c->err;
    (*c->err->format_message)(c, f->msg);
    longjmp(f->jump, 1);
}

static void jpeg_fail_message(j_common_ptr c, int level)
{
    struct jpeg_fail *f = (struct jpeg_fail *)c->err;
    if (level < 0 && !f->warned) { /* level -1: a warning about corrupt data */
        (*c->err->format_message)(c, f->msg);
        f->warned = 1;
    }
}

static int read_jpeg(const char *path, wf_image *img, char *err, size_t errlen)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        set_err(err, errlen, "cannot open: %s", strerror(errno));
        return -1;
    }
    struct jpeg_decompress_struct cinfo;
    struct jpeg_fail fail;
    memset(&fail, 0, sizeof fail);
    cinfo.err = jpeg_std_error(&fail.mgr);
    fail.mgr.error_exit = jpeg_fail_exit;
    fail.mgr.emit_message = jpeg_fail_message;
    /* volatile: read after longjmp */
    uint8_t *volatile rgb = NULL;
    if (setjmp(fail.jump)) {
        set_err(err, errlen, "unreadable JPEG: %s", fail.msg);
        jpeg_destroy_decompress(&cinfo);
        fclose(fp);
        free(rgb);
        return -1;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_stdio_src(&cinfo, fp);
    jpeg_read_header(&cinfo, TRUE);
    if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
        set_err(err, errlen, "CMYK JPEG is not supported (convert it to RGB)");
        goto fail;
    }
    cinfo.out_color_space = JCS_RGB;
    jpeg_start_decompress(&cinfo);
    if ((long)cinfo.output_width * cinfo.output_height > MAX_PIXELS) {
        set_err(err, errlen, "JPEG of %u x %u pixels is too large", cinfo.output_width,
                cinfo.output_height);
        goto fail;
    }
    size_t stride = (size_t)cinfo.output_width * 3;
    rgb = malloc(stride * cinfo.output_height);
    if (!rgb) {
        set_err(err, errlen, "out of memory for a %u x %u JPEG", cinfo.output_width,
                cinfo.output_height);
        goto fail;
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = rgb + stride * cinfo.output_scanline;
        jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
    if (fail.warned) {
        set_err(err, errlen, "corrupt or truncated JPEG: %s", fail.msg);
        goto fail;
    }
    img->width = (int)cinfo.output_width;
    img->height = (int)cinfo.output_height;
    img->rgb = rgb;
    jpeg_destroy_decompress(&cinfo);
    fclose(fp);
    return 0;
fail:
    jpeg_destroy_decompress(&cinfo);
    fclose(fp);
    free(rgb);
    return -1;
}

int wf_image_read(const char *path, wf_image *img, char *err, size_t errlen)
{
    memset(img, 0, sizeof *img);
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        set_err(err, errlen, "cannot open: %s", strerror(errno));
        return -1;
    }
    unsigned char sig[8] = { 0 };
    size_t got = fread(sig, 1, sizeof sig, fp);
    fclose(fp);
    static const unsigned char png_sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    if (got == 8 && memcmp(sig, png_sig, 8) == 0)
        return read_png(path, img, err, errlen);
    if (got >= 3 && sig[0] == 0xFF && sig[1] == 0xD8 && sig[2] == 0xFF)
        return read_jpeg(path, img, err, errlen);
    set_err(err, errlen, "not a PNG or JPEG file (%s; first bytes %02x %02x %02x %02x)",
            got == 0 ? "empty" : "unknown signature", sig[0], sig[1], sig[2], sig[3]);
    return -1;
}

void wf_image_free(wf_image *img)
{
    free(img->rgb);
    img->rgb = NULL;
}

/* Area weights along one axis: output i covers source [x0 + i*s, x0 + (i+1)*s);
 * first[i] is its first source index, w[i*span + k] the overlap of source
 * first[i] + k (divided by s, so the weights sum to 1). */
static void area_weights(int n_out, double x0, double s, int n_src, int span,
                         int *first, double *w)
{
    for (int i = 0; i < n_out; i++) {
        double a = x0 + i * s, b = a + s;
        int j0 = (int)a;
        first[i] = j0;
        for (int k = 0; k < span; k++) {
            int j = j0 + k;
            double lo = a > j ? a : j, hi = b < j + 1 ? b : j + 1;
            w[i * span + k] = (j < n_src && hi > lo) ? (hi - lo) / s : 0;
        }
    }
}

void wf_image_fit(const wf_image *src, int out_h, int out_w, uint8_t *out)
{
    /* source pixels per output pixel: the short side fills the target */
    double sx = (double)src->width / out_w, sy = (double)src->height / out_h;
    double s = sx < sy ? sx : sy;
    double x0 = (src->width - s * out_w) / 2, y0 = (src->height - s * out_h) / 2;
    int span = (int)s + 2;
    int *fx = malloc(sizeof(int) * out_w), *fy = malloc(sizeof(int) * out_h);
    double *wx = malloc(sizeof(double) * out_w * span), *wy = malloc(sizeof(double) * out_h * span);
    double *rows = malloc(sizeof(double) * out_w * 3 * src->height); /* horizontal pass */
    if (!fx || !fy || !wx || !wy || !rows) {
        fprintf(stderr, "weft: out of memory resampling an image\n");
        exit(1);
    }
    area_weights(out_w, x0, s, src->width, span, fx, wx);
    area_weights(out_h, y0, s, src->height, span, fy, wy);
    for (int y = 0; y < src->height; y++)
        for (int x = 0; x < out_w; x++)
            for (int c = 0; c < 3; c++) {
                double acc = 0;
                for (int k = 0; k < span; k++)
                    if (wx[x * span + k] > 0)
                        acc += wx[x * span + k] *
                               src->rgb[((size_t)y * src->width + fx[x] + k) * 3 + c];
                rows[((size_t)y * out_w + x) * 3 + c] = acc;
            }
    for (int y = 0; y < out_h; y++)
        for (int x = 0; x < out_w; x++)
            for (int c = 0; c < 3; c++) {
                double acc = 0;
                for (int k = 0; k < span; k++)
                    if (wy[y * span + k] > 0)
                        acc += wy[y * span + k] * rows[((size_t)(fy[y] + k) * out_w + x) * 3 + c];
                int v = (int)(acc + 0.5);
                out[((size_t)y * out_w + x) * 3 + c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
    free(fx);
    free(fy);
    free(wx);
    free(wy);
    free(rows);
}
