/* crc32c.h: CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the
 * checksum of iSCSI, ext4 and Btrfs: a checkpoint's manifest stores one per
 * tensor and per file. */
#ifndef WEFT_CRC32C_H
#define WEFT_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues crc over n bytes: crc32c(crc32c(0, a, n), b, m) is the checksum
 * of a followed by b; crc32c(0, "123456789", 9) == 0xE3069283. */
uint32_t wf_crc32c(uint32_t crc, const void *buf, size_t n);

/* The checksum of a followed by b from crc_a = wf_crc32c(0, a, na) and
 * crc_b = wf_crc32c(0, b, len_b) alone, without the bytes: a file's checksum
 * from its parts' (safetensors.c computes each tensor's while writing it). */
uint32_t wf_crc32c_combine(uint32_t crc_a, uint32_t crc_b, size_t len_b);

/* The portable table-driven version alone (tests compare the two). */
uint32_t wf_crc32c_portable(uint32_t crc, const void *buf, size_t n);

#endif
