/* image.h: reading PNG and JPEG files into 8-bit RGB (libpng's simplified
 * API, libjpeg-turbo) and resampling them to a model's resolution.
 *
 * Decoding: the format is told by the file's first bytes, not its name.
 * Gray, gray+alpha, palette and 16-bit PNGs become 8-bit RGB; alpha is
 * composited over white (transparent web images are drawn for white
 * pages).  JPEG: gray and YCbCr become RGB; CMYK is refused.  A truncated or
 * corrupt file is an error, also where libjpeg would only warn and fill the
 * rest with gray.
 *
 * Resampling (wf_image_fit): the short side is scaled to the target and the
 * long side centre-cropped (CLIP's preprocessing: the aspect ratio is kept;
 * nothing is padded).  Each output pixel is the exact area average of the
 * source pixels its footprint covers ("area" / box resampling): for the
 * large reductions photos need it does not alias, where bilinear sampling of
 * 2 x 2 neighbours would skip most source pixels; for enlargement it is the
 * nearest source pixel blended at the edges. */
#ifndef WEFT_IMAGE_H
#define WEFT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int width, height;
    uint8_t *rgb; /* height * width * 3, row-major */
} wf_image;

/* Decodes path; on failure err says why (without the path). */
int wf_image_read(const char *path, wf_image *img, char *err, size_t errlen);
void wf_image_free(wf_image *img);

/* Scales src to out_h x out_w (short side, then centre crop) into out
 * (out_h * out_w * 3 bytes). */
void wf_image_fit(const wf_image *src, int out_h, int out_w, uint8_t *out);

#endif
