#include "fbs_malloc.h"

#include <malloc.h>

int fbs_malloc_set_arena_max(int count) {
    return mallopt(M_ARENA_MAX, count);
}

int fbs_malloc_trim(void) {
    return malloc_trim(0);
}

size_t fbs_malloc_free_bytes(void) {
    return mallinfo2().fordblks;
}
