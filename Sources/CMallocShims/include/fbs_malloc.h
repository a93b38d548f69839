// Allocator controls that Swift cannot reach: <malloc.h> is not part of Swift's Glibc module, and mimalloc's
// options are C calls. Every name starts with `fbs_`. Only the HTTPServer module imports this header
// (ProcessMemory.swift).

#ifndef FBS_MALLOC_H
#define FBS_MALLOC_H

#include <stddef.h>

/// 1 when mimalloc is linked into the process and serves malloc (release builds of fbsessiond), else 0 (glibc).
int fbs_allocator_is_mimalloc(void);

/// mimalloc only: gives freed pages back to the system at once instead of after a delay, so that the resident
/// size after a burst of load stays near glibc's with its trimming. Does nothing under glibc.
void fbs_mimalloc_configure(void);

/// `mallopt(M_ARENA_MAX, count)`; returns 1 on success, 0 on failure.
int fbs_malloc_set_arena_max(int count);

/// `malloc_trim(0)`: gives the free pages of every arena back to the system; returns 1 if any memory was released.
int fbs_malloc_trim(void);

/// `mallinfo2().fordblks`: bytes free inside the arenas (given back or not).
size_t fbs_malloc_free_bytes(void);

#endif
