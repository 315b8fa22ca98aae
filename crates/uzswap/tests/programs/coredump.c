/* Fills MIB MiB (argv[1], default 64) with pages that tell themselves
 * apart (even pages compressible, odd ones not), prints the buffer's
 * address and size, then aborts: its core file must hold every page as
 * written, the swapped-out ones included. The test computes the same
 * pattern (word_at) and reads the core file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t word_at(uint64_t i)
{
    uint64_t page = i / 512;
    if (page % 2 == 0)
        return 0xC0DEC0DE00000000ull ^ page;
    return (i + 1) * 0x9E3779B97F4A7C15ull;
}

int main(int argc, char **argv)
{
    size_t bytes = (size_t)(argc > 1 ? atol(argv[1]) : 64) << 20;
    uint64_t *buf = malloc(bytes);
    if (!buf)
        return 2;
    for (size_t i = 0; i < bytes / 8; i++)
        buf[i] = word_at(i);
    printf("buffer %lx %zu\n", (unsigned long)(uintptr_t)buf, bytes);
    fflush(stdout);
    abort();
}
