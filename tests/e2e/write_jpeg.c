/* write_jpeg.c: writes a solid-colour JPEG with libjpeg, for tests/e2e/vlm_data.sh
 * (the machine has no JPEG encoder tool).
 * usage: write_jpeg OUT WIDTH HEIGHT R G B   (colour)
 *        write_jpeg OUT WIDTH HEIGHT V       (grayscale)  -- quality 95 */
#include <stdio.h>
#include <stdlib.h>

#include <jpeglib.h>

int main(int argc, char **argv)
{
    if (argc != 5 && argc != 7) {
        fprintf(stderr, "usage: write_jpeg OUT WIDTH HEIGHT R G B | V\n");
        return 2;
    }
    int w = atoi(argv[2]), h = atoi(argv[3]), ch = argc == 7 ? 3 : 1;
    FILE *f = fopen(argv[1], "wb");
    if (!f || w < 1 || h < 1) {
        perror(argv[1]);
        return 1;
    }
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    jpeg_stdio_dest(&c, f);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = ch;
    c.in_color_space = ch == 3 ? JCS_RGB : JCS_GRAYSCALE;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 95, TRUE);
    jpeg_start_compress(&c, TRUE);
    JSAMPLE *row = malloc((size_t)w * ch);
    for (int x = 0; x < w; x++)
        for (int k = 0; k < ch; k++)
            row[x * ch + k] = (JSAMPLE)atoi(argv[4 + k]);
    while (c.next_scanline < c.image_height)
        jpeg_write_scanlines(&c, &row, 1);
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    free(row);
    return fclose(f) != 0;
}
