#include "fbs_malloc.h"

#include <malloc.h>
#include <mimalloc.h>

// mimalloc is linked into release builds of fbsessiond only (Package.swift); every other build (tests, the
// sanitizer builds) runs on glibc. Weak references let this file link either way: they are null without mimalloc.
#pragma weak mi_is_in_heap_region
#pragma weak mi_option_set
#pragma weak mi_option_enable

int fbs_allocator_is_mimalloc(void) {
    if (mi_is_in_heap_region == NULL) {
        return 0;
    }
    // Linked is not enough: malloc must resolve to mimalloc's (it comes before libc in the load order).
    void *probe = malloc(16);
    int served = mi_is_in_heap_region(probe) ? 1 : 0;
    free(probe);
    return served;
}

void fbs_mimalloc_configure(void) {
    if (mi_option_set == NULL || mi_option_enable == NULL) {
        return;
    }
    mi_option_set(mi_option_decommit_delay, 0);
    mi_option_set(mi_option_segment_decommit_delay, 0);
    mi_option_enable(mi_option_abandoned_page_decommit);
    mi_option_enable(mi_option_page_reset);
}

int fbs_malloc_set_arena_max(int count) {
    return mallopt(M_ARENA_MAX, count);
}

int fbs_malloc_trim(void) {
    return malloc_trim(0);
}

size_t fbs_malloc_free_bytes(void) {
    return mallinfo2().fordblks;
}
