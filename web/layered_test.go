package web

import (
	"regexp"
	"strconv"
	"testing"
)

// pathPoints reads the coordinate pairs of an SVG path of smoothPath.
func pathPoints(t *testing.T, d string) [][2]float64 {
	t.Helper()
	var out [][2]float64
	for _, m := range regexp.MustCompile(`(-?[\d.]+),(-?[\d.]+)`).FindAllStringSubmatch(d, -1) {
		x, err1 := strconv.ParseFloat(m[1], 64)
		y, err2 := strconv.ParseFloat(m[2], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("path %q: bad point %q", d, m[0])
		}
		out = append(out, [2]float64{x, y})
	}
	return out
}

func TestLayoutDAG(t *testing.T) {
	const w, h = 100.0, 40.0
	tests := []struct {
		name   string
		nodes  []dagNode
		edges  []dagEdge
		layers []int
		// long: an edge spanning layers, which must pass no node of a layer it crosses.
		long int
	}{
		{name: "diamond with a skip edge", nodes: make([]dagNode, 4),
			edges:  []dagEdge{{0, 1}, {0, 2}, {1, 3}, {2, 3}, {0, 3}},
			layers: []int{0, 1, 1, 2}, long: 4},
		{name: "a step that sees all", nodes: make([]dagNode, 4),
			edges:  []dagEdge{{0, 1}, {1, 2}, {0, 3}, {1, 3}, {2, 3}},
			layers: []int{0, 1, 2, 3}, long: 2},
		{name: "nested group keeps its band", nodes: []dagNode{{}, {Group: "0/1"}, {Group: "0/1"}, {}},
			edges:  []dagEdge{{0, 1}, {1, 2}, {0, 3}},
			layers: []int{0, 1, 2, 1}, long: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lay := layoutDAG(tc.nodes, tc.edges, w, h, 40, 12, 10)
			for i, l := range tc.layers {
				if lay.Layer[i] != l {
					t.Errorf("node %d in layer %d, want %d", i, lay.Layer[i], l)
				}
			}
			for i := range tc.nodes {
				if lay.X[i]+w > lay.Width || lay.Y[i]+h > lay.Height {
					t.Errorf("node %d at (%v, %v) outside the %v×%v drawing", i, lay.X[i], lay.Y[i], lay.Width, lay.Height)
				}
				for j := i + 1; j < len(tc.nodes); j++ {
					if lay.X[i] < lay.X[j]+w && lay.X[j] < lay.X[i]+w && lay.Y[i] < lay.Y[j]+h && lay.Y[j] < lay.Y[i]+h {
						t.Errorf("nodes %d and %d overlap", i, j)
					}
				}
			}
			// Each edge starts on its source's right side and ends on its
			// target's left side; edges into (out of) one node have ports of their own.
			ends := map[[2]float64]int{}
			starts := map[[2]float64]int{}
			for k, e := range tc.edges {
				pts := pathPoints(t, lay.Paths[k])
				a, b := pts[0], pts[len(pts)-1]
				if a[0] != lay.X[e.From]+w || a[1] < lay.Y[e.From] || a[1] > lay.Y[e.From]+h {
					t.Errorf("edge %v starts at %v, not on node %d's right side", e, a, e.From)
				}
				if b[0] != lay.X[e.To] || b[1] < lay.Y[e.To] || b[1] > lay.Y[e.To]+h {
					t.Errorf("edge %v ends at %v, not on node %d's left side", e, b, e.To)
				}
				if k2, dup := ends[b]; dup {
					t.Errorf("edges %v and %v end in the same point %v", tc.edges[k2], e, b)
				}
				if k2, dup := starts[a]; dup {
					t.Errorf("edges %v and %v start in the same point %v", tc.edges[k2], e, a)
				}
				ends[b], starts[a] = k, k
			}
			if tc.long < 0 {
				return
			}
			// The long edge crosses its middle layers in a lane of its own.
			pts := pathPoints(t, lay.Paths[tc.long])
			for _, p := range pts[1 : len(pts)-1] {
				for i := range tc.nodes {
					if p[0] >= lay.X[i] && p[0] <= lay.X[i]+w && p[1] >= lay.Y[i] && p[1] <= lay.Y[i]+h {
						t.Errorf("edge %v passes through node %d at %v", tc.edges[tc.long], i, p)
					}
				}
			}
		})
	}
}
