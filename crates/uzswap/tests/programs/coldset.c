/* A service with a small hot set: maps MB mebibytes, fills every page
 * with a pattern of its own, then keeps touching only its first mebibyte
 * (reads and writes) while the rest lies cold, until its resident set has
 * fallen under half of what it wrote (uzswap found a limit under it) or
 * TIMEOUT seconds pass. Then it checks every page.
 *   coldset: ok rss_kb N  -- the resident set fell, every byte read back
 *   coldset: rss stayed   -- it never fell (exit 1)
 *   coldset: bad page N   -- a page read back wrong (exit 2)
 * Usage: coldset MB TIMEOUT */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096

static long rss_kb(void)
{
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: coldset MB TIMEOUT\n");
        return 64;
    }
    size_t pages = (size_t)atol(argv[1]) * 256;
    double timeout = atof(argv[2]);
    unsigned char *buf = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        perror("mmap");
        return 70;
    }
    for (size_t p = 0; p < pages; p++)
        for (size_t i = 0; i < PAGE; i += 64)
            buf[p * PAGE + i] = (unsigned char)(p * 31 + i / 64);
    long written_kb = (long)(pages * PAGE / 1024);
    double start = now_s();
    long rss = rss_kb();
    unsigned long sum = 0;
    while (rss > written_kb / 2 && now_s() - start < timeout) {
        /* The hot mebibyte: read it all, write one byte a page back as
         * it was. */
        for (size_t p = 0; p < 256 && p < pages; p++) {
            for (size_t i = 0; i < PAGE; i += 64)
                sum += buf[p * PAGE + i];
            buf[p * PAGE] = (unsigned char)(p * 31);
        }
        usleep(2000);
        rss = rss_kb();
    }
    for (size_t p = 0; p < pages; p++)
        for (size_t i = 0; i < PAGE; i += 64)
            if (buf[p * PAGE + i] != (unsigned char)(p * 31 + i / 64)) {
                printf("coldset: bad page %zu\n", p);
                return 2;
            }
    if (rss > written_kb / 2) {
        printf("coldset: rss stayed %ld of %ld kB (%lu)\n", rss, written_kb, sum & 1);
        return 1;
    }
    printf("coldset: ok rss_kb %ld of %ld (%lu)\n", rss, written_kb, sum & 1);
    return 0;
}
