package web

import (
	"cmp"
	"slices"
	"strings"
)

// A layered drawing of a small DAG (a workflow of up to a few dozen steps),
// after Sugiyama, Tagawa and Toda (1981), "Methods for visual understanding of
// hierarchical system structures": layers by longest path from the sources
// (a step sits one layer right of the deepest step it depends on), a dummy
// node in every layer an edge crosses so that no edge runs through a node,
// crossings reduced by barycenter sweeps, and each edge drawn through its
// dummies as a smooth curve with its own port on each node side, so edges
// into one node do not meet in one point. Nodes of one group (a nested
// workflow) keep a horizontal band of their own, so a frame around them holds
// only them.

// dagNode is one node to lay out: its group ("" for the top level).
type dagNode struct {
	Group string
}

// dagEdge is one dependency, from an earlier node to a later one (node
// positions in the input).
type dagEdge struct {
	From, To int
}

// dagLayout is where layoutDAG put everything, in px: node boxes (top-left
// corner), one SVG path per edge (in the input's order), each group's band
// and the drawing's size.
type dagLayout struct {
	X, Y          []float64
	Layer         []int
	Paths         []string
	Width, Height float64
}

// Layout geometry, px.
const (
	dagDummyH  = 12.0 // the lane a dummy node takes in its layer
	dagSweeps  = 6    // barycenter sweeps (down and up each)
	dagPortPad = 10.0 // distance of the outermost edge port from a node's corner
)

// layoutDAG lays out nodes of size w×h joined by edges (From before To in
// the input's order, as a workflow's steps are), left to right, with gapX
// between layers, gapY between nodes of a layer and pad around it all.
func layoutDAG(nodes []dagNode, edges []dagEdge, w, h, gapX, gapY, pad float64) dagLayout {
	n := len(nodes)
	out := dagLayout{X: make([]float64, n), Y: make([]float64, n), Layer: make([]int, n), Paths: make([]string, len(edges))}
	if n == 0 {
		return out
	}
	// Layers by longest path: the input is in dependency order.
	for _, e := range sortedEdges(edges) {
		out.Layer[e.To] = max(out.Layer[e.To], out.Layer[e.From]+1)
	}
	// Vertices: the nodes, then one dummy per layer an edge crosses.
	type vertex struct {
		layer int
		group string
		dummy bool
		pos   float64 // order within its layer (barycenter)
	}
	vs := make([]vertex, n)
	for i := range nodes {
		vs[i] = vertex{layer: out.Layer[i], group: nodes[i].Group, pos: float64(i)}
	}
	chains := make([][]int, len(edges)) // per edge: from, dummies..., to
	for k, e := range edges {
		chain := []int{e.From}
		g := nodes[e.To].Group
		if nodes[e.From].Group == g {
			g = nodes[e.From].Group
		}
		for l := out.Layer[e.From] + 1; l < out.Layer[e.To]; l++ {
			vs = append(vs, vertex{layer: l, group: g, dummy: true, pos: float64(e.From) + 0.5})
			chain = append(chain, len(vs)-1)
		}
		chains[k] = append(chain, e.To)
	}
	layers := 0
	for _, v := range vs {
		layers = max(layers, v.layer+1)
	}
	preds := make([][]int, len(vs))
	succs := make([][]int, len(vs))
	for _, c := range chains {
		for i := 1; i < len(c); i++ {
			preds[c[i]] = append(preds[c[i]], c[i-1])
			succs[c[i-1]] = append(succs[c[i-1]], c[i])
		}
	}
	// Groups in a fixed order: the top level first, then by first node.
	groupRank := map[string]int{"": 0}
	for _, nd := range nodes {
		if _, ok := groupRank[nd.Group]; !ok {
			groupRank[nd.Group] = len(groupRank)
		}
	}
	byLayer := make([][]int, layers)
	for i, v := range vs {
		byLayer[v.layer] = append(byLayer[v.layer], i)
	}
	order := func(l int) {
		slices.SortStableFunc(byLayer[l], func(a, b int) int {
			return cmp.Or(cmp.Compare(groupRank[vs[a].group], groupRank[vs[b].group]), cmp.Compare(vs[a].pos, vs[b].pos))
		})
		for p, i := range byLayer[l] {
			vs[i].pos = float64(p)
		}
	}
	for l := range byLayer {
		order(l)
	}
	bary := func(l int, nb [][]int) {
		for _, i := range byLayer[l] {
			if len(nb[i]) == 0 {
				continue
			}
			var s float64
			for _, j := range nb[i] {
				s += vs[j].pos
			}
			vs[i].pos = s / float64(len(nb[i]))
		}
		order(l)
	}
	for range dagSweeps {
		for l := 1; l < layers; l++ {
			bary(l, preds)
		}
		for l := layers - 2; l >= 0; l-- {
			bary(l, succs)
		}
	}
	// Heights: each group a band as tall as its tallest layer.
	height := func(i int) float64 {
		if vs[i].dummy {
			return dagDummyH
		}
		return h
	}
	// stackH is, per group, the height of a layer's vertices stacked with gapY between.
	stackH := func(ids []int) []float64 {
		sum := make([]float64, len(groupRank))
		for _, i := range ids {
			g := groupRank[vs[i].group]
			if sum[g] > 0 {
				sum[g] += gapY
			}
			sum[g] += height(i)
		}
		return sum
	}
	bandH := make([]float64, len(groupRank))
	for _, l := range byLayer {
		sum := stackH(l)
		for g := range sum {
			bandH[g] = max(bandH[g], sum[g])
		}
	}
	bandY := make([]float64, len(groupRank))
	y := pad
	for g := range bandH {
		bandY[g] = y
		if bandH[g] > 0 {
			y += bandH[g] + 2*gapY
		}
	}
	out.Height = y - 2*gapY + pad
	vx := make([]float64, len(vs))
	vy := make([]float64, len(vs)) // top of each vertex
	for l, ids := range byLayer {
		sum := stackH(ids)
		at := make([]float64, len(groupRank))
		for _, i := range ids {
			g := groupRank[vs[i].group]
			if at[g] > 0 {
				at[g] += gapY
			}
			vy[i] = bandY[g] + (bandH[g]-sum[g])/2 + at[g]
			at[g] += height(i)
			vx[i] = pad + float64(l)*(w+gapX)
		}
	}
	out.Width = pad + float64(layers)*(w+gapX) - gapX + pad
	copy(out.X, vx[:n])
	copy(out.Y, vy[:n])
	// Ports: a node's incoming edges spread down its left side in the order
	// of where they come from, its outgoing edges down its right side.
	inPort := portsOf(n, edges, func(e dagEdge) int { return e.To }, func(e dagEdge) float64 { return vy[e.From] }, vy, h)
	outPort := portsOf(n, edges, func(e dagEdge) int { return e.From }, func(e dagEdge) float64 { return vy[e.To] }, vy, h)
	for k, c := range chains {
		pts := [][2]float64{{vx[c[0]] + w, outPort[k]}}
		for _, d := range c[1 : len(c)-1] {
			mid := vy[d] + dagDummyH/2
			pts = append(pts, [2]float64{vx[d], mid}, [2]float64{vx[d] + w, mid})
		}
		pts = append(pts, [2]float64{vx[c[len(c)-1]], inPort[k]})
		out.Paths[k] = smoothPath(pts)
	}
	return out
}

