/* datagen.h: writing token files in the llm.c / nanoGPT .bin format
 * (see runtime/common/data.h for the layout), from text or from a synthetic
 * language whose entropy rate is known exactly.
 *
 * Every writer is atomic: the data goes to "<path>.tmp.<pid>", is flushed and
 * fsync'ed, then renamed over path.  On any failure the temporary is removed
 * and an existing file at path is left untouched.
 *
 * Errors are never printed: functions return 0 on success and -1 on failure,
 * with a one-line message in err (err may be NULL or errlen 0).
 */
#ifndef WEFT_DATAGEN_H
#define WEFT_DATAGEN_H

#include <stddef.h>
#include <stdint.h>

/* Writes n tokens (1 <= n <= 2^31 - 1). */
int wf_write_bin(const char *path, const uint16_t *tok, long n,
                 char *err, size_t errlen);

/* Byte-level tokenization: each byte of in_path (0..255) is one token, so the
 * vocab is 256.  The input must not be empty.  *n_out (may be NULL) receives
 * the number of tokens written. */
int wf_data_text(const char *in_path, const char *out_path, long *n_out,
                 char *err, size_t errlen);

/* A first-order Markov chain over vocab tokens in which every token t has
 * exactly `branch` distinct successors, each taken with probability 1/branch.
 * Successor 0 of t is always (t + 1) mod vocab, so the chain is irreducible
 * and every token occurs in a long enough sequence; the others are chosen
 * pseudo-randomly from the seed.  The entropy rate is exactly ln(branch) nats
 * per token, written to *entropy_floor_nats (may be NULL).  The output is a
 * pure function of (n_tokens, vocab, branch, seed).
 * Requires 2 <= vocab <= 65536, 1 <= branch <= vocab, 2 <= n_tokens <= 2^31-1. */
int wf_data_synth(const char *out_path, long n_tokens, int vocab, int branch,
                  uint64_t seed, double *entropy_floor_nats,
                  char *err, size_t errlen);

/* Successor k (0 <= k < branch) of token t in the chain wf_data_synth uses
 * for (vocab, seed); exposed for tests and tools. */
int wf_synth_successor(int vocab, uint64_t seed, int t, int k);

#endif
