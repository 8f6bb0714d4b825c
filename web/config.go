package web

import (
	"errors"
	"fmt"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/store/dataflow"
)

// Config configures the web UI.
type Config struct {
	// BasePath is the URL prefix every page is mounted under, e.g. "/ui"; empty
	// mounts the pages at the router's root. It starts with "/" and has no
	// trailing "/". Links in the pages carry it.
	BasePath string `yaml:"base_path"`
	// Title is the product name shown in the header and in every page title.
	Title string `yaml:"title"`
	// AuthTokenEnv names the environment variable holding the UI's token (see
	// Auth); empty or unset means no token.
	AuthTokenEnv string `yaml:"auth_token_env"`
	// BasicAuthUser and BasicAuthPasswordEnv (the variable holding the password)
	// enable HTTP basic auth when both are set.
	BasicAuthUser        string `yaml:"basic_auth_user"`
	BasicAuthPasswordEnv string `yaml:"basic_auth_password_env"`
	// ShiftSets are the regression-set JSONL files the shift page compares with
	// live traffic; `serve` uses the sets in use (suite.set and the scheduled
	// suites' sets) when empty.
	ShiftSets []string `yaml:"shift_sets"`
	// GatePolicy is the gate policy the overview's live verdicts are read
	// under (its quality, cost, latency, segments and live sections); nil
	// means gate.NewDefaultPolicy(). Not a config key: serve sets it from
	// suite.policy.
	GatePolicy *gate.Policy `yaml:"-"`
	// DataFlows is what the data-flows page says about the configuration:
	// the recipients it names, retention, PII. Not a config key: serve sets
	// it from the whole configuration.
	DataFlows dataflow.Settings `yaml:"-"`
}

// NewDefaultConfig returns the defaults: pages at the root, title
// "conductor-shadow", the token in $CONDUCTOR_SHADOW_WEB_TOKEN, no basic auth.
func NewDefaultConfig() Config {
	return Config{BasePath: "", Title: "conductor-shadow", AuthTokenEnv: "CONDUCTOR_SHADOW_WEB_TOKEN", ShiftSets: []string{}}
}

// Validate reports a bad BasePath (not starting with "/", ending with "/", or
// holding a character other than letters, digits and "/-._~") or an empty Title.
func (c Config) Validate() error {
	var errs []error
	if c.BasePath != "" {
		switch {
		case !strings.HasPrefix(c.BasePath, "/"):
			errs = append(errs, fmt.Errorf("web: base_path %q must start with \"/\"", c.BasePath))
		case strings.HasSuffix(c.BasePath, "/"):
			errs = append(errs, fmt.Errorf("web: base_path %q must not end with \"/\" (use \"\" for the root)", c.BasePath))
		case strings.Contains(c.BasePath, "//"):
			errs = append(errs, fmt.Errorf("web: base_path %q must not contain \"//\"", c.BasePath))
		}
		for _, r := range c.BasePath {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/-._~", r)) {
				errs = append(errs, fmt.Errorf("web: base_path %q holds %q; use letters, digits and /-._~", c.BasePath, r))
				break
			}
		}
	}
	if (c.BasicAuthUser == "") != (c.BasicAuthPasswordEnv == "") {
		errs = append(errs, errors.New("web: basic_auth_user and basic_auth_password_env go together"))
	}
	if strings.TrimSpace(c.Title) == "" {
		errs = append(errs, errors.New("web: title must not be empty"))
	}
	return errors.Join(errs...)
}
