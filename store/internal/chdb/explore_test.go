package chdb

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestExplore(t *testing.T) {
	f := os.Getenv("EXPLORE")
	if f == "" {
		t.Skip()
	}
	data, _ := os.ReadFile(f)
	r, err := Open("/tmp/i10/data")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, q := range strings.Split(string(data), "\n----\n") {
		q = strings.TrimSpace(q)
		if q == "" {
			continue
		}
		out, err := r.Query(q, "TabSeparatedRaw")
		fmt.Printf("=== %s\n", q)
		if err != nil {
			fmt.Printf("ERR: %.400s\n", err)
		} else {
			fmt.Printf("%.1500s\n", out)
		}
	}
}
