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

/* The portable table-driven version alone (tests compare the two). */
uint32_t wf_crc32c_portable(uint32_t crc, const void *buf, size_t n);

#endif
