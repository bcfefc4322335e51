/* output.h: every file and folder `weft` writes goes through here, so that
 * nothing it did not write is ever replaced or removed.
 *
 * A file (-o FILE of inspect, simulate, data, calibrate, import-deepspeed) is
 * written into a temporary sibling, PATH.tmp-XXXXXX, then synced and renamed
 * over PATH; the folder holding it is synced after the rename.
 *
 * A folder (compile -o DIR) is written into DIR.tmp-XXXXXX with a marker file,
 * .weft-generated, naming the files weft wrote.  An existing DIR is replaced
 * only if it is empty or carries that marker (or is the output of a weft
 * from before the marker: launch.sh and ranks.txt with weft's headers);
 * anything else is refused before any work.  On replacement
 * the folders are swapped in one step (renameat2 RENAME_EXCHANGE where the
 * file system has it), then every entry of the old folder that weft did not
 * write (the user's build/ folder, notes, ...) is moved into the new one; only
 * the files the old marker names (and only names weft writes: stageN.c,
 * launch.sh, ...) are removed, one by one, and the old folder itself only
 * once it is empty.  An entry whose name the new folder already
 * uses stays in the old folder, which is then kept and named.
 *
 * Paths are built with checked lengths: one that does not fit is an error,
 * never truncated.  Errors are written into err (errlen bytes). */
#ifndef WEFT_OUTPUT_H
#define WEFT_OUTPUT_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

#define WF_MARKER ".weft-generated"

/* printf into buf; -1 (and err) when the result needs more than n bytes. */
int wf_path(char *buf, size_t n, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

typedef struct {
    FILE *f;
    char path[PATH_MAX], tmp[PATH_MAX];
} wf_outfile;

/* Opens PATH's temporary sibling for writing ("wb"); mode is the file's
 * permission bits before the umask (0666, or 0777 for a script). */
int wf_outfile_open(wf_outfile *o, const char *path, int mode, char *err, size_t errlen);
/* Flushes, syncs, closes and renames into place, then syncs the folder.
 * On failure the temporary file is removed and PATH is as it was. */
int wf_outfile_commit(wf_outfile *o, char *err, size_t errlen);
/* Closes and removes the temporary file. */
void wf_outfile_abort(wf_outfile *o);

#define WF_OUTDIR_MAX_FILES 256

typedef struct {
    char path[PATH_MAX], tmp[PATH_MAX];
    char *files[WF_OUTDIR_MAX_FILES];  /* names written into tmp */
    int n_files;
} wf_outdir;

/* Checks that DIR may be written (absent, empty or weft's) and makes the
 * temporary sibling.  Nothing is changed when it fails. */
int wf_outdir_begin(wf_outdir *d, const char *path, char *err, size_t errlen);
/* Opens NAME in the temporary folder for writing and records it. */
FILE *wf_outdir_create(wf_outdir *d, const char *name, int mode, char *err, size_t errlen);
/* Writes the marker, syncs, swaps the folder in as above, syncs the parent.
 * A note about anything kept aside goes to stderr. */
int wf_outdir_commit(wf_outdir *d, char *err, size_t errlen);
/* Removes the temporary folder and the files this run wrote into it. */
void wf_outdir_abort(wf_outdir *d);

#endif
