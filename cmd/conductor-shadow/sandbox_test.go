package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
)

// Without the sandbox's binary the start logs why code graders are refused,
// and /readyz notes it while staying ready.
func TestCodeSandboxRefusalIsLoggedAndNoted(t *testing.T) {
	var logs bytes.Buffer
	cfg := platform.NewDefaultConfig()
	cfg.Suite.Code.Bwrap = "no-such-bwrap-binary"
	s := &server{cfg: cfg, log: slog.New(slog.NewTextHandler(&logs, nil))}
	s.checkCodeSandbox(context.Background())
	if !strings.Contains(logs.String(), "code graders refused") || !strings.Contains(logs.String(), "no-such-bwrap-binary") {
		t.Errorf("start log: %s", logs.String())
	}
	r := gin.New()
	r.GET("/readyz", s.readyz)
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	var body readiness
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusOK || body.Detail["code_grader"] != readyCodeRefused {
		t.Errorf("readyz %d %+v", rec.Code, body)
	}
}
