package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// storeWithoutEraser is a store.Store without the store.SubjectEraser role (a
// store that cannot delete by subject). The handler must not call any of its
// methods: the embedded nil Store would panic.
type storeWithoutEraser struct{ store.Store }

// POST /api/forget over a store without store.SubjectEraser answers 501 naming
// the role; nothing pretends to have deleted.
func TestForgetNamesTheMissingRole(t *testing.T) {
	gin.SetMode(gin.TestMode)
	a := &api{forget: newForgetter(store.NewRoles(storeWithoutEraser{}).SubjectEraser, []byte("pii-secret"), 0)}
	r := gin.New()
	r.POST("/api/forget", a.forgetHandler)
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/forget", strings.NewReader(`{"subject":"ada"}`)))
	var body struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	if rec.Code != http.StatusNotImplemented || !strings.Contains(body.Error, "store.SubjectEraser") {
		t.Errorf("answered %d %q; want 501 naming store.SubjectEraser", rec.Code, body.Error)
	}
}
