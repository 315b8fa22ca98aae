// A Go program as Go builds them for containers (CGO_ENABLED=0: statically
// linked, its heap mapped by raw mmap system calls), which uzswap pages
// from outside. Fills SIZE bytes, hashes them twice, then builds and drops
// maps of small slices (garbage for the collector) while the big buffer
// stays live; prints the hash and the maps' checksum.
// Usage: gomem SIZE
package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"
)

func main() {
	n, err := strconv.Atoi(os.Args[1])
	if err != nil {
		panic(err)
	}
	buf := make([]byte, n)
	x := uint32(12345)
	for i := 0; i+1 < n; i += 8 {
		x = x*1664525 + 1013904223
		buf[i] = byte(x >> 24)
		buf[i+1] = byte(i >> 12)
	}
	h := sha256.New()
	for pass := 0; pass < 2; pass++ {
		for i := 0; i < n; i += 1 << 20 {
			end := i + 1<<20
			if end > n {
				end = n
			}
			h.Write(buf[i:end])
		}
	}
	sum := 0
	for r := 0; r < 20; r++ {
		m := map[int][]byte{}
		for k := 0; k < 20000; k++ {
			v := make([]byte, 256)
			v[0] = byte(k + r)
			v[255] = buf[(k*4099+r)%n]
			m[k] = v
		}
		for k := 0; k < 20000; k += 97 {
			sum += int(m[k][0]) + int(m[k][255])
		}
	}
	fmt.Printf("%x %d\n", h.Sum(nil), sum)
}
