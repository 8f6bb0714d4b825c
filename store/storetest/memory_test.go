package storetest_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

func TestMemoryContract(t *testing.T) {
	storetest.RunContract(t, func(t *testing.T) store.Store { return storetest.NewMemory() })
}

func TestMemoryQueryUnsupported(t *testing.T) {
	m := storetest.NewMemory()
	_, err := m.Query(context.Background(), "SELECT count() FROM runs")
	if !errors.Is(err, storetest.ErrSQLUnsupported) {
		t.Fatalf("err = %v; want ErrSQLUnsupported", err)
	}
}

func TestMemoryConcurrentWrites(t *testing.T) {
	m := storetest.NewMemory()
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := storetest.NewFixture("req-c", storetest.T0())
			if err := f.Insert(ctx, m); err != nil {
				t.Error(err)
			}
			if _, err := m.ListTraces(ctx, store.TraceFilter{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if c := m.Counts(); c.Requests != 1 || c.Runs != 3 || c.Steps != 4 || c.Scores != 2 {
		t.Fatalf("counts after 8 identical concurrent writes = %+v; want 1/3/4/2", c)
	}
}