// sortedEdges returns edges by their target (the input's dependency order).
func sortedEdges(edges []dagEdge) []dagEdge {
	s := slices.Clone(edges)
	slices.SortStableFunc(s, func(a, b dagEdge) int { return cmp.Compare(a.To, b.To) })
	return s
}

// portsOf places each edge's end on the side of node(e): the edges of one
// node spread evenly over its height (less dagPortPad at the corners), in the
// order of other(e), the other end's height.
func portsOf(n int, edges []dagEdge, node func(dagEdge) int, other func(dagEdge) float64, top []float64, h float64) []float64 {
	ports := make([]float64, len(edges))
	per := make([][]int, n)
	for k, e := range edges {
		per[node(e)] = append(per[node(e)], k)
	}
	for v, ks := range per {
		slices.SortStableFunc(ks, func(a, b int) int { return cmp.Compare(other(edges[a]), other(edges[b])) })
		for i, k := range ks {
			if len(ks) == 1 {
				ports[k] = top[v] + h/2
				continue
			}
			ports[k] = top[v] + dagPortPad + (h-2*dagPortPad)*float64(i)/float64(len(ks)-1)
		}
	}
	return ports
}

// smoothPath draws pts (left to right) as an SVG path: straight across a
// dummy's lane, cubic curves with horizontal tangents between layers.
func smoothPath(pts [][2]float64) string {
	var b strings.Builder
	b.WriteString("M" + fmtPx(pts[0][0]) + "," + fmtPx(pts[0][1]))
	for i := 1; i < len(pts); i++ {
		a, c := pts[i-1], pts[i]
		if a[1] == c[1] {
			b.WriteString(" L" + fmtPx(c[0]) + "," + fmtPx(c[1]))
			continue
		}
		mid := (a[0] + c[0]) / 2
		b.WriteString(" C" + fmtPx(mid) + "," + fmtPx(a[1]) + " " + fmtPx(mid) + "," + fmtPx(c[1]) + " " + fmtPx(c[0]) + "," + fmtPx(c[1]))
	}
	return b.String()
}
