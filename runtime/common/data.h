/* data.h: token data in the nanoGPT / llm.c ".bin" format.
 *
 * Layout: a header of 256 little-endian int32 --
 *   [0] = 20240520 (magic), [1] = 1 (version), [2] = number of tokens n,
 *   the rest zero --
 * followed by exactly n little-endian uint16 tokens.  The file size must be
 * 1024 + 2 * n bytes, no more, no less.
 *
 * Sampling is defined by GLOBAL sample index: sample g of a run with a given
 * seed always reads the same window of seq+1 tokens, whatever the rank, the
 * data-parallel layout, or the order in which samples are drawn.
 *
 * Errors are never printed: functions return 0 on success and -1 on failure,
 * with a one-line message in err (err may be NULL or errlen 0).
 */
#ifndef WEFT_DATA_H
#define WEFT_DATA_H

#include <stddef.h>
#include <stdint.h>

#define WF_DATA_MAGIC 20240520
#define WF_DATA_VERSION 1
#define WF_DATA_HEADER_INTS 256
#define WF_DATA_HEADER_BYTES (WF_DATA_HEADER_INTS * 4)

typedef struct wf_data wf_data;

/* Opens path read-only and validates it: readable regular file (a FIFO,
 * device or directory is refused without waiting on it), at least the
 * 1024-byte header, magic, version, token count > 0, file size exactly
 * 1024 + 2 * count, count >= seq + 1 (one full sample), and every token
 * < vocab (one pass over the file, so a bad file fails here on every rank
 * instead of partway through training).  vocab in 1..65536, seq >= 1.
 * Samples are read with pread: a file that shrinks while training gives an
 * error naming it from wf_data_sample. */
int wf_data_open(wf_data **out, const char *path, int vocab, int seq,
                 char *err, size_t errlen);

/* Number of tokens in the file. */
long wf_data_tokens(const wf_data *d);

/* The seq the file was opened for. */
int wf_data_seq(const wf_data *d);

/* Start of the window of global sample g: a pure function of
 * (seed, g, token count, seq), in [0, count - seq - 1]. */
long wf_data_window(const wf_data *d, uint64_t seed, uint64_t g);

/* Fills inputs[0..seq) = tok[s .. s+seq) and targets[0..seq) =
 * tok[s+1 .. s+seq+1) with s = wf_data_window(d, seed, g).  A token >= vocab
 * is an error naming the file, the token position, its value and the vocab. */
int wf_data_sample(const wf_data *d, uint64_t seed, uint64_t g,
                   int32_t *inputs, int32_t *targets, char *err, size_t errlen);

/* Closes and frees; NULL is allowed. */
void wf_data_close(wf_data *d);

#endif
