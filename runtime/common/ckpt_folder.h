/* ckpt_folder.h: checkpoint folders that never destroy what Weft did not
 * write.
 *
 * A checkpoint is a flat folder holding the marker file WF_CKPT_MARKER
 * (written first, removed last); a folder of periodic checkpoints (--ckpt
 * with a keep count) holds WF_CKPT_SET_MARKER and step_NNNNNNNN checkpoints.
 * A save writes DIR.tmp-PID, then swaps it with DIR (renameat2's exchange,
 * or DIR -> DIR.old-PID, tmp -> DIR where the file system cannot exchange)
 * and only then removes the old one.  Only folders holding the marker (or
 * empty ones) are ever replaced or removed, file by file, never recursively.
 *
 * Functions return 0 on success, -1 with a one-line message in err. */
#ifndef WEFT_CKPT_FOLDER_H
#define WEFT_CKPT_FOLDER_H

#include <stddef.h>

#define WF_CKPT_MARKER ".weft-checkpoint"
#define WF_CKPT_SET_MARKER ".weft-checkpoints"

/* snprintf into out that fails (naming the path's start) instead of
 * truncating. */
int wf_path_fmt(char *out, size_t n, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

enum { WF_FOLDER_ABSENT, WF_FOLDER_EMPTY, WF_FOLDER_OURS };

/* What is at path: absent, an empty folder, or a folder holding marker;
 * anything else (a file, a symbolic link, someone else's folder) is -1 with
 * a message saying why it will not be replaced. */
int wf_ckpt_folder_kind(const char *path, const char *marker, char *err, size_t errlen);

/* Creates path/marker (fsync'ed). */
int wf_ckpt_mark(const char *path, const char *marker, char *err, size_t errlen);

/* Removes a flat folder holding marker (or an empty one): its regular files,
 * the marker last, then the folder.  Anything else inside (a sub-folder, a
 * FIFO) leaves the folder in place and is -1. */
int wf_ckpt_remove(const char *path, const char *marker, char *err, size_t errlen);

/* Folders that killed saves left next to dir: NAME.tmp-N and NAME.old-N in
 * dir's parent holding WF_CKPT_MARKER (or empty), for NAME = dir's last
 * component, or for every NAME when any_name.  If dir itself is missing, the
 * newest complete NAME.old-N (one with a manifest) is renamed back to dir
 * first.  note(arg, text) is told what was done.  Returns the count removed
 * or -1. */
typedef void (*wf_ckpt_note)(void *arg, const char *text);
int wf_ckpt_clean_stale(const char *dir, int any_name, wf_ckpt_note note, void *arg, char *err,
                        size_t errlen);

/* The newest complete DIR.old-N (verified against its manifest) next to a
 * missing dir, into out: 0, or -1 if there is none. */
int wf_ckpt_find_old(const char *dir, char *out, size_t n);

/* Puts the finished folder tmp in place of dir (which may not exist) and
 * removes the previous one; there is a checkpoint under dir's name at every
 * moment where the file system can exchange two names.  old: the name the
 * previous checkpoint has while it is removed.  fsyncs dir's parent. */
int wf_ckpt_swap(const char *tmp, const char *dir, const char *old, char *err, size_t errlen);

/* Test hook: WEFT_TEST_KILL_IN_SAVE=PHASE kills this process with SIGKILL
 * when a save reaches PHASE ("written", "manifest", "swapped"), so that a
 * test can stop a save between any two of its steps. */
void wf_ckpt_test_kill(const char *phase);

/* fsync of a folder (after renames in it). */
int wf_fsync_dir(const char *path, char *err, size_t errlen);

/* dir's parent folder ("." when it has none) into out. */
int wf_parent_of(const char *dir, char *out, size_t n, char *err, size_t errlen);

#endif
