package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/ingest/segment"
)

// setsInUse are the regression-set files the configuration runs: the suite's
// default set and every scheduled suite's set.
func setsInUse(cfg platform.Config) []string {
	var out []string
	if cfg.Suite.Set != "" {
		out = append(out, cfg.Suite.Set)
	}
	for _, s := range cfg.Schedules.Suites {
		if s.Set != "" {
			out = append(out, s.Set)
		}
	}
	return out
}

// newSegmenter builds the segmenter of stored requests. Its novelty vocabulary
// holds the words of the regression sets in use (a configured set missing on
// this machine is logged and left out: the suite command reports it when it
// runs) and of ingest.segments.vocabulary_sets (which must match files).
// Without any set, novelty is stored as -1 and a warning says so.
func newSegmenter(cfg platform.Config, log *slog.Logger) (*segment.Segmenter, error) {
	var patterns []string
	for _, p := range setsInUse(cfg) {
		if _, err := os.Stat(p); err != nil {
			log.Warn("segments: regression set left out of the novelty vocabulary", "set", p, "err", err)
			continue
		}
		patterns = append(patterns, p)
	}
	patterns = append(patterns, cfg.Ingest.Segments.VocabularySets...)
	if len(patterns) == 0 {
		log.Warn("segments: no regression set for the novelty vocabulary: novelty is stored as -1")
		return segment.New(nil), nil
	}
	v, err := segment.LoadVocabulary(patterns...)
	if err != nil {
		return nil, fmt.Errorf("segments: %w", err)
	}
	log.Info("segments: novelty vocabulary loaded", "sets", len(v.Sets()), "words", v.Len())
	return segment.New(v), nil
}
