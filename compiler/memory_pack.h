/* memory_pack.h: placing buffers with known live intervals in one region
 * (memory_pack.c): first-fit by decreasing size. */
#ifndef WEFT_MEMORY_PACK_H
#define WEFT_MEMORY_PACK_H

/* every arena buffer starts on a 64-byte line: sizes round up to 16 floats */
static inline long align16(long n) { return (n + 15) & ~15L; }

typedef struct {
    int begin, end;  /* live interval, both ends included */
    long size;       /* floats (already aligned) */
    long offset;     /* set by pack_first_fit */
} pack_item;

/* Gives every item the lowest offset at which it overlaps no item live at
 * the same time, largest first; returns the region's size (0 for none). */
long pack_first_fit(pack_item *items, int n);

/* The same, with in-place ops (memory_inplace.c): an in-place op's output
 * (an exact item: its interval ends at its last reader) shares the place
 * of an exact input item that dies where the output is written; tick[i]
 * is op i's forward tick on the items' clock.  Sets the outputs' alias. */
struct Program;
long memory_pack_in_place(struct Program *p, pack_item *items, const int *kind, const int *id, const char *exact,
                          int n, const int *tick);

#endif
