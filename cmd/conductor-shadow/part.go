package main

import (
	"context"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"
)

// part is one long-running piece of `serve`, after the OpenTelemetry
// Collector's component.Component: the server starts its parts once, in the
// order of the role's list (parts.go), handing each the host; it shuts them
// down in reverse order within one deadline. Shutdown is safe without Start
// and twice; a part built but never started releases what it holds.
type part interface {
	Start(ctx context.Context, h *host) error
	Shutdown(ctx context.Context) error
}

// host is what the server hands every part at Start: the router the part
// mounts its routes on. The listener (the last part) serves it once every
// earlier part has started.
type host struct {
	router  *gin.Engine      // every route
	guarded *gin.RouterGroup // the routes behind the API bearer token
	// front, when set (the mirroring proxy), wraps the router: production
	// calls pass through it before the router's middleware.
	front func(http.Handler) http.Handler
}

// namedPart is a part with the name its errors carry.
type namedPart struct {
	name string
	part
}

// lifecycle is what most parts already are: Start(ctx) and Shutdown(ctx)
// (ingest's queues, processor, admission and proxy; the scheduler).
type lifecycle interface {
	Start(ctx context.Context) error
	Shutdown(ctx context.Context) error
}

// hostless is a lifecycle that needs nothing of the host.
type hostless struct{ lifecycle }

func (p hostless) Start(ctx context.Context, _ *host) error { return p.lifecycle.Start(ctx) }

// partFuncs is a part made of two functions, either nil; stop runs at most
// once.
type partFuncs struct {
	start func(ctx context.Context, h *host) error
	stop  func(ctx context.Context) error
	once  *sync.Once
}

// funcs returns the part of start and stop.
func funcs(start func(ctx context.Context, h *host) error, stop func(ctx context.Context) error) partFuncs {
	return partFuncs{start: start, stop: stop, once: &sync.Once{}}
}

func (p partFuncs) Start(ctx context.Context, h *host) error {
	if p.start == nil {
		return nil
	}
	return p.start(ctx, h)
}

func (p partFuncs) Shutdown(ctx context.Context) error {
	var err error
	p.once.Do(func() {
		if p.stop != nil {
			err = p.stop(ctx)
		}
	})
	return err
}

// routes is a part that only mounts routes.
func routes(mount func(h *host) error) partFuncs {
	return funcs(func(_ context.Context, h *host) error { return mount(h) }, nil)
}
