// A Go service with a small hot set (`uzswap bench savings` go-service),
// built as Go builds them for containers (CGO_ENABLED=0: statically
// linked, paged from outside): holds N records of 256 bytes, then makes
// LOOKUPS lookups, all but one in 10,000 to the hottest 5%, bumping a
// byte every 1000th; prints a checksum that is the same under any pager.
// Usage: gomem N LOOKUPS
package main

import (
	"fmt"
	"os"
	"strconv"
)

func main() {
	n, err := strconv.Atoi(os.Args[1])
	if err != nil {
		panic(err)
	}
	lookups, err := strconv.Atoi(os.Args[2])
	if err != nil {
		panic(err)
	}
	recs := make([][]byte, n)
	x := uint32(7)
	for i := range recs {
		r := make([]byte, 256)
		for j := 0; j < 256; j += 4 {
			x = x*1664525 + 1013904223
			r[j] = byte('a' + (x>>24)%16)
		}
		recs[i] = r
	}
	hot := n / 20
	sum := 0
	for k := 0; k < lookups; k++ {
		x = x*1664525 + 1013904223
		var i int
		if x%10000 != 0 {
			i = int(x>>8) % hot
		} else {
			i = int(x>>8) % n
		}
		sum += int(recs[i][k%256])
		if k%1000 == 0 {
			recs[i][0]++
		}
	}
	fmt.Println(sum)
}
