/* pages.c — the backend's large arrays straight from the kernel (see pages.h). */
#include "backend/memory/pages.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Rounded up to whole pages, as the kernel maps them. */
static size_t mapped_size(size_t size) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (size + page - 1) & ~(page - 1);
}

void *rl__mem_pages_alloc(size_t size) {
    if (size < RL_MEM_PAGES_MIN_BYTES) return calloc(1, size);
    size = mapped_size(size);
    size_t align = size >= RL_MEM_PAGES_HUGE_BYTES ? RL_MEM_PAGES_HUGE_BYTES : 0;
    /* Room to start on the boundary, the rest unmapped again. */
    char *mapped = mmap(NULL, size + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) return NULL;
    if (align == 0) return mapped;
    char *pages = (char *)(((uintptr_t)mapped + align - 1) & ~(uintptr_t)(align - 1));
    if (pages > mapped) munmap(mapped, (size_t)(pages - mapped));
    munmap(pages + size, (size_t)(mapped + align - pages));
    return pages; /* the kernel's pages are zeroed */
}

void rl__mem_pages_free(void *pages, size_t size) {
    if (pages == NULL) return;
    if (size < RL_MEM_PAGES_MIN_BYTES) free(pages);
    else munmap(pages, mapped_size(size));
}
