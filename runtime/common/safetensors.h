/* safetensors.h: fp32 checkpoints in the safetensors format.
 *
 * Layout: an 8-byte little-endian header length N, then N bytes of JSON
 *   {"__metadata__": {"key": "value", ...},
 *    "name": {"dtype": "F32", "shape": [d0, ...], "data_offsets": [begin, end]},
 *    ...}
 * then the raw little-endian tensor data; offsets are relative to the start of
 * the data section (byte 8 + N).  The writer lays tensors out in the order it
 * is given them and pads the JSON with spaces so the data starts 8-byte
 * aligned.  Only F32 is supported.
 *
 * Errors are never printed: functions return 0 on success and -1 on failure,
 * with a one-line message in err (err may be NULL or errlen 0).
 */
#ifndef WEFT_SAFETENSORS_H
#define WEFT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define WF_ST_MAX_NDIM 4       /* what the writer takes */
#define WF_ST_FILE_MAX_NDIM 8  /* what a file read may hold */

typedef struct {
    const char *name;
    int ndim;               /* 0..4; 0 is a scalar (one element) */
    long shape[WF_ST_MAX_NDIM];
    const float *data;      /* numel floats; may be NULL only if numel == 0 */
} wf_st_tensor;

/* Writes n tensors and n_meta metadata pairs (meta_kv[2i] = key,
 * meta_kv[2i+1] = value; meta_kv may be NULL when n_meta == 0).  Atomic: the
 * file is written to "<path>.tmp.<pid>" in the same directory, flushed,
 * fsync'ed and renamed over path; on any failure the temporary is removed and
 * a previous file at path is left byte-identical.  Names must be non-empty,
 * distinct, and not "__metadata__". */
int wf_st_write(const char *path, const wf_st_tensor *t, int n,
                const char *const *meta_kv, int n_meta, char *err, size_t errlen);

/* wf_st_write's checksums of what it wrote (CRC-32C, crc32c.h), computed
 * as it writes: the whole file's and its size, and each tensor's data bytes
 * as stored, in the order given (tensor_crc: the caller's array of n). */
typedef struct {
    uint32_t crc;
    long bytes;
    uint32_t *tensor_crc;
} wf_st_sums;
int wf_st_write_sums(const char *path, const wf_st_tensor *t, int n, const char *const *meta_kv,
                     int n_meta, wf_st_sums *sums, char *err, size_t errlen);

/* A file written tensor by tensor, so that no caller holds them all: open
 * with the whole list (names and shapes; data unused), which writes the
 * header to "<path>.tmp.<pid>"; then the tensors' values in list order, in
 * pieces of any size (a piece may span tensors); finish checks that every
 * byte came, fsyncs and renames over path, and (sums non-NULL, opened with
 * sums) gives wf_st_write_sums' checksums.  The bytes are wf_st_write's for
 * the same list.  A failed open or finish leaves no writer and no
 * temporary; after a failed put the caller aborts, which drops an
 * unfinished writer and its temporary (any previous file at path is never
 * touched before the rename). */
typedef struct wf_st_writer wf_st_writer;
int wf_st_writer_open(wf_st_writer **w, const char *path, const wf_st_tensor *t, int n,
                      const char *const *meta_kv, int n_meta, int sums, char *err, size_t errlen);
int wf_st_writer_floats(wf_st_writer *w, const float *x, long n, char *err, size_t errlen);
/* bytes as a file holds them (little-endian floats), e.g. another file's */
int wf_st_writer_bytes(wf_st_writer *w, const void *le, size_t n, char *err, size_t errlen);
int wf_st_writer_finish(wf_st_writer *w, wf_st_sums *sums, char *err, size_t errlen);
void wf_st_writer_abort(wf_st_writer *w);

typedef struct wf_st_file wf_st_file;

/* Maps path read-only and validates it: header length against the file size,
 * the JSON, dtype F32 only, shapes, offsets inside the data section, offsets
 * consistent with the shapes, distinct names, and tensors that tile the data section exactly
 * (no overlaps, holes or trailing bytes), as the reference implementation
 * requires.  Tensors in a file may have any rank up to 8. */
int wf_st_open(wf_st_file **f, const char *path, char *err, size_t errlen);

/* The metadata value for key, or NULL if absent. */
const char *wf_st_meta(const wf_st_file *f, const char *key);

/* Copies tensor name into dst (numel floats) after checking that it exists
 * and that its shape is exactly shape[0..ndim). */
int wf_st_read(const wf_st_file *f, const char *name, int ndim, const long *shape,
               float *dst, char *err, size_t errlen);

/* Copies elements [lo, hi) of tensor name, in the order the file holds
 * them, into dst (hi - lo floats), after wf_st_read's name and shape checks:
 * a part of a tensor without the whole of it in memory. */
int wf_st_read_range(const wf_st_file *f, const char *name, int ndim, const long *shape, long lo,
                     long hi, float *dst, char *err, size_t errlen);

/* Tensors in data-offset order (for files this module wrote, the order they
 * were written in).  wf_st_name returns NULL for i out of range. */
int wf_st_count(const wf_st_file *f);
const char *wf_st_name(const wf_st_file *f, int i);

/* Rank and shape of tensor name: returns its ndim (shape receives up to
 * max_ndim dims) or -1 if there is no such tensor. */
int wf_st_shape(const wf_st_file *f, const char *name, long *shape, int max_ndim);

/* The raw little-endian bytes of tensor name in the mapped file (*bytes
 * receives their count), or NULL if there is no such tensor.  Valid until
 * wf_st_close. */
const void *wf_st_data(const wf_st_file *f, const char *name, size_t *bytes);

/* Unmaps and frees; NULL is allowed. */
void wf_st_close(wf_st_file *f);

#endif
