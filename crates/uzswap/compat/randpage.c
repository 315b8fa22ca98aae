/* uzswap compat `randpage`: random page access, the pattern of a program
 * made of small objects. Maps BYTES of private anonymous memory, fills
 * every page (a third random bytes, the rest text: about 2.5:1 with LZO),
 * then makes ACCESSES accesses to random pages, alternately reading a word
 * and adding one to it, and checks every page at the end. Each access is
 * timed: those of 1 us or more are page faults (a cache or TLB miss takes
 * well under that), and their latency percentiles go to stderr as
 *   randpage: faults N p50_us X p99_us Y
 * stdout gets the checksum, the same under any pager.
 * Usage: randpage BYTES ACCESSES */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define PAGE 4096
/* Latency histogram: 0.25 us buckets up to 1 ms, then one overflow bucket. */
#define BUCKET_NS 250
#define BUCKETS 4001

static uint64_t rng = 0x757A7377617050ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void fill(unsigned char *page, uint64_t n)
{
    static const char text[] = "the quick brown fox jumps over the lazy dog; ";
    uint64_t x = (n + 1) * 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < PAGE / 3; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(page + i, &x, 8);
    }
    for (int i = PAGE / 3; i < PAGE; i++)
        page[i] = (unsigned char)text[(i + n) % (sizeof text - 1)];
    memcpy(page, &n, sizeof n);
}

static double percentile(const uint64_t *hist, uint64_t total, double q)
{
    uint64_t want = (uint64_t)(q * (double)total), seen = 0;
    for (int b = 0; b < BUCKETS; b++) {
        seen += hist[b];
        if (seen > want)
            return (double)(b * BUCKET_NS + BUCKET_NS / 2) / 1000.0;
    }
    return (double)(BUCKETS * BUCKET_NS) / 1000.0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: randpage BYTES ACCESSES\n");
        return 2;
    }
    size_t bytes = strtoull(argv[1], NULL, 10) / PAGE * PAGE;
    uint64_t accesses = strtoull(argv[2], NULL, 10);
    size_t pages = bytes / PAGE;
    if (pages == 0) {
        fprintf(stderr, "randpage: BYTES below a page\n");
        return 2;
    }
    unsigned char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint32_t *added = calloc(pages, sizeof *added);
    static uint64_t hist[BUCKETS];
    if (p == MAP_FAILED || !added) {
        fprintf(stderr, "randpage: out of memory: %s\n", strerror(errno));
        return 1;
    }
    for (size_t n = 0; n < pages; n++)
        fill(p + n * PAGE, n);
    uint64_t sum = 0, faults = 0;
    for (uint64_t i = 0; i < accesses; i++) {
        size_t n = next() % pages;
        volatile uint64_t *w = (volatile uint64_t *)(p + n * PAGE + 8 * (1 + i % 500));
        uint64_t t0 = now_ns();
        if (i & 1) {
            *w += 1;
            added[n]++;
        } else {
            sum += *w;
        }
        uint64_t dt = now_ns() - t0;
        if (dt >= 1000) {
            faults++;
            uint64_t b = dt / BUCKET_NS;
            hist[b < BUCKETS ? b : BUCKETS - 1]++;
        }
    }
    /* Every page: its number where it was put, the additions it got. */
    unsigned char want[PAGE];
    for (size_t n = 0; n < pages; n++) {
        uint64_t first;
        memcpy(&first, p + n * PAGE, sizeof first);
        if (first != n) {
            printf("randpage: page %zu holds %llu\n", n, (unsigned long long)first);
            return 1;
        }
        fill(want, n);
        uint64_t extra = 0;
        for (int k = 0; k < PAGE; k += 8) {
            uint64_t a, b;
            memcpy(&a, p + n * PAGE + k, 8);
            memcpy(&b, want + k, 8);
            extra += a - b;
        }
        if (extra != added[n]) {
            printf("randpage: page %zu has %llu additions, want %u\n", n,
                   (unsigned long long)extra, added[n]);
            return 1;
        }
        sum += extra;
    }
    printf("randpage: %zu pages, %llu accesses, checksum %llu, ok\n", pages,
           (unsigned long long)accesses, (unsigned long long)sum);
    fprintf(stderr, "randpage: faults %llu p50_us %.2f p99_us %.2f\n", (unsigned long long)faults,
            percentile(hist, faults, 0.50), percentile(hist, faults, 0.99));
    return 0;
}
