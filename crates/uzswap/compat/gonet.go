// A Go service in one statically linked process (CGO_ENABLED=0): records
// held in the heap, served over HTTP on loopback (net/http, its epoll
// loop and goroutines) to eight clients that fetch and hash 3/32 of them
// each, scattered.
// Prints the hash of what they got.
package main

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
)

func main() {
	mb := 256
	if len(os.Args) > 1 {
		mb, _ = strconv.Atoi(os.Args[1])
	}
	// Records held in the heap: the server's data.
	n := mb << 20 / 4096
	recs := make([][]byte, n)
	for i := range recs {
		b := make([]byte, 4096)
		for j := range b {
			b[j] = byte(i*7 + j*13)
		}
		recs[i] = b
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/r/", func(w http.ResponseWriter, r *http.Request) {
		i, _ := strconv.Atoi(r.URL.Path[3:])
		w.Write(recs[i%n])
	})
	go http.Serve(ln, mux)
	url := "http://" + ln.Addr().String() + "/r/"
	var wg sync.WaitGroup
	sums := make([][32]byte, 8)
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			h := sha256.New()
			for k := 0; k < n*3/32; k++ {
				i := (k*7919 + c*104729) % n
				resp, err := http.Get(url + strconv.Itoa(i))
				if err != nil {
					panic(err)
				}
				io.Copy(h, resp.Body)
				resp.Body.Close()
			}
			copy(sums[c][:], h.Sum(nil))
		}(c)
	}
	wg.Wait()
	all := sha256.New()
	for _, s := range sums {
		all.Write(s[:])
	}
	fmt.Printf("%x\n", all.Sum(nil))
}
