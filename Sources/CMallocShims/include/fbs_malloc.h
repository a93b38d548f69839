// glibc allocator controls that Swift cannot reach: <malloc.h> is not part of Swift's Glibc module.
// Every name starts with `fbs_`. Only the HTTPServer module imports this header (ProcessMemory.swift).

#ifndef FBS_MALLOC_H
#define FBS_MALLOC_H

#include <stddef.h>

/// `mallopt(M_ARENA_MAX, count)`; returns 1 on success, 0 on failure.
int fbs_malloc_set_arena_max(int count);

/// `malloc_trim(0)`: gives the free pages of every arena back to the system; returns 1 if any memory was released.
int fbs_malloc_trim(void);

/// `mallinfo2().fordblks`: bytes free inside the arenas (given back or not).
size_t fbs_malloc_free_bytes(void);

#endif
